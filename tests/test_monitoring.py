"""What an operator's monitoring sees: /metrics with a real worker's counters, the probes as
Redis or the worker go away, and JSON log lines (docs/decisions.md, README "Operations").

The worker is a real ``evaluaitor worker`` process (tests/test_reliability.py's stack) that
forks a work horse per job; the model is the fake server on 127.0.0.1; Redis is a real
redis-server that the test kills.
"""

from __future__ import annotations

import io
import json
import logging
import re
import time
from collections.abc import Iterator

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from app import logs
from app.models import JobStatus
from tests.test_core_loop import GOOD_REPLY, open_activity, upload
from tests.test_reliability import Stack, job_of
from tests.test_reliability import stack as stack  # noqa: F401  (the fixture)
from tests.test_run_command import _free_port

TOKEN = "scrape-token-0123456789abcdef"
#: Words of the student's work that no log line may hold.
STUDENT_MARKER = "Quetzalcoatlus-7319"
ESSAY = (
    f"{STUDENT_MARKER} was a pterosaur. Photosynthesis converts light energy into chemical "
    "energy; chlorophyll absorbs red and blue light."
)


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """The scrape, parsed by Prometheus's own parser: (sample name, labels) → value."""
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def scrape(base: str, token: str | None = TOKEN) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.get(f"{base}/metrics", headers=headers, timeout=10)


@pytest.fixture
def counted(stack: Stack, tmp_path) -> Iterator[Stack]:
    """The stack with /metrics on, its processes writing counters to a directory of the test."""
    folder = tmp_path / "counters"
    folder.mkdir()
    stack.app.config |= {"EVALUAITOR_METRICS_TOKEN": TOKEN, "PROMETHEUS_MULTIPROC_DIR": str(folder)}
    yield stack


def test_a_work_horses_counters_reach_the_web_apps_metrics(
    counted, browser, platform, llm, live_tool, tmp_path
):
    """A real worker grades an upload in a work horse and delivers its score in another; the
    web app's /metrics, in this process, shows what the horses counted after they ended,
    with what the database and Redis hold now."""
    llm.set_default(GOOD_REPLY)
    page = open_activity(browser, platform, live_tool)
    counted.start_worker()
    upload(browser, page, "essay.txt", ESSAY.encode())
    counted.wait_for("the submission graded", lambda: job_of().status == JobStatus.COMPLETED)
    counted.wait_for("the score in the gradebook", lambda: platform.grade_for("2"))

    def scraped() -> dict | None:
        found = samples(scrape(live_tool).text)
        pushes = [
            ("evaluaitor_delivery_attempts_total", (("kind", "score_push"), ("outcome", o)))
            for o in ("sent", "superseded")
        ]
        return found if all(push in found for push in pushes) else None

    # The "submitted" push, overtaken by the grade's before it left, and the grade's.
    found = counted.wait_for("both pushes counted", scraped, seconds=20)
    assert found[("evaluaitor_model_calls_total", (("model", "fake-model"),))] == 1
    tokens = found[("evaluaitor_model_tokens_total", (("kind", "prompt"), ("model", "fake-model")))]
    assert tokens > 0
    assert found[("evaluaitor_time_to_grade_seconds_count", (("outcome", "completed"),))] == 1
    assert found[("evaluaitor_grading_jobs", (("status", "completed"),))] == 1
    assert found[("evaluaitor_queue_depth", (("queue", "grading"),))] == 0
    assert found[("evaluaitor_month_model_calls", (("organization", "1"),))] == 1
    assert found[("evaluaitor_scrape_source_up", (("source", "redis"),))] == 1
    # Each ended horse's files were folded into the worker's archive: files per process, not
    # per job. The worker's own counter file comes with its sweeper's first count, which on a
    # loaded machine may not have happened yet.
    names = {path.name for path in (tmp_path / "counters").glob("*.db")}
    worker = counted.workers[0].pid
    archives = {f"counter_archive-{worker}.db", f"histogram_archive-{worker}.db"}
    assert archives <= names <= archives | {f"counter_{worker}.db"}


