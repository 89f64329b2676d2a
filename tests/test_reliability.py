"""Faults that heal with no one's help (docs/reliability.md).

The faults are real: a worker (``evaluaitor worker``, a separate process with its own
sweeper) grades while this test kills the Redis server it uses and starts it again empty,
SIGKILLs the work horse in the middle of a job as the OOM killer would, locks the SQLite
database, or cuts every PostgreSQL connection. The LMS and the model are the fakes on
127.0.0.1 (they fail on cue). Each test waits, with a generous deadline, for the outcome a
student and a teacher would see: a grade in the gradebook, and nothing done twice.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from redis import Redis
from sqlalchemy import text

from app.evaluation import delivery
from app.extensions import db
from app.jobs.redis_server import EmbeddedRedis
from app.lti import passback
from app.models import GradingJob, JobStatus, PushStatus, ScorePush, Submission
from app.models.assets import PROCESSED, RECEIVED, LtiNotice
from tests import processes
from tests.conftest import POSTGRES_URL, announce_then_grade, run_jobs
from tests.documents import ESSAY
from tests.test_asset_processor import attach_processor
from tests.test_core_loop import GOOD_REPLY, open_activity, status, upload
from tests.test_review import act, essay, teacher

#: Settings the worker process reads from its environment, as the test's app has them.
PASSED_ON = (
    "DATABASE_URL",
    "REDIS_URL",
    "SECRET_KEY",
    "EVALUAITOR_DATA_DIR",
    "EVALUAITOR_KEY_DIR",
    "EVALUAITOR_LLM_CACHE_DIR",
    "EVALUAITOR_LLM_BASE_URL",
    "EVALUAITOR_LLM_MODEL",
    "EVALUAITOR_LLM_MAX_RETRIES",
    "EVALUAITOR_LLM_BACKOFF_BASE",
    "EVALUAITOR_LLM_TIMEOUT",
    "EVALUAITOR_AGS_TIMEOUT",
    "EVALUAITOR_ALLOW_PRIVATE_URLS",
    "EVALUAITOR_QUEUE_PREFIX",
    "EVALUAITOR_PASSBACK_RETRY_INTERVALS",
    "EVALUAITOR_REPORT_RETRY_INTERVALS",
    "EVALUAITOR_LLM_RETRY_SCHEDULE",
    "EVALUAITOR_SWEEP_EVERY",
    "EVALUAITOR_REQUEUE_AFTER",
    "PROMETHEUS_MULTIPROC_DIR",
    "EVALUAITOR_METRICS_TOKEN",
    "EVALUAITOR_WORKER_METRICS_ADDRESS",
    "EVALUAITOR_LOG_FORMAT",
)


class Stack:
    """The test's own Redis server and worker processes, beside the app of this process."""

    def __init__(self, app, redis_server: EmbeddedRedis, folder: Path) -> None:
        self.app, self.redis, self.folder = app, redis_server, folder
        self.workers: list[subprocess.Popen] = []

    def start_worker(self) -> subprocess.Popen:
        env = {key: value for key, value in os.environ.items() if not key.startswith("EVALU")}
        for key in PASSED_ON:
            value = self.app.config.get(key)
            if value is not None:
                env[key] = ",".join(map(str, value)) if isinstance(value, list) else str(value)
        env["EVALUAITOR_INSTANCE_DIR"] = str(self.folder / "instance")
        log = (self.folder / f"worker-{len(self.workers)}.log").open("wb")
        worker = subprocess.Popen(
            [sys.executable, "-m", "app.cli", "worker"],
            env=env,
            cwd=self.folder,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        self.workers.append(worker)
        return worker

    def log(self) -> str:
        return "\n".join(p.read_text(errors="replace") for p in self.folder.glob("worker-*.log"))

    def kill_redis(self) -> None:
        """SIGKILL the Redis server: nothing is saved."""
        assert not processes.kill(processes.find(self.redis.data_dir))
        self.redis.stop()

    def restart_redis_empty(self) -> None:
        """SIGKILL the Redis server and start it again, empty, on its port."""
        self.kill_redis()
        self.redis.start()

    def wait_for(self, what: str, check: Callable[[], object], seconds: float = 60) -> object:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            db.session.expire_all()
            found = check()
            if found:
                return found
            time.sleep(0.2)
        raise AssertionError(f"{what}: not within {seconds} s\n--- worker log ---\n{self.log()}")


@pytest.fixture
def stack(app, tmp_path) -> Iterator[Stack]:
    """Quick sweeps and short retry delays, so that what takes minutes in production takes
    seconds here; everything the test started is ended on the way out."""
    with processes.reaped(tmp_path):
        server = EmbeddedRedis(tmp_path / "redis", persistent=False).start()
        app.config["REDIS_URL"] = server.url
        app.extensions["evaluaitor.redis"] = Redis.from_url(
            server.url, socket_timeout=5, socket_connect_timeout=2
        )
        app.config |= {
            "EVALUAITOR_SWEEP_EVERY": 0.5,
            "EVALUAITOR_REQUEUE_AFTER": 2,
            "EVALUAITOR_PASSBACK_RETRY_INTERVALS": [1, 1, 2, 2, 4, 4, 8],
            "EVALUAITOR_REPORT_RETRY_INTERVALS": [1, 1, 2, 2, 4, 4, 8],
            "EVALUAITOR_LLM_RETRY_SCHEDULE": [1, 1, 1, 1],
        }
        found = Stack(app, server, tmp_path)
        try:
            yield found
        finally:
            for worker in found.workers:
                worker.terminate()
            for worker in found.workers:
                try:
                    worker.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    worker.kill()
            server.stop()


def children(pid: int) -> list[int]:
    """The processes ``pid`` started (RQ's work horse is a fork of the worker)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def scored(platform) -> float | None:
    """The score the gradebook holds for the student (a "submitted" push has none)."""
    return (platform.grade_for("2") or {}).get("scoreGiven")


def job_of() -> GradingJob:
    """The latest submission's grading job."""
    return (
        db.session.query(GradingJob)
        .join(Submission, GradingJob.submission_id == Submission.id)
        .order_by(GradingJob.id.desc())
        .first()
    )


def test_score_pushes_come_back_after_redis_restarts_empty(
    stack, browser, platform, llm, live_tool
):
    """The LMS grade service is down; its retries are due later; Redis then dies and comes
    back empty. The retries are in the database, so the sweeper sends them when due, and
    the grade reaches the gradebook once the LMS answers again."""
    llm.set_default(GOOD_REPLY)
    platform.fail_next("scores", 503, times=4)
    page = open_activity(browser, platform, live_tool)
    stack.start_worker()
    upload(browser, page, "essay.txt", ESSAY.encode())
    stack.wait_for(
        "a failed push waiting for its retry",
        lambda: (
            db.session.query(ScorePush)
            .filter(ScorePush.attempts >= 1, ScorePush.status == PushStatus.PENDING)
            .count()
        ),
    )
    stack.restart_redis_empty()
    stack.wait_for("the grade in the gradebook", lambda: scored(platform))
    assert platform.grade_for("2")["scoreGiven"] == 8
    stack.wait_for(
        "every push sent or overtaken",
        lambda: not db.session.query(ScorePush).filter_by(status=PushStatus.PENDING).count(),
    )
    assert status(browser, page)["status"] == "completed"
    assert platform.grade_for("2")["scoreGiven"] == 8  # the late "submitted" did not undo it


def test_a_busy_model_is_waited_for_and_never_fails_the_submission(
    stack, browser, platform, llm, live_tool
):
    """Eight 429 answers in a row: the student reads "waiting for the grading service", the
    job is graded again on the schedule, and it ends graded, with no one's action."""
    for _ in range(8):
        llm.fail(429, retry_after="0")
    llm.set_default(GOOD_REPLY)
    page = open_activity(browser, platform, live_tool)
    stack.start_worker()
    upload(browser, page, "essay.txt", ESSAY.encode())
    seen: set[str] = set()

    def graded() -> bool:
        seen.add(status(browser, page)["status"])
        return "completed" in seen

    stack.wait_for("the submission graded", graded)
    assert "waiting" in seen and "failed" not in seen
    job = job_of()
    assert job.tries >= 2 and job.status == JobStatus.COMPLETED and job.score == 8
    assert len(llm.requests) == 9  # 8 refusals, then the one answer: nothing graded twice


def test_the_worker_outlives_redis_dying_under_a_running_job(
    stack, browser, platform, llm, live_tool
):
    """Redis dies while a job runs and stays down until the job has ended: RQ's loop quits on
    the error when it records the end. The same worker process starts a new loop once Redis
    is back (empty), and grades the next upload: no supervisor, no person."""
    stack.app.config["EVALUAITOR_LLM_TIMEOUT"] = 10  # the reply is slow, not lost
    llm.delay(2, GOOD_REPLY)
    llm.set_default(GOOD_REPLY)
    page = open_activity(browser, platform, live_tool)
    worker = stack.start_worker()
    upload(browser, page, "essay.txt", ESSAY.encode())
    stack.wait_for("the model asked", lambda: llm.requests)
    stack.kill_redis()
    stack.wait_for("the job ended", lambda: job_of().status == JobStatus.COMPLETED)
    time.sleep(3)  # the worker meets the dead Redis when it records the job's end
    stack.redis.start()
    upload(browser, page, "essay.txt", ESSAY.encode())
    stack.wait_for(
        "the second upload graded",
        lambda: db.session.query(GradingJob).filter_by(status=JobStatus.COMPLETED).count() == 2,
    )
    assert worker.poll() is None
    assert "a new one starts" in stack.log()


def test_a_work_horse_killed_mid_job_is_graded_by_the_next_one(
    stack, browser, platform, llm, live_tool
):
    """The OOM killer ends the process grading a file while it waits for the model. The
    worker records the job as failed; the sweeper hands the row back, and it is graded
    once: one grade in the gradebook, one FullyGraded push."""
    llm.delay(30, GOOD_REPLY)  # the first attempt hangs until it is killed
    llm.set_default(GOOD_REPLY)
    page = open_activity(browser, platform, live_tool)
    worker = stack.start_worker()
    upload(browser, page, "essay.txt", ESSAY.encode())
    stack.wait_for("the model asked", lambda: llm.requests)
    horses = children(worker.pid)
    assert horses, "no work horse found"
    for horse in horses:
        os.kill(horse, signal.SIGKILL)
    stack.wait_for("the grade in the gradebook", lambda: scored(platform))
    job = job_of()
    assert job.status == JobStatus.COMPLETED and job.handbacks == 1
    graded = [s for s in platform.scores if s["gradingProgress"] == "FullyGraded"]
    assert len(graded) == 1 and graded[0]["scoreGiven"] == 8
    assert worker.poll() is None  # the worker itself lives on


def processed(platform, asset) -> bool:
    reports = platform.asset_processor.reports_for(asset["asset_id"])
    return bool(reports) and reports[-1]["processingProgress"] == "Processed"


def test_a_notice_answered_before_redis_restarts_empty_is_graded(stack, platform, llm, live_tool):
    """The LMS was answered 204 and never sends the notice again; Redis then loses the
    queued work. The notice is in the database: the worker's sweeper queues it."""
    llm.set_default(GOOD_REPLY)
    service = platform.asset_processor
    asset = service.add_asset(ESSAY.encode())
    claims = service.notice_claims(activity=attach_processor().public_id, assets=[asset])
    assert service.send(live_tool + "/lti/notices", service.sign(claims)).status_code == 204
    stack.restart_redis_empty()
    stack.start_worker()
    stack.wait_for("the Processed report in the LMS", lambda: processed(platform, asset))
    assert db.session.query(LtiNotice).one().status == PROCESSED
    assert len(llm.requests) == 1


def test_a_notice_arriving_while_redis_is_down_is_stored_answered_and_graded(
    stack, platform, llm, live_tool
):
    """Redis is down when the LMS posts a notice: it is verified (the key set fetched
    without the cache), stored and answered 204; once Redis is back the sweeper queues it."""
    llm.set_default(GOOD_REPLY)
    service = platform.asset_processor
    asset = service.add_asset(ESSAY.encode())
    claims = service.notice_claims(activity=attach_processor().public_id, assets=[asset])
    stack.kill_redis()
    assert service.send(live_tool + "/lti/notices", service.sign(claims)).status_code == 204
    assert db.session.query(LtiNotice).one().status == RECEIVED
    stack.redis.start()
    stack.start_worker()
    stack.wait_for("the Processed report in the LMS", lambda: processed(platform, asset))


def test_a_work_horse_killed_while_downloading_a_notices_asset(stack, platform, llm, live_tool):
    """The process handling a notice dies while the asset downloads: the notice is still
    ``received``, so the sweeper queues it again and the submission is graded once."""
    llm.set_default(GOOD_REPLY)
    platform.slow_down("asset", 30)
    service = platform.asset_processor
    asset = service.add_asset(ESSAY.encode())
    claims = service.notice_claims(activity=attach_processor().public_id, assets=[asset])
    worker = stack.start_worker()
    assert service.send(live_tool + "/lti/notices", service.sign(claims)).status_code == 204
    stack.wait_for(
        "the asset requested",
        lambda: any(e["kind"] == "asset" for e in platform.request_log),
    )
    platform.slow_down("asset", 0)
    for horse in children(worker.pid):
        os.kill(horse, signal.SIGKILL)
    stack.wait_for("the Processed report in the LMS", lambda: processed(platform, asset))
    assert db.session.query(Submission).one().job.status == JobStatus.COMPLETED
    assert len(llm.requests) == 1
    assert db.session.query(LtiNotice).one().attempts == 2


def test_a_long_job_of_a_live_worker_is_left_alone(app, stack, browser, platform, llm, live_tool):
    """A model that takes longer than the sweeper's patience: the worker is alive (RQ's
    heartbeat says so), so its job is not handed to another; the model is asked once."""
    app.config |= {"EVALUAITOR_REQUEUE_AFTER": 1, "EVALUAITOR_LLM_TIMEOUT": 15}
    llm.delay(5, GOOD_REPLY)
    page = open_activity(browser, platform, live_tool)
    stack.start_worker()
    upload(browser, page, "essay.txt", ESSAY.encode())
    assert stack.wait_for("the grade in the gradebook", lambda: scored(platform)) == 8
    job = job_of()
    assert job.handbacks == 0 and len(llm.requests) == 1


@pytest.mark.skipif(bool(POSTGRES_URL), reason="SQLite's own lock; PostgreSQL: see below")
def test_a_job_that_fails_before_claiming_its_row_is_run_again(
    app, stack, browser, platform, llm, live_tool
):
    """The job cannot even read its row ("database is locked" for longer than the busy
    timeout): RQ records it as failed, and the row, still pending, is queued again by the
    sweeper once the database is free."""
    llm.set_default(GOOD_REPLY)
    page = open_activity(browser, platform, live_tool)
    upload(browser, page, "essay.txt", ESSAY.encode())
    path = app.config["DATABASE_URL"].removeprefix("sqlite:///")
    lock = sqlite3.connect(path, timeout=30)
    lock.execute("BEGIN EXCLUSIVE")
    try:
        stack.start_worker()
        stack.wait_for(
            "the job failed in RQ",
            lambda: "database is locked" in stack.log(),
            seconds=40,
        )
    finally:
        lock.rollback()
        lock.close()
    assert stack.wait_for("the grade in the gradebook", lambda: scored(platform)) == 8
    assert job_of().status == JobStatus.COMPLETED


@pytest.mark.skipif(not POSTGRES_URL, reason="needs the PostgreSQL server of the suite")
def test_postgresql_dropping_every_connection_mid_job_is_survived(
    stack, browser, platform, llm, live_tool
):
    """As in a PostgreSQL restart, every connection is cut while a job runs: the job's next
    write fails, the row is handed back once the database answers, and it is graded."""
    llm.delay(3, GOOD_REPLY)
    llm.set_default(GOOD_REPLY)
    page = open_activity(browser, platform, live_tool)
    stack.start_worker()
    upload(browser, page, "essay.txt", ESSAY.encode())
    stack.wait_for("the model asked", lambda: llm.requests)
    db.session.execute(
        text(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
    )
    db.session.commit()
    stack.wait_for("the grade in the gradebook", lambda: scored(platform))
    assert job_of().status == JobStatus.COMPLETED


#: A dozen students, as in the class where two of them lost their grade.
CLASS = [str(n) for n in range(10, 22)]


@pytest.mark.parametrize("lms", ["slow", "failing, then slow"])
def test_every_grade_stays_in_the_gradebook_with_two_workers(
    stack, browser, platform, llm, live_tool, lms
):
    """Two workers, a dozen students, an LMS that takes two seconds to take a score (and,
    in the second case, first refuses the class's "submitted" pushes at once with 503,
    retried a second later): a student's "submitted" and "graded" pushes are in the workers
    at the same time. The gradebook ends with every student's grade, FullyGraded, and no
    push reached it after the grade (Moodle, like the fake, clears the grade of any later
    score that is not FullyGraded). Before pushes kept to their student's lane, the second
    case lost one or two students' grades each run."""
    llm.set_default(GOOD_REPLY)
    platform.slow_down("scores", 2)
    if lms != "slow":
        platform.fail_next("scores", 503, times=len(CLASS))
    for sub in CLASS:
        platform.enrol(sub)
    stack.start_worker()
    stack.start_worker()
    for sub in CLASS:
        page = open_activity(browser, platform, live_tool, user=sub)
        assert upload(browser, page, "essay.txt", essay(sub)).status_code == 303

    def settled() -> bool:
        pushes = db.session.query(ScorePush).all()
        graded = {p.user.sub for p in pushes if p.kind == passback.GRADED}
        return graded == set(CLASS) and all(p.status != PushStatus.PENDING for p in pushes)

    stack.wait_for("every push sent or overtaken", settled, seconds=180)
    lost = [sub for sub in CLASS if (platform.grade_for(sub) or {}).get("scoreGiven") != 8]
    assert not lost, f"{len(lost)} students lost their grade: {lost}"
    for sub in CLASS:
        assert platform.grade_for(sub)["gradingProgress"] == "FullyGraded"
        received = [score for score in platform.scores if score["userId"] == sub]
        assert received[-1]["gradingProgress"] == "FullyGraded", (sub, received)
    assert not db.session.query(ScorePush).filter_by(status=PushStatus.FAILED).count()


# -- in this process: the core's own rules -------------------------------------------------


def test_a_push_that_crashes_unexpectedly_is_retried_not_left_pending(
    browser, platform, llm, live_tool, monkeypatch
):
    """An exception no one expected (a bug, a library's surprise) in a delivery is recorded
    and retried like any failure; the row never stays pending with nothing to run it."""
    llm.reply(GOOD_REPLY)
    real_send = passback.ScoreSender.send
    calls: list[int] = []

    def crash_once(self, push):
        if push.kind == passback.GRADED:
            calls.append(push.id)
            if len(calls) == 1:
                raise KeyError("a surprise")
        return real_send(self, push)

    monkeypatch.setattr(passback.ScoreSender, "send", crash_once)
    page = open_activity(browser, platform, live_tool)
    upload(browser, page, "essay.txt", ESSAY.encode())
    run_jobs()
    push = db.session.query(ScorePush).filter_by(kind=passback.GRADED).one()
    assert push.status == PushStatus.SENT and push.attempts == 2 and push.last_error is None
    assert platform.grade_for("2")["scoreGiven"] == 8


def test_a_retrying_push_can_be_sent_again_by_the_teacher(app, browser, platform, llm, live_tool):
    """A push still retrying (its next attempt is minutes away) shows the resend button, and
    the teacher's click sends it now."""
    app.config["EVALUAITOR_PASSBACK_RETRY_INTERVALS"] = [600]
    llm.reply(GOOD_REPLY)
    platform.fail_next("scores", 503, times=2)
    page = open_activity(browser, platform, live_tool)
    upload(browser, page, "essay.txt", ESSAY.encode())
    announce_then_grade()  # both pushes fail once
    push = db.session.query(ScorePush).filter_by(kind=passback.GRADED).one()
    assert push.status == PushStatus.PENDING and push.attempts == 1 and push.resendable
    staff = teacher(browser, platform, live_tool)
    assert f"pushes/{push.id}/retry" in browser.get(staff).text
    browser.post(f"{staff}pushes/{push.id}/retry")
    run_jobs()
    db.session.expire_all()
    assert db.session.get(ScorePush, push.id).status == PushStatus.SENT
    assert platform.grade_for("2")["scoreGiven"] == 8


def test_grade_again_asks_the_model_afresh(browser, platform, llm, live_tool):
    """A reply without a score sent the submission to review; the teacher's "grade again"
    with unchanged settings calls the model again instead of replaying the cached reply."""
    llm.reply("I cannot tell.")
    llm.reply(GOOD_REPLY)
    page = open_activity(browser, platform, live_tool)
    upload(browser, page, "essay.txt", ESSAY.encode())
    run_jobs()
    submission = db.session.query(Submission).one()
    assert submission.status == JobStatus.NEEDS_REVIEW and len(llm.requests) == 1
    staff = teacher(browser, platform, live_tool)
    assert act(browser, staff, submission, "retry").status_code == 303
    run_jobs()
    db.session.expire_all()
    assert len(llm.requests) == 2
    assert submission.job.status == JobStatus.COMPLETED and submission.job.score == 8


def test_a_resend_during_an_attempt_is_not_undone_by_that_attempt(
    app, browser, platform, llm, live_tool, monkeypatch
):
    """The teacher clicks "send again" while a retry is on its way, and that retry then
    fails: the failure belongs to the older attempt and is not recorded over the resend
    (which would put the push back to waiting ten minutes); the resend goes out now."""
    app.config["EVALUAITOR_PASSBACK_RETRY_INTERVALS"] = [600, 600]
    llm.reply(GOOD_REPLY)
    platform.fail_next("scores", 503, times=2)
    page = open_activity(browser, platform, live_tool)
    upload(browser, page, "essay.txt", ESSAY.encode())
    announce_then_grade()  # both pushes fail once and wait ten minutes
    push = db.session.query(ScorePush).filter_by(kind=passback.GRADED).one()
    staff = teacher(browser, platform, live_tool)
    real_send = passback.ScoreSender.send

    def resent_meanwhile(self, row):
        if row.attempts == 2:
            platform.fail_next("scores", 503)
            assert browser.post(f"{staff}pushes/{row.id}/retry").status_code == 303
        return real_send(self, row)

    monkeypatch.setattr(passback.ScoreSender, "send", resent_meanwhile)
    push.next_attempt_at = None  # its retry is due now
    db.session.commit()
    delivery.attempt("score_push", push.id, None)
    run_jobs()  # the resend's own job
    db.session.expire_all()
    assert db.session.get(ScorePush, push.id).status == PushStatus.SENT
    assert platform.grade_for("2")["scoreGiven"] == 8
