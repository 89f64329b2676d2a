"""AGS details: Moodle's URLs, token reuse and expiry, timestamps, comments, no-AGS activities."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest

from app.evaluation import delivery, sweeper
from app.extensions import db
from app.jobs import queue
from app.lti import passback
from app.lti.ags import scores_url
from app.lti.passback import GRADED, SUBMITTED, plain_comment
from app.models import Activity, JobStatus, PushStatus, ScorePush, Submission
from tests.conftest import announce_then_grade, run_jobs
from tests.documents import ESSAY
from tests.test_core_loop import GOOD_REPLY, open_activity, status, upload
from tests.test_review import act, graded, latest, teacher
from tests.test_strategies_loop import configure


@pytest.mark.parametrize(
    ("lineitem", "scores"),
    [
        (
            "https://moodle.example/mod/lti/services.php/2/lineitems/7/lineitem?type_id=1",
            "https://moodle.example/mod/lti/services.php/2/lineitems/7/lineitem/scores?type_id=1",
        ),
        (
            "https://canvas.example/api/lti/courses/1/line_items/5",
            "https://canvas.example/api/lti/courses/1/line_items/5/scores",
        ),
        ("https://lms.example/items/5/", "https://lms.example/items/5/scores"),
    ],
)
def test_scores_url_keeps_the_query_after_the_path(lineitem, scores):
    assert scores_url(lineitem) == scores


def test_comment_is_plain_text_and_trimmed_on_a_word():
    feedback = "## Feedback\n\n**Strong** argument with `code` and __emphasis__. " + "word " * 50
    comment = plain_comment(feedback, 60)
    assert comment.startswith("Feedback\n\nStrong argument with code and emphasis.")
    assert len(comment) <= 60 and comment.endswith("…")
    assert "**" not in comment and "#" not in comment


def test_expired_access_token_is_replaced_once(browser, platform, llm, live_tool):
    llm.set_default(GOOD_REPLY)
    page = open_activity(browser, platform, live_tool)
    upload(browser, page, "essay.txt", ESSAY.encode())
    run_jobs()
    assert platform.token_requests == 1
    platform.expire_tokens()  # the cached token is now refused with 401
    upload(browser, page, "again.txt", ESSAY.encode())
    run_jobs()
    assert platform.token_requests == 2
    assert [score["gradingProgress"] for score in platform.scores][-1] == "FullyGraded"


def test_token_endpoint_failure_is_retried(browser, platform, llm, live_tool):
    llm.set_default(GOOD_REPLY)
    page = open_activity(browser, platform, live_tool)
    platform.fail_next("token", 500, times=2)
    upload(browser, page, "essay.txt", ESSAY.encode())
    run_jobs()
    assert platform.grade_for("2")["scoreGiven"] == 8


def test_timestamps_are_strictly_later_even_within_one_second(
    app, browser, platform, llm, live_tool
):
    llm.set_default(GOOD_REPLY)
    page = open_activity(browser, platform, live_tool)
    upload(browser, page, "essay.txt", ESSAY.encode())
    run_jobs()
    # Pretend the last push went out a minute from now (a fast clock earlier): the next must
    # still be later, or Moodle answers 409.
    last = db.session.query(ScorePush).order_by(ScorePush.id.desc()).first()
    ahead = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=60)
    last.sent_timestamp = ahead
    db.session.commit()
    upload(browser, page, "again.txt", ESSAY.encode())
    run_jobs()
    sent = datetime.fromisoformat(platform.scores[-1]["timestamp"])
    assert sent == ahead + timedelta(seconds=1)


def test_activity_without_grade_service_grades_out_of_ten_and_pushes_nothing(
    browser, platform, llm, live_tool
):
    llm.set_default("Final score: 7/10")
    page = open_activity(browser, platform, live_tool, lineitem=False, lineitems=False)
    upload(browser, page, "essay.txt", ESSAY.encode())
    run_jobs()
    assert status(browser, page)["score"] == 7
    activity = db.session.query(Activity).one()
    assert activity.max_score == 10 and not activity.has_ags
    assert db.session.query(ScorePush).count() == 0
    assert platform.scores == []


def test_sweeper_hands_back_grading_that_a_dead_worker_abandoned(browser, platform, llm, live_tool):
    """A worker died while grading (its RQ job is gone): the job goes back in line and is
    graded by the next worker, with no one's help."""
    llm.reply("Final score: 6/10")
    page = open_activity(browser, platform, live_tool)
    upload(browser, page, "essay.txt", ESSAY.encode())
    job = db.session.query(Submission).one().job
    job.status, job.job_id = JobStatus.PROCESSING, "a-job-no-worker-runs"
    job.updated_at = datetime.now(UTC) - timedelta(minutes=5)
    db.session.commit()
    assert sweeper.sweep(timedelta(seconds=30)) == 1
    assert status(browser, page)["status"] == "pending"
    run_jobs()
    assert status(browser, page)["status"] == "completed"


