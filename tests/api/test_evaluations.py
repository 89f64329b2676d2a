"""Evaluations end to end over real HTTP: submit, grade in the worker, read status and result;
the refusals at submission; listing; and cancelling in each state."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from app.evaluation import sweeper
from app.extensions import db, redis_connection
from app.jobs import queue
from app.models import Evaluation, JobStatus
from tests.api.conftest import submit
from tests.conftest import DATA, run_jobs
from tests.documents import ESSAY, pdf_bytes

GOOD_REPLY = "Clear and accurate.\n\n**Strengths:** uses the right terms.\n\nFinal score: 8/10"
TREE = {
    "base": {
        "children": [
            {"name": "mentions chlorophyll",
             "test": {"kind": "contains", "phrases": ["chlorophyll"]}},
            {"name": "long enough", "test": {"kind": "word_count", "min": 500}},
        ]
    }
}  # fmt: skip


def row(code: str) -> Evaluation:
    db.session.expire_all()
    return db.session.query(Evaluation).filter_by(code=code).one()


def test_submit_grade_and_read_the_result(tenant, llm):
    llm.reply(GOOD_REPLY)
    response = submit(
        tenant.client,
        "essay.pdf",
        pdf_bytes(),
        organization_external_id="school-a",
        client_reference="sub-1",
        metadata={"course": "bio"},
        instructions="Explain photosynthesis.",
        evaluator_id="model-x",
    )
    assert response.status_code == 202, response.text
    accepted = response.json()
    code = accepted["job_code"]
    assert accepted["status"] == "pending" and code.startswith("ev_")
    assert response.headers["Location"] == f"/evaluations/{code}/status"

    status = tenant.client.get(f"/evaluations/{code}/status").json()
    assert status["status"] == "pending" and status["progress"]["message"]
    early = tenant.client.get(f"/evaluations/{code}/result")
    assert early.status_code == 200 and early.json()["result"] is None

    run_jobs()

    status = tenant.client.get(f"/evaluations/{code}/status").json()
    assert status["status"] == "completed"
    assert status["progress"]["percentage"] == 100.0
    assert status["processing_duration_seconds"] >= 0 and status["error_message"] is None
    result = tenant.client.get(f"/evaluations/{code}/result").json()
    assert result["client_reference"] == "sub-1" and result["metadata"] == {"course": "bio"}
    body = result["result"]
    assert body["score"] == 8 and body["max_score"] == 10 and body["score_normalized"] == 0.8
    assert "uses the right terms" in body["feedback"]
    assert body["model_used"] == "model-x" and body["provenance"]["plugin"] == "rubric_eval"
    assert isinstance(body["processing_time_ms"], int)
    # The model got the assignment and the file's text, under the requested model id.
    request = llm.requests[0]
    assert request["model"] == "model-x"
    assert "Explain photosynthesis." in str(request["messages"])
    assert "Photosynthesis converts light energy" in str(request["messages"])
    # The file is stored under the organization's folder.
    assert row(code).storage_path.startswith(f"o{tenant.org.id}/")


def test_without_a_model_an_llm_strategy_fails_with_a_clear_message(tenant):
    code = submit(tenant.client).json()["job_code"]
    run_jobs()
    status = tenant.client.get(f"/evaluations/{code}/status").json()
    assert status["status"] == "failed"
    assert "No language model is configured" in status["error_message"]
    result = tenant.client.get(f"/evaluations/{code}/result").json()
    assert result["status"] == "failed" and result["result"] is None
    assert "No language model is configured" in result["message"]


def test_without_a_model_a_deterministic_tree_still_completes(tenant):
    response = submit(tenant.client, plugin_name="criteria_tree", plugin_params={"tree": TREE})
    code = response.json()["job_code"]
    run_jobs()
    result = tenant.client.get(f"/evaluations/{code}/result").json()
    assert result["status"] == "completed" and result["result"]["score"] == 5
    names = [c["name"] for c in result["result"]["criteria"]]
    assert "mentions chlorophyll" in str(names)


def test_a_result_carries_its_confidence_and_reasons(tenant, llm):
    llm.reply("Clear.\n\nFinal score: 8/10")
    code = submit(tenant.client).json()["job_code"]
    run_jobs()
    body = tenant.client.get(f"/evaluations/{code}/result").json()["result"]
    assert body["confidence"] == body["provenance"]["confidence"]["value"] == 0.8
    (reason,) = body["provenance"]["confidence"]["reasons"]
    assert reason["code"] == "example"  # an API evaluation has no teacher's examples


def test_a_pdf_without_text_fails_in_the_worker_with_a_readable_message(tenant):
    scan = (DATA / "pdf/imagemagick-images.pdf").read_bytes()  # opens: accepted at submission
    code = submit(tenant.client, "essay.pdf", scan).json()["job_code"]
    run_jobs()
    status = tenant.client.get(f"/evaluations/{code}/status").json()
    assert status["status"] == "failed"
    assert "no text layer" in status["error_message"]
    assert "Traceback" not in status["error_message"]


@pytest.mark.parametrize(
    ("filename", "data", "fields", "status", "needle"),
    [
        ("essay.txt", None, {"plugin_params": "{not json"}, 422, "plugin_params"),
        ("essay.txt", None, {"metadata": "[1, 2]"}, 422, "metadata"),
        ("essay.txt", None, {"metadata": "{bad"}, 422, "metadata"),
        ("essay.txt", None, {"plugin_name": "telepathy"}, 422, "plugin_name"),
        ("essay.txt", None, {"plugin_params": {"temperature": 7}}, 422, "temperature"),
        ("essay.txt", None, {"plugin_params": {"colour": "red"}}, 422, "colour"),
        ("essay.txt", None, {"rubric": {"criteria": "none"}}, 422, "rubric"),
        ("essay.txt", None, {"max_score": "-1"}, 422, "max_score"),
        ("essay.txt", None, {"callback_url": "ftp://example.org/x"}, 422, "callback_url"),
        ("essay.txt", None, {"unknown_field": "x"}, 422, "unknown_field"),
        ("essay.txt", b"   ", {}, 422, "file"),
        ("photo.png", b"\x89PNG\r\n\x1a\n" + b"0" * 100, {}, 415, "file"),
        ("essay.pdf", b"\x89PNG\r\n\x1a\n" + b"0" * 100, {}, 415, "PNG"),
        ("essay.pdf", b"%PDF-1.7\n" + b"\x00garbage" * 200, {}, 422, "damaged or incomplete"),
        ("main.py", b"print(1)\n", {"plugin_name": "code_judge"}, 422, "plugin_params"),
        ("essay.txt", None, {"plugin_name": "code_judge", "plugin_params": {"tests": [
            {"name": "one", "stdin": "", "expected_stdout": "1"}]}}, 415, "code"),
    ],
    ids=[
        "bad-json-params", "metadata-not-object", "bad-json-metadata", "unknown-plugin",
        "param-out-of-range", "unknown-param", "bad-rubric", "negative-max", "ftp-callback",
        "unknown-field", "empty-file", "wrong-extension", "renamed-png", "corrupt-pdf",
        "params-required", "kind-not-graded",
    ],
)  # fmt: skip
def test_bad_submissions_are_refused_with_the_field_named(
    tenant, filename, data, fields, status, needle
):
    response = submit(tenant.client, filename, data, **fields)
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert needle in error["message"] and error["code"]
    assert db.session.query(Evaluation).count() == 0


def test_a_missing_file_and_a_non_multipart_body_are_refused(tenant):
    missing = tenant.client.post("/evaluations", data={"plugin_name": "rubric_eval"})
    assert missing.status_code in (415, 422)
    assert tenant.client.post("/evaluations", files={"other": ("a.txt", b"x")}).status_code == 422
    as_json = tenant.client.post("/evaluations", json={"file": "x"})
    assert as_json.status_code == 415 and as_json.json()["error"]["code"]


def test_a_file_over_the_limit_is_refused_with_413(app, tenant):
    app.config["EVALUAITOR_MAX_UPLOAD_MB"] = 0.01
    response = submit(tenant.client, "essay.txt", b"word " * 5000)
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "file_too_large"
    assert db.session.query(Evaluation).count() == 0


def test_another_organizations_id_is_refused(tenant, other_tenant):
    response = submit(tenant.client, organization_external_id="school-b")
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "forbidden"


def test_another_organizations_evaluations_are_not_found(tenant, other_tenant):
    code = submit(tenant.client).json()["job_code"]
    for path in ("status", "result"):
        mine = tenant.client.get(f"/evaluations/{code}/{path}")
        theirs = other_tenant.client.get(f"/evaluations/{code}/{path}")
        unknown = other_tenant.client.get(f"/evaluations/ev_unknown/{path}")
        assert mine.status_code == 200
        assert theirs.status_code == unknown.status_code == 404
        assert theirs.json() == unknown.json()
    assert other_tenant.client.post(f"/evaluations/{code}/cancel").status_code == 404
    assert other_tenant.client.get("/evaluations").json()["total"] == 0
    assert row(code).status == JobStatus.PENDING


def test_list_filters_sorts_and_pages(tenant):
    codes = [
        submit(tenant.client, client_reference=f"ref-{i % 2}").json()["job_code"] for i in range(5)
    ]
    past = datetime.now(UTC) - timedelta(days=2)
    db.session.query(Evaluation).filter_by(code=codes[0]).update({"created_at": past})
    db.session.commit()

    everything = tenant.client.get("/evaluations").json()
    assert everything["total"] == 5
    assert [i["job_code"] for i in everything["items"]] == [*reversed(codes[1:]), codes[0]]

    oldest_first = tenant.client.get("/evaluations", params={"sort_order": "asc"}).json()
    assert oldest_first["items"][0]["job_code"] == codes[0]

    page = tenant.client.get("/evaluations", params={"limit": 2, "offset": 2}).json()
    assert page["total"] == 5 and len(page["items"]) == 2
    assert [i["job_code"] for i in page["items"]] == [codes[2], codes[1]]

    own = {"organization_external_id": tenant.org.external_id}
    assert tenant.client.get("/evaluations", params=own).json()["total"] == 5
    other = tenant.client.get("/evaluations", params={"organization_external_id": "another"})
    assert other.status_code == 403 and other.json()["error"]["code"] == "forbidden"

    by_ref = tenant.client.get("/evaluations", params={"client_reference": "ref-1"}).json()
    assert {i["job_code"] for i in by_ref["items"]} == {codes[1], codes[3]}

    recent = (datetime.now(UTC) - timedelta(days=1)).isoformat()
    newer = tenant.client.get("/evaluations", params={"created_after": recent}).json()
    assert newer["total"] == 4
    older = tenant.client.get("/evaluations", params={"created_before": recent}).json()
    assert [i["job_code"] for i in older["items"]] == [codes[0]]

    run_jobs()  # no model: all fail
    failed = tenant.client.get("/evaluations", params={"status": "failed"}).json()
    assert failed["total"] == 5
    assert tenant.client.get("/evaluations", params={"status": "pending"}).json()["total"] == 0


@pytest.mark.parametrize(
    "params",
    [{"limit": 0}, {"limit": 201}, {"offset": -1}, {"status": "done"}, {"status": "waiting"},
     {"sort_by": "score"}, {"sort_order": "up"}, {"created_after": "yesterday"}, {"page": 2}],
)  # fmt: skip
def test_list_refuses_bad_parameters(tenant, params):
    response = tenant.client.get("/evaluations", params=params)
    assert response.status_code == 422
    assert next(iter(params)) in response.json()["error"]["message"]


def test_cancel_a_queued_evaluation_removes_its_job(tenant, llm):
    code = submit(tenant.client).json()["job_code"]
    job_id = row(code).job.job_id
    assert job_id in queue.queue(queue.GRADING).job_ids

    response = tenant.client.post(f"/evaluations/{code}/cancel")
    assert response.status_code == 200 and response.json()["status"] == "cancelled"
    assert job_id not in queue.queue(queue.GRADING).job_ids
    run_jobs()
    assert llm.requests == [] and row(code).status == JobStatus.CANCELLED
    again = tenant.client.post(f"/evaluations/{code}/cancel")
    assert again.status_code == 409 and again.json()["error"]["code"] == "already_finished"


def test_cancel_while_processing_stops_at_the_next_progress_report(tenant, llm):
    """The model answers slowly; the client cancels meanwhile; the worker's next report
    sees it and stores nothing."""
    code = submit(tenant.client).json()["job_code"]
    llm.delay(1.0, GOOD_REPLY)

    import threading

    def cancel_when_processing():
        import time

        import httpx

        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            state = tenant.client.get(f"/evaluations/{code}/status").json()["status"]
            if state == "processing":
                results.append(tenant.client.post(f"/evaluations/{code}/cancel").status_code)
                return
            time.sleep(0.02)
        results.append(httpx.codes.REQUEST_TIMEOUT)

    results: list[int] = []
    canceller = threading.Thread(target=cancel_when_processing)
    canceller.start()
    run_jobs()
    canceller.join()
    assert results == [200]
    final = row(code)
    assert final.status == JobStatus.CANCELLED and final.job.score is None
    assert tenant.client.get(f"/evaluations/{code}/result").json()["result"] is None


def test_cancel_a_finished_evaluation_is_a_conflict(tenant, llm):
    llm.reply(GOOD_REPLY)
    code = submit(tenant.client).json()["job_code"]
    run_jobs()
    response = tenant.client.post(f"/evaluations/{code}/cancel")
    assert response.status_code == 409 and "completed" in response.json()["error"]["message"]
    assert row(code).status == JobStatus.COMPLETED


def test_the_sweeper_requeues_an_evaluation_whose_job_redis_lost(tenant, llm):
    llm.reply(GOOD_REPLY)
    code = submit(tenant.client).json()["job_code"]
    redis_connection().flushdb()  # Redis lost everything
    assert sweeper.sweep(timedelta(seconds=-1)) == 1
    run_jobs()
    assert row(code).status == JobStatus.COMPLETED


def test_an_evaluation_waits_when_redis_is_down_and_is_queued_later(app, tenant, llm):
    llm.reply(GOOD_REPLY)
    good_url = app.config["REDIS_URL"]
    from redis import Redis

    app.extensions["evaluaitor.redis"] = Redis.from_url("redis://127.0.0.1:1/0")
    try:
        response = submit(tenant.client)
    finally:
        app.extensions["evaluaitor.redis"] = Redis.from_url(good_url)
    assert response.status_code == 202
    code = response.json()["job_code"]
    assert row(code).status == JobStatus.PENDING
    assert row(code).job.job_id not in queue.queue(queue.GRADING).job_ids
    assert sweeper.sweep(timedelta(seconds=-1)) == 1
    run_jobs()
    assert row(code).status == JobStatus.COMPLETED
    assert ESSAY[:20] in row(code).extracted_text


def test_the_sweeper_hands_back_an_evaluation_its_worker_abandoned(tenant, llm, receiver):
    """Its worker died mid-job: the evaluation is graded again by the next one, and the
    client's callback says completed, never failed."""
    server, url = receiver
    llm.reply(GOOD_REPLY)
    code = submit(tenant.client, callback_url=url).json()["job_code"]
    job = row(code).job
    job.status, job.started_at = JobStatus.PROCESSING, datetime.now(UTC) - timedelta(minutes=3)
    db.session.commit()
    redis_connection().flushdb()  # its job is gone with the worker
    assert sweeper.sweep(timedelta(seconds=-1)) == 1
    assert tenant.client.get(f"/evaluations/{code}/status").json()["status"] == "pending"
    run_jobs()
    assert [json.loads(body)["status"] for _, body in server.received] == ["completed"]


def test_an_internal_error_answers_json_without_a_trace(app, tenant, monkeypatch):
    from app.grading import registry

    def broken() -> list:
        raise RuntimeError("secret internals /srv/app")

    monkeypatch.setattr(registry, "all_plugins", broken)
    response = tenant.client.get("/plugins")
    assert response.status_code == 500
    assert response.json() == {
        "error": {
            "code": "internal_error",
            "message": "An unexpected error occurred. Please try again.",
        }
    }
