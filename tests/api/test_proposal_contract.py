"""The API read as a client written to the Evaluaitor proposal (section 5) reads it; LAMBA is
one. Every endpoint, field by field, from the proposal's examples: its names, its five
status words, its codes (a result not ready yet is 200 with ``result: null``). What
Evaluaitor adds (``needs_review``, ``retry_at``, the callback) is in extra fields such a client
never has to read, and the names before API version 1 still answer, as deprecated extras.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

import httpx
from flask_migrate import stamp

from app.extensions import db
from tests.api.conftest import submit
from tests.api.test_evaluations import GOOD_REPLY
from tests.conftest import run_jobs
from tests.documents import ESSAY, pdf_bytes

# The fields of the proposal's examples, answer by answer.
HEALTH = {"status", "version", "service"}
DATABASE = {"jobs_count", "pending_jobs", "organizations_count"}
ORGANIZATION_CREATED = {"id", "external_id", "name", "created_at"}
ORGANIZATION = {"id", "external_id", "name", "jobs_count", "pending_jobs"}
ACCEPTED = {"job_code", "status", "message", "created_at"}
STATUS = {"job_code", "status", "progress", "created_at", "processing_started_at"}
FINISHED = STATUS | {"processing_completed_at"}
COMPLETED = FINISHED | {"processing_duration_seconds"}
FAILED = FINISHED | {"error_message", "error_details"}
PROGRESS = {"current", "total", "percentage", "message"}
RESULT = {"job_code", "status", "result", "client_reference"}
RESULT_BODY = {
    "score", "score_normalized", "max_score", "feedback", "feedback_structured", "model_used",
    "processing_time_ms", "tokens_used",
}  # fmt: skip
CRITERION = {"name", "score", "max_score", "comment"}
NOT_READY = {"job_code", "status", "result", "message"}
LIST = {"total", "items"}
LIST_ITEM = {
    "job_code", "evaluator_id", "plugin_name", "status", "original_filename", "created_at",
    "processing_completed_at", "client_reference",
}  # fmt: skip
CANCELLED = {"job_code", "status", "message"}
WORDS = {"pending", "processing", "completed", "failed", "cancelled"}

NO_SCORE_REPLY = "A thoughtful essay. I would give it a good mark overall."
RUBRIC = {
    "title": "Essay",
    "criteria": [
        {"name": "Accuracy", "requirement": "Explains photosynthesis correctly.", "weight": 6},
        {"name": "Detail", "requirement": "Mentions the Calvin cycle.", "weight": 4},
    ],
}
#: A passage of tests.documents.ESSAY: the points it earns count (app.grading.grounding).
EVIDENCE = "converts light energy into chemical energy"
CRITERIA_REPLY = json.dumps(
    {
        "C1": {"verdict": "MET", "reason": "Correct.", "evidence": EVIDENCE},
        "C2": {"verdict": "UNMET", "reason": "No Calvin cycle.", "evidence": ""},
    }
)


def moment(text: str) -> datetime:
    """A proposal timestamp: ISO 8601 in UTC, as ``2026-01-25T10:30:00Z``."""
    assert text.endswith("Z"), text
    parsed = datetime.fromisoformat(text)
    assert parsed.utcoffset().total_seconds() == 0
    return parsed


def has(document: dict, fields: set[str]) -> dict:
    assert fields <= document.keys(), fields - document.keys()
    return document


def status_of(tenant, code: str) -> dict:
    response = tenant.client.get(f"/evaluations/{code}/status")
    assert response.status_code == 200, response.text
    body = has(response.json(), STATUS)
    assert body["job_code"] == code and body["status"] in WORDS
    progress = has(body["progress"], PROGRESS)
    assert isinstance(progress["current"], int) and isinstance(progress["total"], int)
    assert isinstance(progress["percentage"], float) and isinstance(progress["message"], str)
    return body


def result_of(tenant, code: str) -> dict:
    response = tenant.client.get(f"/evaluations/{code}/result")
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["job_code"] == code and body["status"] in WORDS
    return has(body, RESULT if body["result"] is not None else NOT_READY)


def codes(tenant, **params) -> set[str]:
    response = tenant.client.get("/evaluations", params=params)
    assert response.status_code == 200, response.text
    listed = has(response.json(), LIST)
    assert listed["total"] == len(listed["items"])
    return {item["job_code"] for item in listed["items"]}


def test_health_and_the_api_version(live_tool, tenant):
    health = httpx.get(f"{live_tool}/health")
    assert has(health.json(), HEALTH)["status"] == "ok"
    assert health.json()["service"] == "evaluaitor"
    assert health.headers["API-Version"] == "1" and health.json()["api_version"] == "1"
    document = httpx.get(f"{live_tool}/openapi.json")
    assert document.json()["info"]["version"] == "1" and document.headers["API-Version"] == "1"
    for answer in (tenant.client.get("/plugins"), tenant.client.get("/evaluations/ev_x/none")):
        assert answer.headers["API-Version"] == "1"  # an error too (a routing 404 here)
    assert "API-Version" not in httpx.get(f"{live_tool}/lti/jwks").headers


def test_database_status_names_the_database(app, admin, tenant):
    submit(tenant.client)
    dialect = db.engine.dialect.name  # sqlite, or postgresql with EVALUAITOR_TEST_DATABASE_URL
    key = f"{dialect}_status"
    # The test schema is built from the models, without Alembic: no revision is recorded.
    unstamped = admin.get("/database/status").json()
    assert unstamped[key] == {"initialized": True, "schema_valid": False}
    stamp()
    response = admin.get("/database/status")
    assert response.status_code == 200
    status = has(response.json(), DATABASE | {key})
    assert status[key] == {"initialized": True, "schema_valid": True}
    assert [k for k in status if k.endswith("_status")] == [key]  # only this database's
    assert (status["jobs_count"], status["pending_jobs"], status["organizations_count"]) == (
        1,
        1,
        1,
    )
    # Before version 1: kept as extras.
    assert status["evaluations_count"] == 1 and status["pending_evaluations"] == 1
    assert status["database"]["dialect"] == dialect and status["database"]["schema_current"]


def test_organizations_register_and_count_their_jobs(admin, tenant, llm):
    created = admin.post("/organizations", json={"external_id": "org_123", "name": "Example U"})
    assert created.status_code == 201
    body = has(created.json(), ORGANIZATION_CREATED)
    assert body["external_id"] == "org_123" and body["name"] == "Example U"
    assert isinstance(body["id"], int) and moment(body["created_at"])
    assert body["jobs_count"] == 0 and body["pending_jobs"] == 0

    llm.reply(GOOD_REPLY)
    submit(tenant.client)  # graded below: not pending any more
    run_jobs()
    submit(tenant.client)
    cancelled = submit(tenant.client).json()["job_code"]
    tenant.client.post(f"/evaluations/{cancelled}/cancel")
    fetched = has(admin.get("/organizations/school-a").json(), ORGANIZATION)
    assert fetched["external_id"] == "school-a" and fetched["name"] == "School-A"
    assert fetched["jobs_count"] == 3 and fetched["pending_jobs"] == 1
    assert fetched["evaluations_count"] == 3 and fetched["pending_evaluations"] == 1
    updated = admin.post("/organizations", json={"external_id": "school-a", "name": "A"})
    assert updated.status_code == 200
    assert has(updated.json(), ORGANIZATION)["jobs_count"] == 3


def test_submit_poll_and_read_a_result(tenant, llm):
    llm.reply(GOOD_REPLY)
    response = submit(
        tenant.client,
        "student_work.pdf",
        pdf_bytes(),
        organization_external_id="school-a",
        evaluator_id="lamb_assistant.eval_python_101",
        plugin_name="rubric_eval",
        client_reference="submission_456",
    )
    assert response.status_code == 202, response.text
    accepted = has(response.json(), ACCEPTED)
    code = accepted["job_code"]
    assert accepted["status"] == "pending" and accepted["message"]
    created = moment(accepted["created_at"])

    pending = status_of(tenant, code)
    assert pending["status"] == "pending" and pending["processing_started_at"] is None
    assert moment(pending["created_at"]) == created
    assert pending["progress"]["current"] == 0 and pending["progress"]["percentage"] == 0.0
    not_ready = result_of(tenant, code)
    assert {k: not_ready[k] for k in NOT_READY} == {
        "job_code": code,
        "status": "pending",
        "result": None,
        "message": "Evaluation still in progress",
    }

    run_jobs()

    completed = has(status_of(tenant, code), COMPLETED)
    progress = completed["progress"]
    assert completed["status"] == "completed" and progress["current"] == progress["total"] > 0
    assert progress["percentage"] == 100.0
    started = moment(completed["processing_started_at"])
    finished = moment(completed["processing_completed_at"])
    assert created <= started <= finished
    assert completed["processing_duration_seconds"] == (finished - started).total_seconds()
    assert completed["error_message"] is None and completed["needs_review"] is False

    done = result_of(tenant, code)
    assert done["status"] == "completed" and done["client_reference"] == "submission_456"
    result = has(done["result"], RESULT_BODY)
    assert (result["score"], result["score_normalized"], result["max_score"]) == (8, 0.8, 10)
    assert "uses the right terms" in result["feedback"]
    assert result["feedback_structured"] == {"criteria": []}  # rubric_eval scores the whole
    assert result["model_used"] == "lamb_assistant.eval_python_101"
    assert isinstance(result["processing_time_ms"], int)
    assert isinstance(result["tokens_used"], int) and result["tokens_used"] > 0
    assert result["tokens_used"] == result["provenance"]["total_tokens"]
    assert done["needs_review"] is False and done["review_reason"] is None


def test_the_structured_feedback_has_a_comment_per_criterion(tenant, llm):
    llm.reply(CRITERIA_REPLY)
    params = {"mode": "one_shot"}
    code = submit(
        tenant.client, plugin_name="criteria", plugin_params=params, rubric=RUBRIC
    ).json()["job_code"]
    run_jobs()
    result = result_of(tenant, code)["result"]
    criteria = result["feedback_structured"]["criteria"]
    assert [has(c, CRITERION) and set(c) for c in criteria] == [CRITERION, CRITERION]
    assert [(c["name"], c["score"], c["max_score"], c["comment"]) for c in criteria] == [
        ("Accuracy", 6, 6, "Correct."),
        ("Detail", 0, 4, "No Calvin cycle."),
    ]
    assert result["score"] == 6 and result["max_score"] == 10
    assert [c["verdict"] for c in result["criteria"]] == ["MET", "UNMET"]  # kept as graded


def test_a_failed_evaluation(tenant):
    code = submit(tenant.client).json()["job_code"]  # no model is configured
    run_jobs()
    failed = has(status_of(tenant, code), FAILED)
    assert failed["status"] == "failed"
    assert "No language model is configured" in failed["error_message"]
    assert failed["error_details"]["exception_type"] == "LLMNotConfiguredError"
    assert moment(failed["processing_started_at"]) <= moment(failed["processing_completed_at"])
    result = result_of(tenant, code)
    assert result["status"] == "failed" and result["result"] is None
    assert "No language model is configured" in result["message"]


def test_waiting_for_the_grading_service_is_processing_with_retry_at(app, admin, tenant):
    app.config["EVALUAITOR_LLM_BASE_URL"] = "http://127.0.0.1:9/v1"  # nothing listens there
    code = submit(tenant.client).json()["job_code"]
    run_jobs()
    waiting = status_of(tenant, code)
    assert waiting["status"] == "processing"
    assert moment(waiting["retry_at"]) > datetime.now(UTC)
    assert "Waiting for the grading service" in waiting["progress"]["message"]
    assert waiting["error_message"] is None and waiting["needs_review"] is False
    not_ready = result_of(tenant, code)
    assert (not_ready["status"], not_ready["result"]) == ("processing", None)
    assert not_ready["message"] == "Evaluation still in progress"
    assert codes(tenant, status="processing") == {code}
    assert codes(tenant, status="pending") == set()
    assert admin.get("/organizations/school-a").json()["pending_jobs"] == 1


def test_a_held_grade_is_completed_with_needs_review(tenant, llm, receiver):
    server, url = receiver
    llm.reply(NO_SCORE_REPLY)
    code = submit(tenant.client, callback_url=url).json()["job_code"]
    run_jobs()
    held = has(status_of(tenant, code), COMPLETED)
    assert held["status"] == "completed" and held["needs_review"] is True
    assert "no clear score" in held["review_reason"]
    result = result_of(tenant, code)
    assert result["status"] == "completed" and result["needs_review"] is True
    assert result["review_reason"] == held["review_reason"]
    assert has(result["result"], RESULT_BODY)["score"] is None
    # The callback says the same as the result: same words, same document.
    (_, body), *_ = server.received
    sent = json.loads(body)
    assert sent["event"] == "evaluation.finished" and sent["error_message"] is None
    assert {k: v for k, v in sent.items() if k in result} == result


def test_the_list_filters_by_the_proposals_words(tenant, llm):
    llm.reply(GOOD_REPLY)
    llm.reply(NO_SCORE_REPLY)
    completed = submit(tenant.client, client_reference="a").json()["job_code"]
    other = f"{ESSAY} Another student's.".encode()  # not the first's cached reply
    held = submit(tenant.client, data=other, client_reference="b").json()["job_code"]
    run_jobs()
    pending = submit(tenant.client, client_reference="c").json()["job_code"]
    cancelled = submit(tenant.client, client_reference="d").json()["job_code"]
    tenant.client.post(f"/evaluations/{cancelled}/cancel")

    listed = tenant.client.get("/evaluations", params={"organization_external_id": "school-a"})
    body = has(listed.json(), LIST)
    assert body["total"] == 4
    items = {item["job_code"]: has(item, LIST_ITEM) for item in body["items"]}
    assert {code: item["status"] for code, item in items.items()} == {
        completed: "completed",
        held: "completed",
        pending: "pending",
        cancelled: "cancelled",
    }
    first = items[completed]
    assert first["evaluator_id"] == "fake-model" and first["plugin_name"] == "rubric_eval"
    assert first["original_filename"] == "essay.txt" and first["client_reference"] == "a"
    assert moment(first["created_at"]) <= moment(first["processing_completed_at"])
    assert items[pending]["processing_completed_at"] is None
    assert items[held]["needs_review"] is True and first["needs_review"] is False

    assert codes(tenant, status="completed") == {completed, held}
    assert codes(tenant, status="needs_review") == {held}
    assert codes(tenant, status="pending") == codes(tenant, status="queued") == {pending}
    assert codes(tenant, status="cancelled") == {cancelled}
    assert codes(tenant, status="processing") == codes(tenant, status="failed") == set()
    newest_done = tenant.client.get(
        "/evaluations", params={"sort_by": "processing_completed_at", "sort_order": "asc"}
    )
    assert newest_done.status_code == 200


def test_cancel(tenant):
    code = submit(tenant.client).json()["job_code"]
    response = tenant.client.post(f"/evaluations/{code}/cancel")
    assert response.status_code == 200
    assert has(response.json(), CANCELLED) == {
        "job_code": code,
        "status": "cancelled",
        "message": "Job cancelled successfully",
    }
    result = result_of(tenant, code)
    assert result["status"] == "cancelled" and result["result"] is None
    assert result["message"] == "Evaluation cancelled"


def test_the_names_before_version_1_still_answer(tenant, llm):
    llm.reply(GOOD_REPLY)
    code = submit(tenant.client).json()["job_code"]
    run_jobs()
    status = status_of(tenant, code)
    assert status["progress"]["step"] == status["progress"]["current"]
    assert status["started_at"] == status["processing_started_at"]
    assert status["finished_at"] == status["processing_completed_at"]
    assert status["duration_seconds"] == status["processing_duration_seconds"]
    (item,) = tenant.client.get("/evaluations").json()["items"]
    assert item["finished_at"] == item["processing_completed_at"]
    listed = tenant.client.get("/evaluations", params={"sort_by": "finished_at"}).json()
    assert listed["limit"] == 50 and listed["offset"] == 0