# -- one student's pushes: one at a time, the newest only --------------------------------


def test_a_submitted_push_still_queued_when_the_grade_is_ready_is_not_sent(
    browser, platform, llm, live_tool
):
    """Both pushes waited in the queue (the grading ran first): only the newest state, the
    grade, goes to the gradebook; the older one is marked replaced, never sent after it."""
    llm.reply(GOOD_REPLY)
    page = open_activity(browser, platform, live_tool)
    upload(browser, page, "essay.txt", ESSAY.encode())
    run_jobs()  # grading first: the "graded" push is queued behind the "submitted" one
    assert progress(platform) == [("Completed", "FullyGraded", 8)]
    statuses = {p.kind: p.status for p in db.session.query(ScorePush)}
    assert statuses == {SUBMITTED: PushStatus.SUPERSEDED, GRADED: PushStatus.SENT}


def test_a_resubmission_while_the_grade_is_on_its_way_does_not_blank_it(
    browser, platform, llm, live_tool, monkeypatch
):
    """The student uploads again while their first grade is being sent: the new upload's
    "submitted" push was made before that grade counted as sent, but it is not sent after
    it (it would clear the grade in Moodle): the gradebook keeps the grade."""
    llm.set_default(GOOD_REPLY)
    page = open_activity(browser, platform, live_tool)
    upload(browser, page, "essay.txt", ESSAY.encode())
    real_send = passback.ScoreSender.send

    def upload_again_meanwhile(self, push):
        if push.kind == GRADED and push.submission.attempt == 1:
            assert upload(browser, page, "again.txt", b"A second essay.").status_code == 303
        return real_send(self, push)

    monkeypatch.setattr(passback.ScoreSender, "send", upload_again_meanwhile)
    run_jobs(queue.PASSBACK)  # the first "submitted" push
    run_jobs(queue.GRADING)  # the first upload's grade
    run_jobs(queue.PASSBACK)  # the grade, then the second upload's "submitted" push
    again = db.session.query(ScorePush).filter_by(kind=SUBMITTED).order_by(ScorePush.id.desc())
    assert again.first().status == PushStatus.SUPERSEDED
    assert progress(platform)[-1] == ("Completed", "FullyGraded", 8)
    assert platform.grade_for("2")["scoreGiven"] == 8


def test_a_push_whose_student_lane_is_busy_waits_its_turn(app, browser, platform, llm, live_tool):
    """While another attempt for the same student is on its way (it holds the lane), a push
    does not go out beside it: it is tried again shortly, without counting as an attempt."""
    app.config |= {"EVALUAITOR_AGS_TIMEOUT": 0.2, "EVALUAITOR_CALLBACK_TIMEOUT": 0.2}
    llm.reply(GOOD_REPLY)
    page = open_activity(browser, platform, live_tool)
    upload(browser, page, "essay.txt", ESSAY.encode())
    push = db.session.query(ScorePush).one()
    with delivery.lane(passback.ScoreSender().lane(push)) as held:
        assert held
        run_jobs(queue.PASSBACK)
    db.session.expire_all()
    assert (push.status, push.attempts) == (PushStatus.PENDING, 0)
    assert push.next_attempt_at is not None and platform.scores == []
    push.next_attempt_at = datetime.now(UTC)
    db.session.commit()
    assert sweeper.sweep(timedelta(seconds=30)) == 1
    run_jobs(queue.PASSBACK)
    db.session.expire_all()
    assert (push.status, push.attempts) == (PushStatus.SENT, 1)