def test_a_worker_elsewhere_serves_its_own_counters(
    counted, browser, platform, llm, live_tool, tmp_path
):
    """A worker whose directory the web cannot read (another container: its own directory
    here) serves its counters on EVALUAITOR_WORKER_METRICS_ADDRESS, with the same token and
    nothing but /metrics."""
    port = _free_port()
    counted.app.config |= {
        "PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "worker-counters"),
        "EVALUAITOR_WORKER_METRICS_ADDRESS": f"127.0.0.1:{port}",
    }
    llm.set_default(GOOD_REPLY)
    page = open_activity(browser, platform, live_tool)
    counted.start_worker()
    upload(browser, page, "essay.txt", ESSAY.encode())
    counted.wait_for("the submission graded", lambda: job_of().status == JobStatus.COMPLETED)
    worker = f"http://127.0.0.1:{port}"

    def scraped() -> dict | None:
        try:
            found = samples(scrape(worker).text)
        except httpx.TransportError:
            return None
        return (
            found if ("evaluaitor_model_calls_total", (("model", "fake-model"),)) in found else None
        )

    found = counted.wait_for("the worker's own scrape", scraped)
    assert found[("evaluaitor_time_to_grade_seconds_count", (("outcome", "completed"),))] == 1
    assert scrape(worker, token="wrong").status_code == 401
    assert httpx.get(f"{worker}/readyz", timeout=10).status_code == 404
    assert httpx.get(f"{worker}/lti/jwks", timeout=10).status_code == 404


def test_metrics_are_off_by_default_and_want_the_token(app, live_tool) -> None:
    assert scrape(live_tool).status_code == 404
    app.config["EVALUAITOR_METRICS_TOKEN"] = TOKEN
    assert scrape(live_tool, token=None).status_code == 401
    refused = scrape(live_tool, token=TOKEN + "x")
    assert refused.status_code == 401 and "evaluaitor_" not in refused.text
    assert refused.headers["WWW-Authenticate"].startswith("Bearer")
    answered = scrape(live_tool)
    assert answered.status_code == 200 and "evaluaitor_grading_jobs" in answered.text


def test_wrong_metrics_tokens_lock_the_address_out(app, live_tool) -> None:
    app.config |= {"EVALUAITOR_METRICS_TOKEN": TOKEN, "EVALUAITOR_SIGN_IN_MAX_FAILURES": 2}
    assert [scrape(live_tool, token=f"guess{n}").status_code for n in range(2)] == [401, 401]
    assert scrape(live_tool).status_code == 429  # the right token too, until the window ends


def test_each_monthly_limit_shows_its_use_and_no_name(app, live_tool) -> None:
    """Budget use (app.spend.budget_use) as gauges: a limited organization by its number, with
    its limit and this month's tokens; an organization without a limit adds no series."""
    from app import tenants
    from app.extensions import db
    from app.models.jobs import ModelUsage

    app.config["EVALUAITOR_METRICS_TOKEN"] = TOKEN
    with app.app_context():
        limited, _ = tenants.upsert_organization("school-budget-7", name="Escola Secreta")
        tenants.upsert_organization("school-free-8", name="Other")
        limited.monthly_token_limit = 5000
        db.session.flush()
        db.session.add(
            ModelUsage(
                organization_id=limited.id,
                model="m",
                calls=2,
                prompt_tokens=900,
                completion_tokens=300,
            )
        )
        db.session.commit()
        key = ("organization", str(limited.id))

    answered = scrape(live_tool)

    found = samples(answered.text)
    labels = (("id", key[1]), ("scope", key[0]), ("unit", "tokens"))
    assert found[("evaluaitor_budget_limit", labels)] == 5000
    assert found[("evaluaitor_budget_used", labels)] == 1200
    assert found[("evaluaitor_budget_waiting", labels[:2])] == 0
    assert sum(name == "evaluaitor_budget_limit" for name, _ in found) == 1
    assert "Escola Secreta" not in answered.text


def readiness(base: str) -> tuple[int, dict]:
    answer = httpx.get(f"{base}/readyz", timeout=10)
    return answer.status_code, answer.json()


