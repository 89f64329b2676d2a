"""gunicorn's hooks for Evaluaitor (gunicorn reads ./gunicorn.conf.py by itself; the image
runs it from here).

With PROMETHEUS_MULTIPROC_DIR set, the master empties the directory as it starts (files of an
earlier run name processes that are gone, and pids that may be reused) and does the library's
bookkeeping when a web process ends. With EVALUAITOR_LOG_FORMAT=json, gunicorn's own lines
are JSON too (app.logs).
"""

from __future__ import annotations

import os
from pathlib import Path

_COUNTERS = os.environ.get("PROMETHEUS_MULTIPROC_DIR")


def on_starting(server) -> None:
    if _COUNTERS:
        from app import metrics

        metrics.prepare(Path(_COUNTERS))


def child_exit(server, worker) -> None:
    if _COUNTERS:
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(worker.pid, _COUNTERS)


if os.environ.get("EVALUAITOR_LOG_FORMAT") == "json":
    logconfig_dict = {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"json": {"()": "app.logs.JsonFormatter"}},
        "handlers": {
            "stderr": {
                "class": "logging.StreamHandler",
                "formatter": "json",
                "filters": ["redact"],
            }
        },
        "filters": {"redact": {"()": "app.redaction.RedactCredentials"}},
        "root": {"level": "INFO", "handlers": ["stderr"]},
        "loggers": {
            "gunicorn.error": {"level": "INFO", "handlers": ["stderr"], "propagate": False},
            "gunicorn.access": {"level": "INFO", "handlers": ["stderr"], "propagate": False},
        },
    }
