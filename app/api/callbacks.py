"""Telling a client that its evaluation finished: a signed POST to its ``callback_url``.

The body is JSON; ``X-Evaluaitor-Timestamp`` carries the Unix time of the attempt and
``X-Evaluaitor-Signature`` is ``sha256=`` + hex HMAC-SHA256, keyed with the organization's
callback secret, over ``<timestamp>.<body bytes>``. Signing the timestamp with the body lets
a client refuse replays of an old delivery.

Delivery is an RQ job on the passback queue (both are deliveries to other systems, with the
same retry semantics). A target that does not answer 2xx is retried with backoff; the row
records the status, the attempts and the last error.

Callback URLs are a server-side request forgery risk: a client could point us at our own
network. They follow the rules of :mod:`app.outbound` (http(s), public addresses unless
EVALUAITOR_ALLOW_PRIVATE_URLS, the address checked is the one connected to, one deadline,
no redirects): checked at submission, and again by the connection of each attempt.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import time
from typing import Any

from flask import current_app
from redis.exceptions import RedisError
from rq import Retry, get_current_job

from app import outbound
from app.api.documents import result_body
from app.api.errors import InvalidRequest
from app.extensions import db
from app.jobs import queue
from app.models import Evaluation

log = logging.getLogger(__name__)

#: The receiver's answer is not read; a large one is refused rather than held in memory.
MAX_ANSWER_BYTES = 64 * 1024

SIGNATURE_HEADER = "X-Evaluaitor-Signature"
TIMESTAMP_HEADER = "X-Evaluaitor-Timestamp"
EVENT = "evaluation.finished"


class CallbackFailed(Exception):
    """One delivery attempt failed; RQ retries the job."""


def sign(secret: str, timestamp: str, body: bytes) -> str:
    """The signature header value for ``body`` sent at ``timestamp``."""
    digest = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256)
    return "sha256=" + digest.hexdigest()


def check_url(url: str) -> None:
    """Refuse a callback URL we must not call; InvalidRequest says why (never which address
    the host resolved to: that would tell a client about our network's names)."""
    try:
        outbound.check_url(url, allow_private=current_app.config["EVALUAITOR_ALLOW_PRIVATE_URLS"])
    except outbound.OutboundError as exc:
        raise InvalidRequest(f"callback_url: {exc.summary}.") from exc


def job_id(evaluation: Evaluation) -> str:
    """One job id per evaluation's callback, so the sweeper can tell whether Redis lost it."""
    return f"callback-{evaluation.code}"


def schedule(evaluation: Evaluation) -> None:
    """Queue the delivery for a finished evaluation (committed first, as for grading)."""
    evaluation.callback_status = "pending"
    db.session.commit()
    intervals = current_app.config["EVALUAITOR_CALLBACK_RETRY_INTERVALS"]
    try:
        queue.queue(queue.PASSBACK).enqueue(
            "app.jobs.tasks.send_callback",
            evaluation.id,
            job_id=job_id(evaluation),
            retry=Retry(max=len(intervals), interval=intervals) if intervals else None,
            result_ttl=3600,
            failure_ttl=7 * 24 * 3600,
        )
    except RedisError as exc:  # the row keeps saying pending; see docs/decisions.md
        log.warning("could not queue the callback of evaluation %s: %s", evaluation.id, exc)


def payload(evaluation: Evaluation) -> dict[str, Any]:
    """The callback body: the job's identity, final status and, if any, its result."""
    return {
        "event": EVENT,
        "job_code": evaluation.code,
        "status": str(evaluation.status),
        "client_reference": evaluation.client_reference,
        "error_message": evaluation.error_message,
        "result": result_body(evaluation),
    }


def deliver(evaluation_id: int) -> None:
    """One attempt (the body of the RQ job). Raises CallbackFailed so RQ retries."""
    evaluation = db.session.get(Evaluation, evaluation_id)
    if evaluation is None or not evaluation.callback_url or evaluation.callback_status == "sent":
        return
    secret = evaluation.organization.callback_secret or ""
    body = json.dumps(payload(evaluation), separators=(",", ":")).encode()
    timestamp = str(int(time.time()))
    evaluation.callback_attempts += 1
    config = current_app.config
    limits = outbound.Limits(
        config["EVALUAITOR_CALLBACK_TIMEOUT"],
        MAX_ANSWER_BYTES,
        bool(config["EVALUAITOR_ALLOW_PRIVATE_URLS"]),
    )
    try:
        with outbound.client(limits) as http:
            response = outbound.fetch(
                http,
                "POST",
                evaluation.callback_url,
                content=body,
                headers={
                    "Content-Type": "application/json",
                    TIMESTAMP_HEADER: timestamp,
                    SIGNATURE_HEADER: sign(secret, timestamp, body),
                    "User-Agent": "Evaluaitor-Callback/1",
                },
            )
            outbound.check_status(response)
    except outbound.OutboundError as exc:
        log.warning("callback of evaluation %s failed: %s", evaluation.id, exc)
        job = get_current_job()
        last = job is None or not job.retries_left
        evaluation.callback_status = "failed" if last else "pending"
        # the client sees a short reason, never what the receiver answered
        evaluation.callback_error = f"the callback URL: {exc.summary}"
        db.session.commit()
        raise CallbackFailed(evaluation.callback_error) from exc
    evaluation.callback_status = "sent"
    evaluation.callback_error = None
    db.session.commit()
