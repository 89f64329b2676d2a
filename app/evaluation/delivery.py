"""Delivering a message to another system (a score to the LMS gradebook, a column update,
a callback to an API client), at least once, retried on a schedule kept in the database.

One attempt is one RQ job. A failed attempt records what happened and when the next one is
due (``next_attempt_at``); the sweeper queues it then, so a retry survives a Redis restart.
Any failure is retried, an unexpected exception too (it is logged with its traceback): only a
failure the sender knows is final (a 4xx that will not change) or the end of the schedule
marks the row ``failed``, which the people concerned see with a button to send it again.
Receivers must accept a repeat: scores carry a timestamp, callbacks a signed event.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

from flask import current_app
from sqlalchemy.exc import OperationalError

from app.catalogue import N_
from app.evaluation.lifecycle import new_job_id
from app.evaluation.owners import sender_for
from app.extensions import db
from app.jobs import queue
from app.models import PushStatus
from app.models.jobs import Delivery

log = logging.getLogger(__name__)

INTERNAL_ERROR = N_("An internal error stopped this attempt; it will be tried again.")


class DeliveryFailed(Exception):
    """One attempt failed. ``status`` is the receiver's HTTP status, if it answered;
    ``retryable`` is False when trying again cannot help."""

    def __init__(self, message: str, *, status: int | None = None, retryable: bool = True):
        super().__init__(message)
        self.status = status
        self.retryable = retryable


def attempt(kind: str, row_id: int, token: str | None) -> None:
    """One attempt at delivery ``row_id`` of ``kind``, as RQ job ``token`` (None outside RQ).

    A row already sent, failed or superseded, or now meant for a newer RQ job, is left alone.
    """
    model, sender, _setting = sender_for(kind)
    row = db.session.get(model, row_id)
    if row is None or row.status != PushStatus.PENDING:
        return
    if token is not None and row.job_id != token:
        return
    if sender.overtaken(row):
        row.status = PushStatus.SUPERSEDED
        db.session.commit()
        return
    row.attempts += 1
    row.next_attempt_at = None
    db.session.commit()
    try:
        sender.send(row)
    except OperationalError:
        db.session.rollback()
        raise  # the database is away: nothing can be recorded; the sweeper sends it again
    except DeliveryFailed as exc:
        log.warning("%s attempt %s failed: %s", queue.label(row), row.attempts, exc)
        _record_failure(row, str(exc), exc.status, exc.retryable)
    except Exception:
        log.exception("%s attempt %s crashed", queue.label(row), row.attempts)
        _record_failure(row, INTERNAL_ERROR, None, True)
    else:
        row.status = PushStatus.SENT
        row.last_error = None
        db.session.commit()


def _record_failure(row: Delivery, message: str, status: int | None, retryable: bool) -> None:
    db.session.rollback()
    db.session.refresh(row)
    _model, _sender, setting = sender_for(row.__tablename__)
    intervals = current_app.config[setting]
    row.http_status, row.last_error = status, message
    due = False
    if retryable and row.attempts <= len(intervals):
        delay = intervals[row.attempts - 1]
        row.next_attempt_at = datetime.now(UTC) + timedelta(seconds=delay)
        row.job_id = new_job_id()
        due = delay <= 0  # else the sweeper queues it when it is due
    else:
        row.status = PushStatus.FAILED
    db.session.commit()
    if due:
        queue.dispatch(row)


def resend(row: Delivery) -> None:
    """A person's "send again": a failed (or still retrying) delivery starts over now."""
    row.status, row.attempts, row.last_error = PushStatus.PENDING, 0, None
    row.next_attempt_at, row.job_id = None, new_job_id()
    db.session.commit()
    queue.dispatch(row)
