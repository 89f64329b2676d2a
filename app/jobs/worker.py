"""The RQ worker, and the requeue sweeper that runs beside it in a thread.

RQ forks a work horse per job, and a fork copies every lock as it is at that moment. A fork
while the sweeper holds one (SQLAlchemy configures its mappers and caches compiled
statements under process-wide locks) leaves the work horse waiting forever on a lock that
no thread of it will release: the job hangs until RQ's timeout. So a fork and a sweep never
overlap.
"""

from __future__ import annotations

import threading
import time
from datetime import timedelta

from flask import Flask
from rq import Worker
from rq.job import Job
from rq.queue import Queue

from app.evaluation import sweeper

_no_fork = threading.Lock()


class SweepingWorker(Worker):
    """RQ's forking worker that waits for a running sweep before it forks."""

    def fork_work_horse(self, job: Job, queue: Queue) -> None:
        with _no_fork:
            super().fork_work_horse(job, queue)


def preload() -> None:
    """Import what the tasks use and configure the ORM once, in the worker, so that each
    forked job starts with them instead of paying for them again (a third of a short job)."""
    from sqlalchemy.orm import configure_mappers

    from app.grading import registry
    from app.jobs import tasks  # noqa: F401  (the tasks and the whole evaluation core)

    registry.register_builtin()
    configure_mappers()


def sweep_forever(app: Flask) -> None:
    """Every ``EVALUAITOR_SWEEP_EVERY`` seconds, queue due and stranded work (a daemon thread;
    see app.evaluation.sweeper)."""
    every = app.config["EVALUAITOR_SWEEP_EVERY"]
    older_than = timedelta(seconds=app.config["EVALUAITOR_REQUEUE_AFTER"])
    while True:
        time.sleep(every)
        with _no_fork, app.app_context():
            try:
                sweeper.sweep(older_than)
            except Exception:  # the sweeper must outlive a bad moment (e.g. Redis restarting)
                app.logger.exception("sweep failed")
