"""The counters and histograms that processes add to, and the multiprocess directory they
write them to (Prometheus's client library, in its multiprocess mode).

The web server runs several processes (gunicorn) and the worker forks a work horse per job, so
a counter lives in no single process: each process writes its values to files of its own in
``PROMETHEUS_MULTIPROC_DIR`` (the library chooses that mode when the variable is set as it is
first imported), and ``/metrics`` (app.monitoring) adds up every file there. A work horse's
files outlive it, so its counts are kept; the worker folds them into one file of its own when
the horse has ended (:func:`fold_dead`), or a school's month of jobs would leave tens of
thousands of files for every scrape to read.

Labels have few values each: a model's name, a status, an outcome; never a person, a course
or a tenant's name (app.monitoring's spend gauge names organizations by their number).

Flask-free, so the grading layer may count its model calls here (tests/test_architecture.py).
"""

from __future__ import annotations

import fcntl
import glob
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from prometheus_client import Counter, Histogram, values
from prometheus_client.mmap_dict import MmapedDict
from prometheus_client.multiprocess import mark_process_dead

#: Every metric is labelled: a labelled metric makes its value (and its file) only at first
#: use, in the process that uses it.
MODEL_CALLS = Counter(
    "evaluaitor_model_calls", "Model calls made (replies from the cache left out).", ["model"]
)
MODEL_TOKENS = Counter(
    "evaluaitor_model_tokens", "Tokens the model server reported.", ["model", "kind"]
)
MODEL_COST = Counter(
    "evaluaitor_model_cost",
    "What the model calls cost, in the currency of EVALUAITOR_LLM_PRICES (priced models only).",
    ["model"],
)
MODEL_ERRORS = Counter(
    "evaluaitor_model_errors",
    "Model calls that failed, after the client's retries, by the error's kind.",
    ["model", "error"],
)
TIME_TO_GRADE = Histogram(
    "evaluaitor_time_to_grade_seconds",
    "From a grading job's latest queueing (an upload, a regrade, a retry) to its result, by "
    "its final status.",
    ["outcome"],
    buckets=(5, 15, 30, 60, 120, 300, 600, 1800, 3600, 4 * 3600, 12 * 3600),
)
DELIVERIES = Counter(
    "evaluaitor_delivery_attempts",
    "Attempts to deliver a score, a gradebook column or a callback, by outcome.",
    ["kind", "outcome"],
)
SWEEPER_ACTIONS = Counter(
    "evaluaitor_sweeper_actions", "What the sweeper queued, handed back or failed.", ["action"]
)

#: Value files of these kinds hold sums, so a dead process's may be folded into another's.
_SUMMED = ("counter", "histogram")
_LOCK = ".lock"


def model_label(model: str) -> str:
    """A model's name as a label: bounded, since an activity may name any model."""
    return (model or "unknown")[:80]


def directory(config_value: str | None) -> Path | None:
    """The multiprocess directory the settings name (PROMETHEUS_MULTIPROC_DIR), if any."""
    return Path(config_value) if config_value else None


def prepare(path: Path) -> None:
    """Make ``path`` empty, for a process tree that starts (``evaluaitor run``, gunicorn's
    master): files of an earlier run name processes that are gone, maybe reused pids."""
    path.mkdir(parents=True, exist_ok=True)
    for stale in path.glob("*.db"):
        stale.unlink(missing_ok=True)


def use_directory(path: Path) -> None:
    """Empty ``path`` and write this process's counters there, and its children's (they
    inherit the variable), when the directory is chosen after the library was imported
    (``evaluaitor run``). The library picks its mode from the variable as it is imported;
    every metric here is labelled, so no value exists yet and the mode can still change."""
    prepare(path)
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(path)
    if not getattr(values.ValueClass, "_multiprocess", False):
        values.ValueClass = values.MultiProcessValue()


@contextmanager
def reading(path: Path) -> Iterator[list[str]]:
    """The value files of ``path``, not folded meanwhile (a shared lock against
    :func:`fold_dead`: a scrape that read a horse's file and then its fold would count twice)."""
    with _locked(path, fcntl.LOCK_SH):
        yield glob.glob(os.path.join(path, "*.db"))


def fold_dead(pid: int, path: Path) -> None:
    """After process ``pid`` ended: add its counters and histograms to this process's archive
    files and delete its own, and drop its live gauges (the library's bookkeeping)."""
    mark_process_dead(pid, str(path))
    with _locked(path, fcntl.LOCK_EX):
        for kind in _SUMMED:
            dead = path / f"{kind}_{pid}.db"
            if not dead.exists():
                continue
            archive = MmapedDict(str(path / f"{kind}_archive-{os.getpid()}.db"))
            try:
                for key, value, timestamp, _pos in MmapedDict.read_all_values_from_file(str(dead)):
                    archive.write_value(key, archive.read_value(key)[0] + value, timestamp)
            finally:
                archive.close()
            dead.unlink()


@contextmanager
def _locked(path: Path, how: int) -> Iterator[None]:
    path.mkdir(parents=True, exist_ok=True)  # a web process may scrape before anyone counted
    with open(path / _LOCK, "a") as handle:
        fcntl.flock(handle, how)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
