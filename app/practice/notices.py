"""Sending an ``LtiAssetProcessorSubmissionNotice`` to the tool's registered handler.

Like Canvas, the platform sends a notice once and never retries it: what the handler answered
is kept for the teacher's view, and the teacher's "Resubmit all files" sends a new notice
(new notice id, same submission id). One notice per attached processor.
"""

from __future__ import annotations

import uuid

import httpx

from app.lti import claims
from app.practice.assignment import (
    NativeSubmission,
    Processor,
    SentNotice,
    current_assignment,
    now_iso,
)
from app.practice.messages import NOTICE_LIFETIME, notice_claims, sign

#: The practice waits this long for the handler (the page waits with it).
TIMEOUT = 10.0
NO_HANDLER = "no handler registered"


def send(submission: NativeSubmission, processor: Processor) -> SentNotice:
    """Sign and POST one notice as ``{"notices": [{"jwt": ...}]}``; record the outcome."""
    state = current_assignment()
    notice_id = str(uuid.uuid4())
    handler = state.handlers.get(claims.SUBMISSION_NOTICE)
    if not handler:
        outcome = NO_HANDLER
    else:
        token = sign(notice_claims(submission, processor, notice_id), NOTICE_LIFETIME)
        try:
            response = httpx.post(handler, json={"notices": [{"jwt": token}]}, timeout=TIMEOUT)
            outcome = f"HTTP {response.status_code}"
        except httpx.HTTPError as exc:
            outcome = f"not delivered: {type(exc).__name__}"
    notice = SentNotice(notice_id, processor.id, now_iso(), outcome)
    state.record_notice(submission.id, notice)
    return notice


def send_to_all(submission: NativeSubmission) -> list[SentNotice]:
    """A new submission: every attached processor gets its own notice."""
    return [send(submission, p) for p in list(current_assignment().processors.values())]
