"""The functions RQ runs. Each takes an id and runs in a fresh application context.

A fresh context per job gives each job its own database session, so nothing cached by one
job leaks into the next in a long-lived worker.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

from flask import Flask, current_app, has_app_context
from rq import get_current_job

from app.evaluation import delivery, pipeline
from app.extensions import db

_worker_app: Flask | None = None
_app_pid: int | None = None


def use_app(app: Flask) -> None:
    """Called by the worker command: jobs reuse this app instead of building their own."""
    global _worker_app, _app_pid
    _worker_app, _app_pid = app, os.getpid()


@contextmanager
def _job_context() -> Iterator[None]:
    global _app_pid
    if has_app_context():
        app = current_app._get_current_object()
    else:
        if _worker_app is None:
            from app import create_app

            use_app(create_app())
        app = _worker_app
    with app.app_context():
        if _app_pid != os.getpid():
            # RQ forked a work horse: pooled connections belong to the parent, so drop them.
            db.engine.dispose(close=False)
            _app_pid = os.getpid()
        yield


def grade(job_id: int) -> None:
    """The grading job (app.evaluation.pipeline)."""
    with _job_context():
        pipeline.run(job_id, _rq_job_id())


def deliver(kind: str, row_id: int) -> None:
    """One attempt at a score push, a column update or a callback (app.evaluation.delivery)."""
    with _job_context():
        delivery.attempt(kind, row_id, _rq_job_id())


def process_notice(notice_id: int) -> None:
    """An LMS's submission notice becomes a graded submission (app.lms.asset_processor)."""
    from app.lms import asset_processor  # the LMS side registers with the core, not the reverse

    with _job_context():
        asset_processor.process(notice_id)


def fetch_assets(submission_id: int) -> None:
    """An LMS-made submission's files fetched again (a teacher's retry, or the sweeper's)."""
    from app.lms import asset_processor

    with _job_context():
        asset_processor.fetch_again(submission_id)


def _rq_job_id() -> str | None:
    job = get_current_job()
    return job.id if job else None
