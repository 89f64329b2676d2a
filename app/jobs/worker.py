"""The RQ worker, and the requeue sweeper that runs beside it in a thread.

RQ's loop quits on any error outside a job, such as Redis dying while it records that a job
ended. :func:`work` then starts a new loop once Redis answers again, so a Redis restart needs
no supervisor (the sweeper hands back what the old loop held).

RQ forks a work horse per job, and a fork copies every lock as it is at that moment. A fork
while the sweeper holds one (SQLAlchemy configures its mappers and caches compiled
statements under process-wide locks) leaves the work horse waiting forever on a lock that
no thread of it will release: the job hangs until RQ's timeout. So a fork and a sweep never
overlap.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

from flask import Flask
from redis.exceptions import RedisError
from rq import Worker
from rq.job import Job
from rq.queue import Queue
from werkzeug.serving import make_server

from app import metrics
from app.evaluation import sweeper

_no_fork = threading.Lock()
log = logging.getLogger(__name__)
#: The pause before a new loop, after RQ's loop quit on an error.
RESTART_PAUSE = 2.0


class SweepingWorker(Worker):
    """RQ's forking worker that waits for a running sweep before it forks, and folds each
    ended work horse's counters into its own files (app.metrics)."""

    #: PROMETHEUS_MULTIPROC_DIR, when the counters go to one.
    metrics_dir: Path | None = None
    #: The latest work horse (RQ forgets its pid once it has ended).
    forked: int = 0

    def fork_work_horse(self, job: Job, queue: Queue) -> None:
        with _no_fork:
            super().fork_work_horse(job, queue)
        self.forked = self.horse_pid

    def execute_job(self, job: Job, queue: Queue) -> None:
        self.forked = 0
        try:
            super().execute_job(job, queue)  # forks the horse and waits for its end
        finally:
            if self.metrics_dir is not None and self.forked:
                metrics.fold_dead(self.forked, self.metrics_dir)


def preload() -> None:
    """Import what the tasks use and configure the ORM once, in the worker, so that each
    forked job starts with them instead of paying for them again (a third of a short job)."""
    from sqlalchemy.orm import configure_mappers

    from app.grading import registry
    from app.grading.safety.reader import reader
    from app.jobs import tasks  # noqa: F401  (the tasks and the whole evaluation core)

    registry.register_builtin()
    configure_mappers()
    reader()  # the steering reader's weights: 0.15 s to read, which each job would pay again


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
                sweeper.retain()
            except Exception:  # the sweeper must outlive a bad moment (e.g. Redis restarting)
                app.logger.exception("sweep failed")


def serve_metrics(app: Flask, address: str) -> None:
    """Serve ``app``'s /metrics alone on ``address`` (host:port) from a daemon thread; every
    other path is 404. A scrape runs its queries while no work horse forks (see above)."""
    host, _, port = address.rpartition(":")

    def metrics_only(environ: dict, start_response: Callable) -> list[bytes]:
        if environ.get("PATH_INFO") != "/metrics":
            start_response("404 Not Found", [("Content-Type", "text/plain")])
            return [b"Not found\n"]
        with _no_fork:
            body = app(environ, start_response)
            try:
                return list(body)
            finally:
                if hasattr(body, "close"):
                    body.close()

    server = make_server(host, int(port), metrics_only)
    threading.Thread(target=server.serve_forever, name="metrics", daemon=True).start()
    log.info("worker metrics on http://%s/metrics", address)


def work(
    queues: Callable[[], list[Queue]],
    connection: Callable,
    *,
    burst: bool,
    metrics_dir: Path | None = None,
) -> None:
    """Run RQ's loop until a stop is asked for (SIGTERM, SIGINT) or a burst is done; a loop
    that quit on an error is replaced by a new worker after :data:`RESTART_PAUSE`."""
    while True:
        worker = None
        try:
            worker = SweepingWorker(queues(), connection=connection())  # it names itself in Redis
            worker.metrics_dir = metrics_dir
            worker.work(burst=burst, with_scheduler=False)
        except RedisError as exc:  # Redis still down, or the teardown could not reach it either
            log.warning("the worker loop ended with Redis unreachable: %s", exc)
        stopped = worker is not None and worker._shutdown_requested_date is not None  # RQ's mark
        if burst or stopped:
            return
        # Until the next loop installs RQ's handlers, a stop is the default one: no job runs.
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        log.warning("the worker loop quit on an error; a new one starts in %s s", RESTART_PAUSE)
        time.sleep(RESTART_PAUSE)