def test_readiness_follows_the_worker_and_redis(counted, live_tool) -> None:
    """Ready with a live worker; 503 once its heartbeat is older than the setting, and once
    Redis is gone. Liveness stays 200 throughout, and no answer says more than ok/failing."""
    assert readiness(live_tool) == (
        503,
        {"status": "failing", "checks": {"database": "ok", "redis": "ok", "worker": "failing"}},
    )
    counted.start_worker()
    counted.wait_for("the worker ready", lambda: readiness(live_tool)[0] == 200)

    counted.app.config["EVALUAITOR_READY_HEARTBEAT_AGE"] = 1  # idle RQ workers beat every 405 s
    time.sleep(1.5)
    assert readiness(live_tool)[1]["checks"] == {
        "database": "ok",
        "redis": "ok",
        "worker": "failing",
    }

    counted.app.config["EVALUAITOR_READY_HEARTBEAT_AGE"] = 480
    assert readiness(live_tool)[0] == 200
    counted.kill_redis()
    code, body = readiness(live_tool)
    assert code == 503
    assert body["checks"] == {"database": "ok", "redis": "failing", "worker": "failing"}
    alive = httpx.get(f"{live_tool}/healthz", timeout=10)
    assert alive.status_code == 200 and alive.json() == {"status": "ok"}
    # The scrape still answers, and says which source it could not read.
    found = samples(scrape(live_tool).text)
    assert found[("evaluaitor_scrape_source_up", (("source", "redis"),))] == 0
    assert found[("evaluaitor_scrape_source_up", (("source", "database"),))] == 1


@pytest.fixture
def json_lines() -> Iterator[io.StringIO]:
    """What the root logger writes while the test runs, as EVALUAITOR_LOG_FORMAT=json has it."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logs.JsonFormatter())
    root = logging.getLogger()
    root.addHandler(handler)
    logs.configure("json")  # the redaction on every root handler, this one included
    try:
        yield stream
    finally:
        root.removeHandler(handler)


def test_json_log_lines_carry_the_request_id_and_no_credential(app, live_tool, json_lines):
    app.config["EVALUAITOR_METRICS_TOKEN"] = TOKEN

    @app.get("/test-logs")
    def _talks():  # a view that logs what an HTTP library's error might quote
        logging.getLogger("app.test").warning("refused: Authorization: Bearer %s", TOKEN)
        return "ok"

    answer = httpx.get(f"{live_tool}/test-logs", headers={"X-Request-ID": "lb-42.a"}, timeout=10)
    assert answer.headers["X-Request-ID"] == "lb-42.a"
    forged = httpx.get(f"{live_tool}/healthz", headers={"X-Request-ID": "x\ty" * 40}, timeout=10)
    assert re.fullmatch(r"[0-9a-f]{32}", forged.headers["X-Request-ID"])

    lines = [json.loads(line) for line in json_lines.getvalue().splitlines()]
    mine = [line for line in lines if line["logger"] == "app.test"]
    assert mine and mine[0]["request_id"] == "lb-42.a"
    assert set(mine[0]) == {"time", "level", "logger", "message", "request_id"}
    assert TOKEN not in json_lines.getvalue()


def test_a_json_worker_logs_job_ids_and_no_student_text(
    stack, browser, platform, llm, live_tool
) -> None:
    """A real worker with EVALUAITOR_LOG_FORMAT=json: every line it writes is one JSON
    object, lines from a work horse name the RQ job, and none holds the student's words."""
    stack.app.config["EVALUAITOR_LOG_FORMAT"] = "json"
    llm.set_default(GOOD_REPLY)
    page = open_activity(browser, platform, live_tool)
    stack.start_worker()
    upload(browser, page, "essay.txt", ESSAY.encode())
    stack.wait_for("the submission graded", lambda: job_of().status == JobStatus.COMPLETED)
    stack.wait_for("the score in the gradebook", lambda: platform.grade_for("2"))
    stack.wait_for("the job's lines written", lambda: "job_id" in stack.log())
    lines = [json.loads(line) for line in stack.log().splitlines() if line.strip()]
    assert any(line.get("job_id") == job_of().job_id for line in lines)
    assert all({"time", "level", "logger", "message"} <= set(line) for line in lines)
    assert STUDENT_MARKER not in stack.log()
