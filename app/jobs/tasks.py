"""The functions RQ runs. Each takes an id and runs in a fresh application context.

A fresh context per job gives each job its own database session, so nothing cached by one
job leaks into the next in a long-lived worker.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

from flask import Flask, current_app, has_app_context

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


def grade_submission(submission_id: int) -> None:
    from app.grading import service

    with _job_context():
        service.grade_submission(submission_id)


def send_score(push_id: int) -> None:
    from app.lti import passback

    with _job_context():
        passback.send(push_id)


def update_lineitem(update_id: int) -> None:
    from app.lti import lineitem_sync

    with _job_context():
        lineitem_sync.send(update_id)


def grade_evaluation(evaluation_id: int) -> None:
    from app.api import grading

    with _job_context():
        grading.grade_evaluation(evaluation_id)


def send_callback(evaluation_id: int) -> None:
    from app.api import callbacks

    with _job_context():
        callbacks.deliver(evaluation_id)
