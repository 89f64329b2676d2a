"""Telling a client that its evaluation finished: a signed POST to its ``callback_url``.

The body is JSON; ``X-Evaluaitor-Timestamp`` carries the Unix time of the attempt and
``X-Evaluaitor-Signature`` is ``sha256=`` + hex HMAC-SHA256, keyed with the organization's
callback secret, over ``<timestamp>.<body bytes>``. Signing the timestamp with the body lets
a client refuse replays of an old delivery.

Delivery is one of the core's deliveries (app.evaluation.delivery), on the passback queue
like score pushes: a target that does not answer 2xx is retried on the configured schedule
(EVALUAITOR_CALLBACK_RETRY_INTERVALS); the ``callback`` row records the status, the attempts
and the last error.

Callback URLs are a server-side request forgery risk: a client could point us at our own
network. They follow the rules of :mod:`app.outbound` (http(s), public addresses unless
EVALUAITOR_ALLOWED_PRIVATE_HOSTS, the address checked is the one connected to, one deadline,
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

from app import outbound
from app.api.documents import result_document
from app.api.errors import InvalidRequest
from app.evaluation.delivery import DeliveryFailed
from app.evaluation.lifecycle import new_job_id
from app.extensions import db
from app.models import Callback, Evaluation, PushStatus

log = logging.getLogger(__name__)

#: The receiver's answer is not read; a large one is refused rather than held in memory.
MAX_ANSWER_BYTES = 64 * 1024

SIGNATURE_HEADER = "X-Evaluaitor-Signature"
TIMESTAMP_HEADER = "X-Evaluaitor-Timestamp"
EVENT = "evaluation.finished"


def sign(secret: str, timestamp: str, body: bytes) -> str:
    """The signature header value for ``body`` sent at ``timestamp``."""
    digest = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256)
    return "sha256=" + digest.hexdigest()


def check_url(url: str) -> None:
    """Refuse a callback URL we must not call; InvalidRequest says why (never which address
    the host resolved to: that would tell a client about our network's names)."""
    try:
        outbound.check_url(url, private=outbound.private_access(current_app.config))
    except outbound.OutboundError as exc:
        raise InvalidRequest(f"callback_url: {exc.summary}.") from exc


def prepare(evaluation: Evaluation) -> Callback:
    """The evaluation's callback, pending again, in the caller's transaction: the caller
    commits it with the final state and then queues it (app.jobs.queue.dispatch)."""
    callback = evaluation.callback or Callback(evaluation=evaluation)
    callback.status, callback.attempts, callback.job_id = PushStatus.PENDING, 0, new_job_id()
    callback.next_attempt_at = callback.http_status = callback.last_error = None
    db.session.add(callback)
    return callback


def payload(evaluation: Evaluation) -> dict[str, Any]:
    """The callback body: the document ``GET /evaluations/{code}/result`` answers (the
    same status words and result), with the event's name and the error, if any."""
    return {
        "event": EVENT,
        **result_document(evaluation).model_dump(mode="json"),
        "error_message": evaluation.error_message,
        "error_details": evaluation.job.error_details,
    }


class CallbackSender:
    """Delivers callbacks (app.evaluation.delivery retries them)."""

    def lane(self, callback: Callback) -> str:
        return f"callback:{callback.id}"

    def overtaken(self, callback: Callback) -> bool:
        return False  # one callback per evaluation, sent again whole when it is final again

    def send(self, callback: Callback) -> None:
        evaluation = callback.evaluation
        secret = evaluation.organization.callback_secret or ""
        body = json.dumps(payload(evaluation), separators=(",", ":")).encode()
        timestamp = str(int(time.time()))
        config = current_app.config
        limits = outbound.Limits(
            config["EVALUAITOR_CALLBACK_TIMEOUT"],
            MAX_ANSWER_BYTES,
            outbound.private_access(config),
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
            # the client sees a short reason, never what the receiver answered
            raise DeliveryFailed(f"the callback URL: {exc.summary}") from exc
        callback.http_status = response.status_code
