"""Callbacks: a signed POST when an evaluation finishes, retried when the client's server
fails or hangs, recorded on the evaluation; and the addresses we refuse to call."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from datetime import timedelta

import pytest

from app.evaluation import sweeper
from app.extensions import db, redis_connection
from app.jobs import queue
from app.models import Evaluation
from tests.api.conftest import submit
from tests.api.test_evaluations import GOOD_REPLY
from tests.conftest import run_jobs


def verify(secret: str, headers: dict[str, str], body: bytes) -> bool:
    """What a client does (the README shows the same steps)."""
    timestamp = headers["X-Evaluaitor-Timestamp"]
    expected = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256)
    given = headers["X-Evaluaitor-Signature"].removeprefix("sha256=")
    fresh = abs(time.time() - int(timestamp)) < 300
    return fresh and hmac.compare_digest(expected.hexdigest(), given)


def stored(code: str) -> Evaluation:
    db.session.expire_all()
    return db.session.query(Evaluation).filter_by(code=code).one()


def test_a_completed_evaluation_is_posted_signed(tenant, llm, receiver):
    server, url = receiver
    llm.reply(GOOD_REPLY)
    code = submit(tenant.client, callback_url=url, client_reference="s-9").json()["job_code"]
    run_jobs()

    assert len(server.received) == 1
    headers, body = server.received[0]
    assert verify(tenant.org.callback_secret, headers, body)
    assert not verify("another-secret", headers, body)
    assert not verify(tenant.org.callback_secret, headers, body.replace(b"8", b"9"))
    sent = json.loads(body)
    assert sent["event"] == "evaluation.finished" and sent["job_code"] == code
    assert sent["status"] == "completed" and sent["client_reference"] == "s-9"
    assert sent["result"]["score"] == 8
    status = tenant.client.get(f"/evaluations/{code}/status").json()
    assert status["callback"] == {"url": url, "status": "sent", "attempts": 1, "error": None}


def test_a_callback_redis_lost_is_sent_by_the_sweeper(tenant, llm, receiver):
    server, url = receiver
    llm.reply(GOOD_REPLY)
    code = submit(tenant.client, callback_url=url).json()["job_code"]
    run_jobs(queue.GRADING)  # graded; its callback job waits in Redis...
    redis_connection().flushdb()  # ...which loses it
    assert stored(code).callback.status == "pending"
    assert sweeper.sweep(timedelta(seconds=-1)) == 1
    run_jobs()
    assert [json.loads(body)["job_code"] for _, body in server.received] == [code]
    assert stored(code).callback.status == "sent"
    assert sweeper.sweep(timedelta(seconds=-1)) == 0  # nothing left to resend


def test_failed_and_cancelled_evaluations_are_posted_too(tenant, receiver):
    server, url = receiver
    failed = submit(tenant.client, callback_url=url).json()["job_code"]  # no model configured
    cancelled = submit(tenant.client, callback_url=url).json()["job_code"]
    assert tenant.client.post(f"/evaluations/{cancelled}/cancel").status_code == 200
    run_jobs()
    bodies = {json.loads(body)["job_code"]: json.loads(body) for _, body in server.received}
    assert bodies[failed]["status"] == "failed" and bodies[failed]["result"] is None
    assert "No language model" in bodies[failed]["error_message"]
    assert bodies[cancelled]["status"] == "cancelled"
    assert len(server.received) == 2


def test_a_server_error_is_retried_until_it_answers(tenant, llm, receiver):
    server, url = receiver
    server.statuses = [500, 503]
    llm.reply(GOOD_REPLY)
    code = submit(tenant.client, callback_url=url).json()["job_code"]
    run_jobs()
    assert len(server.received) == 3
    row = stored(code)
    assert row.callback.status == "sent" and row.callback.attempts == 3
    # Each attempt is signed afresh, and the body is the same every time.
    assert len({body for _, body in server.received}) == 1


def test_a_callback_that_keeps_failing_is_recorded(tenant, llm, receiver):
    server, url = receiver
    server.statuses = [500] * 10
    llm.reply(GOOD_REPLY)
    code = submit(tenant.client, callback_url=url).json()["job_code"]
    run_jobs()
    row = stored(code)
    assert len(server.received) == 3  # the first attempt and two retries
    assert row.callback.status == "failed" and row.callback.attempts == 3
    assert "HTTP 500" in row.callback.last_error
    assert row.status == "completed"  # the grade itself is not affected


def test_a_callback_that_hangs_times_out_and_is_recorded(tenant, llm, receiver):
    server, url = receiver
    server.delay = 1.0  # the timeout in these tests is 0.5 s
    llm.reply(GOOD_REPLY)
    code = submit(tenant.client, callback_url=url).json()["job_code"]
    run_jobs()
    row = stored(code)
    assert row.callback.status == "failed" and row.callback.attempts == 3
    assert "timed out" in row.callback.last_error.lower()


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:9/hook",
        "http://localhost/hook",
        "http://10.0.0.8/hook",
        "http://169.254.169.254/latest/meta-data",
        "http://[::1]/hook",
        "http://0.0.0.0/hook",
        "http://2130706433/hook",
        "http://0x7f000001/hook",
        "http://[::ffff:127.0.0.1]/hook",
        "http://[64:ff9b::a9fe:a9fe]/latest/meta-data",
        "http://100.64.0.1/hook",
        "http://no-such-host.invalid/hook",
    ],
)
def test_private_addresses_are_refused_unless_allowed(app, tenant, url):
    app.config["EVALUAITOR_ALLOW_PRIVATE_URLS"] = 0
    response = submit(tenant.client, callback_url=url)
    assert response.status_code == 422
    assert "callback_url" in response.json()["error"]["message"]


def test_the_address_is_checked_again_before_each_attempt(app, tenant, llm, receiver):
    server, url = receiver
    llm.reply(GOOD_REPLY)
    code = submit(tenant.client, callback_url=url).json()["job_code"]
    app.config["EVALUAITOR_ALLOW_PRIVATE_URLS"] = 0  # e.g. DNS now points inside
    run_jobs()
    assert server.received == []
    row = stored(code)
    assert row.callback.status == "failed" and "private" in row.callback.last_error
    assert "127.0.0.1" not in row.callback.last_error  # the client is not told our addresses


def test_an_organization_without_a_callback_secret_cannot_ask_for_callbacks(tenant, receiver):
    tenant.org.callback_secret = None
    db.session.commit()
    response = submit(tenant.client, callback_url=receiver[1])
    assert response.status_code == 422
    assert "callback-secret" in response.json()["error"]["message"]
