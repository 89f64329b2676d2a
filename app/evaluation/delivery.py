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
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta

from flask import current_app
from redis.exceptions import LockError
from sqlalchemy import update
from sqlalchemy.exc import OperationalError

from app import metrics
from app.catalogue import N_
from app.evaluation.lifecycle import new_job_id
from app.evaluation.owners import sender_for
from app.extensions import db, redis_connection
from app.jobs import queue
from app.models import PushStatus
from app.models.jobs import Delivery

log = logging.getLogger(__name__)

INTERNAL_ERROR = N_("An internal error stopped this attempt; it will be tried again.")
#: Seconds before an attempt whose lane stayed busy is tried again.
LANE_BUSY_DELAY = 1


class DeliveryFailed(Exception):
    """One attempt failed. ``status`` is the receiver's HTTP status, if it answered;
    ``retryable`` is False when trying again cannot help."""

    def __init__(self, message: str, *, status: int | None = None, retryable: bool = True):
        super().__init__(message)
        self.status = status
        self.retryable = retryable


class Superseded(Exception):
    """The receiver already holds a newer message for this target (an LMS's 409 for a report
    older than the one it has): nothing to retry, and nothing failed."""


def attempt(kind: str, row_id: int, token: str | None) -> None:
    """One attempt at delivery ``row_id`` of ``kind``, as RQ job ``token`` (None outside RQ).

    A row already sent, failed or superseded, or now meant for a newer RQ job, is left alone.
    The attempt holds its lane (:func:`lane`) from the check that nothing newer exists to the
    record of its outcome, so two messages for one target never cross on the way.
    """
    model, sender, _setting = sender_for(kind)
    row = db.session.get(model, row_id)
    if row is None or not _ours(row, token):
        return
    with lane(sender.lane(row)) as held:
        if not held:
            _defer(row)
            _count(kind, "deferred")
            return
        db.session.refresh(row)
        if not _ours(row, token):
            return
        claimed = row.job_id
        if sender.overtaken(row):
            _record(row, claimed, status=PushStatus.SUPERSEDED)
            _count(kind, "superseded")
            return
        row.attempts += 1
        row.next_attempt_at = None
        db.session.commit()
        try:
            sender.send(row)
        except OperationalError:
            db.session.rollback()
            raise  # the database is away: nothing can be recorded; the sweeper sends it again
        except Superseded as exc:
            log.info("%s superseded at the receiver: %s", queue.label(row), exc)
            db.session.rollback()
            _record(row, claimed, status=PushStatus.SUPERSEDED, last_error=str(exc))
            _count(kind, "superseded")
        except DeliveryFailed as exc:
            log.warning("%s attempt %s failed: %s", queue.label(row), row.attempts, exc)
            final = _record_failure(row, claimed, str(exc), exc.status, exc.retryable)
            _count(kind, "failed" if final else "will_retry")
        except Exception:
            log.exception("%s attempt %s crashed", queue.label(row), row.attempts)
            _record_failure(row, claimed, INTERNAL_ERROR, None, True)
            _count(kind, "crashed")
        else:
            _record(row, claimed, status=PushStatus.SENT, last_error=None)
            _count(kind, "sent")


def _count(kind: str, outcome: str) -> None:
    metrics.DELIVERIES.labels(kind, outcome).inc()


def _ours(row: Delivery, token: str | None) -> bool:
    return row.status == PushStatus.PENDING and (token is None or row.job_id == token)


@contextmanager
def lane(key: str) -> Iterator[bool]:
    """Hold the lane ``key`` (one target: a student's grade in one column, one callback)
    while the body runs; yields False if it stayed busy for :func:`_lane_wait` seconds.

    A Redis lock that expires after :func:`_lane_ttl` seconds, longer than an attempt can
    take (every request has a deadline), so a holder that died frees its lane by itself.
    """
    lock = redis_connection().lock(
        f"{current_app.config['EVALUAITOR_QUEUE_PREFIX']}-lane:{key}",
        timeout=_lane_ttl(),
        blocking_timeout=_lane_wait(),
    )
    held = lock.acquire()
    try:
        yield held
    finally:
        if held:
            try:
                lock.release()
            except LockError:
                log.warning("lane %s expired before its attempt ended", key)


def _lane_wait() -> float:
    """How long an attempt waits for its busy lane: about one request of the holder."""
    config = current_app.config
    return max(config["EVALUAITOR_AGS_TIMEOUT"], config["EVALUAITOR_CALLBACK_TIMEOUT"])


def _lane_ttl() -> float:
    """Longer than any attempt: an AGS push makes at most 5 requests (token, token again
    after a 401, read or find and create its column, the score), each with its deadline."""
    return 6 * _lane_wait() + 30


def _defer(row: Delivery) -> None:
    """The lane stayed busy: try again shortly (the sweeper queues it), not counted as an
    attempt. Nothing happens if the row was taken over meanwhile."""
    _record(
        row,
        row.job_id,
        next_attempt_at=datetime.now(UTC) + timedelta(seconds=LANE_BUSY_DELAY),
        job_id=new_job_id(),
    )


def _record(row: Delivery, claimed: str | None, **values: object) -> bool:
    """Write ``values`` (with whatever the attempt set on ``row``) only while the row still
    names RQ job ``claimed``: a person's "send again" or a newer final state may have reset
    it meanwhile, and then that newer attempt owns the row. Committed; False if not ours."""
    model = type(row)
    same_job = model.job_id.is_(None) if claimed is None else model.job_id == claimed
    result = db.session.execute(
        update(model)
        .where(model.id == row.id, same_job)
        .values(**values)
        .execution_options(synchronize_session=False)
    )
    if result.rowcount != 1:
        db.session.rollback()
        return False
    db.session.commit()
    return True


def _record_failure(
    row: Delivery, claimed: str | None, message: str, status: int | None, retryable: bool
) -> bool:
    """Record a failed attempt: its retry, or the end (True) when none is left."""
    db.session.rollback()
    db.session.refresh(row)
    _model, _sender, setting = sender_for(row.__tablename__)
    intervals = current_app.config[setting]
    values: dict[str, object] = {"http_status": status, "last_error": message}
    due = False
    if retryable and row.attempts <= len(intervals):
        delay = intervals[row.attempts - 1]
        values["next_attempt_at"] = datetime.now(UTC) + timedelta(seconds=delay)
        values["job_id"] = new_job_id()
        due = delay <= 0  # else the sweeper queues it when it is due
    else:
        values["status"] = PushStatus.FAILED
    if _record(row, claimed, **values) and due:
        db.session.refresh(row)
        queue.dispatch(row)
    return "status" in values


def resend(row: Delivery) -> None:
    """A person's "send again": a failed (or still retrying) delivery starts over now."""
    row.status, row.attempts, row.last_error = PushStatus.PENDING, 0, None
    row.next_attempt_at, row.job_id = None, new_job_id()
    db.session.commit()
    queue.dispatch(row)