def cross(app, monkeypatch, submission: Submission) -> tuple[ScorePush, ScorePush]:
    """A "submitted" push and the "graded" push made after it cross on their way, as two
    workers made them: the grade has reached the LMS, and before its attempt records it as
    sent, the "submitted" push's attempt starts. Returns both rows as they ended.

    Neither is queued, and no sweeper touches them (their retry is an hour away): the test
    runs each attempt itself, the grade's in a thread.
    """
    later = datetime.now(UTC) + timedelta(hours=1)
    pushes = [passback._new_push(submission, kind) for kind in (SUBMITTED, GRADED)]
    for push in pushes:
        push.next_attempt_at = later
    db.session.commit()
    submitted, graded = (push.id for push in pushes)
    delivered, crossed = threading.Event(), threading.Event()
    real_send = passback.ScoreSender.send

    def send_then_linger(self, push):
        real_send(self, push)
        if push.id == graded:
            delivered.set()
            crossed.wait(60)

    def other_worker() -> None:
        with app.app_context():
            delivery.attempt("score_push", graded, None)

    monkeypatch.setattr(passback.ScoreSender, "send", send_then_linger)
    worker = threading.Thread(target=other_worker)
    worker.start()
    try:
        assert delivered.wait(60), "the grade never reached the LMS"
        delivery.attempt("score_push", submitted, None)  # waits for the lane, then gives up
    finally:
        crossed.set()
        worker.join(60)
    delivery.attempt("score_push", submitted, None)  # its next try, once the grade is sent
    db.session.expire_all()
    return db.session.get(ScorePush, submitted), db.session.get(ScorePush, graded)


def test_a_submitted_push_starting_while_the_grade_is_on_its_way_is_never_sent_after_it(
    app, browser, platform, llm, live_tool, monkeypatch
):
    """The race two workers ran into: the "submitted" push, stamped after the grade that
    was on its way, reached the LMS after it and cleared it (Moodle keeps a non-FullyGraded
    score's timestamp and drops its score). It now waits for the student's lane and is
    then not sent at all."""
    app.config["EVALUAITOR_CALLBACK_TIMEOUT"] = 0.5  # the lane's wait: the AGS timeout, 2 s
    llm.reply(GOOD_REPLY)
    page = open_activity(browser, platform, live_tool)
    upload(browser, page, "essay.txt", ESSAY.encode())
    announce_then_grade()
    submitted, graded = cross(app, monkeypatch, db.session.query(Submission).one())
    assert (submitted.status, graded.status) == (PushStatus.SUPERSEDED, PushStatus.SENT)
    assert submitted.sent_timestamp is None
    assert progress(platform)[-1] == ("Completed", "FullyGraded", 8)
    assert platform.grade_for("2")["scoreGiven"] == 8


# -- release policies and the teacher's actions ------------------------------------------


def progress(platform) -> list[tuple[str, str, float | None]]:
    return [
        (s["activityProgress"], s["gradingProgress"], s.get("scoreGiven")) for s in platform.scores
    ]


def test_hold_policy_announces_pending_manual_and_sends_the_grade_on_release(
    browser, platform, llm, live_tool
):
    page = open_activity(browser, platform, live_tool)
    configure(release_policy="hold_all")
    llm.reply(GOOD_REPLY)
    upload(browser, page, "essay.txt", ESSAY.encode())
    announce_then_grade()
    assert progress(platform) == [
        ("Submitted", "PendingManual", None),
        ("Completed", "PendingManual", None),
    ]
    act(browser, teacher(browser, platform, live_tool), latest(), "release")
    run_jobs()
    assert progress(platform)[-1] == ("Completed", "FullyGraded", 8)
    assert "uses the right terms" in platform.scores[-1]["comment"]


def test_hold_flagged_releases_a_grade_without_flags_at_once(browser, platform, llm, live_tool):
    _, submission = graded(browser, platform, llm, live_tool, policy="hold_flagged")
    assert submission.grade.released_at is not None
    assert progress(platform) == [("Submitted", "Pending", None), ("Completed", "FullyGraded", 8)]


def test_override_after_release_sends_the_teachers_score_on_the_line_items_scale(
    browser, platform, llm, live_tool
):
    llm.reply("Clear and accurate.\n\nFinal score: 16/20")  # asked on the column's 20
    page = open_activity(browser, platform, live_tool, score_maximum=20)
    upload(browser, page, "essay.txt", ESSAY.encode())
    run_jobs()
    assert platform.grade_for("2")["scoreGiven"] == 16
    submission = latest()
    staff = teacher(browser, platform, live_tool)
    # The teacher scores on the grade's scale, which is the column's.
    act(browser, staff, submission, "override", score="15", feedback="Teacher: *nice*.")
    run_jobs()
    assert platform.grade_for("2")["scoreGiven"] == 15
    assert platform.scores[-1]["comment"] == "Teacher: *nice*."  # only ** and __ are markup
    assert platform.scores[-1]["gradingProgress"] == "FullyGraded"


def test_releasing_twice_sends_nothing_new(browser, platform, llm, live_tool):
    _, submission = graded(browser, platform, llm, live_tool, policy="hold_all")
    staff = teacher(browser, platform, live_tool)
    act(browser, staff, submission, "release")
    run_jobs()
    sent = len(platform.scores)
    act(browser, staff, submission, "release")
    browser.post(staff + "release-all")
    run_jobs()
    assert len(platform.scores) == sent


def test_release_to_a_deleted_grade_column_is_reported_and_can_be_resent(
    browser, platform, llm, live_tool
):
    _, submission = graded(browser, platform, llm, live_tool, policy="hold_all")
    platform.delete_lineitem(platform.lineitem_for_link("rl-1"))
    staff = teacher(browser, platform, live_tool)
    act(browser, staff, submission, "release")
    run_jobs()
    db.session.expire_all()
    push = db.session.query(ScorePush).order_by(ScorePush.id.desc()).first()
    assert push.status == "failed" and push.http_status == 404
    assert push.attempts == 1  # a missing column does not come back by waiting
    listing = browser.get(staff).text
    assert "no longer has this grade column" in listing and "Resend to gradebook" in listing
    detail = browser.get(f"{staff}submissions/{submission.id}").text
    assert "no longer has this grade column" in detail

    # Resending puts the column back (the launch offered `lineitems`) and the grade lands.
    old_column = platform.lineitem_for_link("rl-1")
    assert browser.post(f"{staff}pushes/{push.id}/retry").status_code == 303
    run_jobs()
    db.session.expire_all()
    assert db.session.get(ScorePush, push.id).status == "sent"
    new_column = platform.lineitem_for_link("rl-1")
    assert new_column not in (None, old_column)
    held = platform.grade_for(submission.user.sub, new_column)
    assert held["scoreGiven"] is not None and held["gradingProgress"] == "FullyGraded"


def test_a_held_regrade_never_blanks_the_released_grade(browser, platform, llm, live_tool):
    _, submission = graded(browser, platform, llm, live_tool)
    configure(release_policy="hold_all")
    llm.reply("Final score: 3/10")
    staff = teacher(browser, platform, live_tool)
    act(browser, staff, submission, "regrade", model="judge-2")  # same model: a cache hit
    run_jobs()
    assert latest().grade.score == 3 and latest().grade.released_at is None
    assert platform.grade_for("2")["scoreGiven"] == 8  # no PendingManual cleared it
    assert progress(platform)[-1] == ("Completed", "FullyGraded", 8)


def test_every_push_is_later_than_the_last_even_within_one_second(
    browser, platform, llm, live_tool
):
    _, submission = graded(browser, platform, llm, live_tool, policy="hold_all")
    staff = teacher(browser, platform, live_tool)
    act(browser, staff, submission, "release")
    for score in ("5", "6", "7"):  # three changes in quick succession
        act(browser, staff, submission, "override", score=score)
    run_jobs()
    db.session.expire_all()
    assert {p.status for p in db.session.query(ScorePush)} <= {"sent", "superseded"}
    stamps = [datetime.fromisoformat(s["timestamp"]) for s in platform.scores]
    assert all(later > earlier for earlier, later in zip(stamps, stamps[1:], strict=False))
    assert platform.grade_for("2")["scoreGiven"] == 7
