"""What ``evaluaitor run`` starts, watches and stops: the embedded Redis, the worker, the web
server and the practice platform.

SIGTERM (systemd, ``docker stop``) or SIGINT (Ctrl+C) stops them in the reverse order of
starting, and ``run`` then exits 0: the web servers stop taking requests; the worker gets RQ's
warm shutdown, so the job it is running may finish, for up to the shutdown grace
(``EVALUAITOR_SHUTDOWN_GRACE``); then Redis stops. A job still running when the grace ends is
cut off (RQ's cold shutdown kills the work horse): its row stays ``processing``, and the sweeper
hands it back. A second signal skips what is left of the grace.

A child that dies on its own (the worker killed by the kernel's OOM killer, Redis crashing) is
logged and started again, the web server serving meanwhile: at once if it had run for a minute,
otherwise after 1 s, 2 s, 4 s ... up to a minute, so one that cannot start does not spin.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from contextlib import suppress
from pathlib import Path
from types import FrameType

import click
from werkzeug.serving import BaseWSGIServer, make_server

from app.jobs.redis_server import EmbeddedRedis

SIGNALS = (signal.SIGTERM, signal.SIGINT)
#: RQ ignores a second signal within a second of the first (it takes it for a duplicate).
RQ_DUPLICATE_WINDOW = 1.1
#: After RQ's cold shutdown, the time the worker has to kill its work horse and sign off.
COLD_STOP_TIMEOUT = 10.0
#: A child that ran this long before it died is restarted at once.
HEALTHY_AFTER = 60.0
MAX_RESTART_DELAY = 60.0


class Shutdown:
    """SIGTERM and SIGINT set ``requested``; another one after that sets ``hurried``.

    The handler only sets events: printing from a signal handler could interrupt the main
    thread's own write to the same stream."""

    def __init__(self) -> None:
        self.requested = threading.Event()
        self.hurried = threading.Event()
        self.signal_name = ""

    def install(self) -> None:
        for signum in SIGNALS:
            signal.signal(signum, self._on_signal)

    def _on_signal(self, signum: int, _frame: FrameType | None) -> None:
        if self.requested.is_set():
            self.hurried.set()
        self.signal_name = self.signal_name or signal.Signals(signum).name
        self.requested.set()


class Restarts:
    """When a child that died may start again (see the module's docstring)."""

    def __init__(self) -> None:
        self.delay = 0.0
        self.started_at = time.monotonic()
        self.not_before: float | None = None  # set while the child is dead

    def started(self) -> None:
        self.started_at = time.monotonic()
        self.not_before = None

    def died(self) -> float:
        """Note a death; returns the seconds to wait before the next start."""
        lived = time.monotonic() - self.started_at
        doubled = min(max(1.0, 2 * self.delay), MAX_RESTART_DELAY)
        self.delay = 0.0 if lived >= HEALTHY_AFTER else doubled
        self.not_before = time.monotonic() + self.delay
        return self.delay

    @property
    def is_due(self) -> bool:
        return self.not_before is not None and time.monotonic() >= self.not_before


class WorkerProcess:
    """``evaluaitor worker`` as a child, in a session of its own.

    Its own session names its whole tree: the worker and its work horse (which
    leads a process group of its own, but stays in the session), even once the worker has died
    and they were reparented. And a terminal's Ctrl+C, sent to the foreground process group,
    reaches ``run`` only: the worker would otherwise get it too, and ``run``'s own request to
    stop would then be a second signal, which RQ takes for a cold shutdown that cuts the job
    off.
    """

    def __init__(self, argv: Sequence[str]) -> None:
        self.argv = list(argv)
        self._process: subprocess.Popen | None = None

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process else None

    def start(self) -> None:
        self._process = subprocess.Popen(self.argv, start_new_session=True)

    def exit_code(self) -> int | None:
        """None while it runs (or before it started)."""
        return self._process.poll() if self._process else None

    def end_leftovers(self) -> None:
        """After the worker died: end what it left (its work horse); the job that was
        running stays ``processing``, to be handed back."""
        if self._process is not None:
            _end_session(self._process.pid, COLD_STOP_TIMEOUT)

    def stop(self, grace: float, hurried: threading.Event) -> None:
        """Warm shutdown for up to ``grace`` seconds, then cold; SIGKILL if even that hangs."""
        process = self._process
        if process is None or process.poll() is not None:
            return
        asked = time.monotonic()
        process.terminate()
        if not _wait(process, grace, hurried):
            _say(
                f"The worker is still busy after {time.monotonic() - asked:.0f} s: "
                "its job is cut off, to be handed back."
            )
            time.sleep(max(0.0, asked + RQ_DUPLICATE_WINDOW - time.monotonic()))
            process.terminate()  # RQ's cold shutdown: it kills its work horse itself
            if not _wait(process, COLD_STOP_TIMEOUT):
                _say("The worker did not stop: killing it and its work horse.")
        _end_session(process.pid, 0.0)
        process.wait()


class Supervisor:
    """Starts ``run``'s children, restarts those that die, and stops them all on a signal.

    Use as a context manager around the whole of ``run``: the handlers are in place before
    anything starts, and whatever started is stopped even when starting fails halfway.
    """

    def __init__(self, grace: float) -> None:
        self.grace = grace
        self.shutdown = Shutdown()
        self.redis: EmbeddedRedis | None = None
        self.worker: WorkerProcess | None = None
        self._servers: list[BaseWSGIServer] = []
        self._restarts: dict[str, Restarts] = {}

    def __enter__(self) -> Supervisor:
        self.shutdown.install()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def start_redis(self, data_dir: Path) -> EmbeddedRedis:
        self.redis = EmbeddedRedis(data_dir).start()
        self._restarts["Redis"] = Restarts()
        return self.redis

    def start_worker(self, argv: Sequence[str]) -> None:
        self.worker = WorkerProcess(argv)
        self.worker.start()
        self._restarts["The worker"] = Restarts()

    def add_server(self, server: BaseWSGIServer) -> None:
        """A server already serving from its own thread; it is stopped first."""
        self._servers.append(server)

    def serve(self, host: str, port: int, app: Callable) -> None:
        """Serve ``app`` until a signal, restarting children that die meanwhile.

        Raises OSError when the address cannot be bound.
        """
        server = make_server(host, port, app, threaded=True)
        threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.1}, name="http", daemon=True
        ).start()
        self.add_server(server)
        while not self.shutdown.requested.wait(0.5):
            self._revive()
        waits = f"; the worker may finish its job for up to {self.grace:g} s" if self.worker else ""
        _say(f"{self.shutdown.signal_name}: stopping{waits} (signal again to stop at once).")

    def stop(self) -> None:
        """Stop everything, newest first: servers, then the worker, then Redis."""
        started = time.monotonic()
        while self._servers:
            server = self._servers.pop()
            server.shutdown()
            server.server_close()
        if self.worker is not None:
            self.worker.stop(self.grace, self.shutdown.hurried)
        if self.redis is not None:
            self.redis.stop()
        _say(f"Stopped in {time.monotonic() - started:.1f} s.")

    def _revive(self) -> None:
        if self.redis is not None and not self.redis.is_running:
            self._restart("Redis", None, self.redis.start)
        if self.worker is not None and (code := self.worker.exit_code()) is not None:
            if self._restarts["The worker"].not_before is None:
                self.worker.end_leftovers()
            self._restart("The worker", code, self.worker.start)

    def _restart(self, name: str, code: int | None, start: Callable[[], object]) -> None:
        restarts = self._restarts[name]
        if restarts.not_before is None:
            delay = restarts.died()
            ended = "stopped" if code is None else f"exited with status {code}"
            _say(f"{name} {ended} unexpectedly; starting it again in {delay:g} s.")
        if not restarts.is_due:
            return
        try:
            start()
        except (OSError, RuntimeError) as exc:  # e.g. Redis's port was taken meanwhile
            _say(f"{name} did not start again ({exc}); retrying in {restarts.died():g} s.")
            return
        restarts.started()
        _say(f"{name} is running again.")


def _say(message: str) -> None:
    """To ``run``'s console (stderr): after the migrations, Alembic's logging settings hide
    INFO records."""
    click.echo(message, err=True)


def _wait(
    process: subprocess.Popen, timeout: float, hurried: threading.Event | None = None
) -> bool:
    """Wait for ``process`` to exit, for up to ``timeout`` or until ``hurried``; True if it did."""
    deadline = time.monotonic() + timeout
    while process.poll() is None:
        if time.monotonic() >= deadline or (hurried is not None and hurried.is_set()):
            return False
        time.sleep(0.1)
    return True


def _end_session(session: int, timeout: float) -> None:
    """SIGTERM every process of ``session`` (from Linux's /proc; nothing elsewhere), and
    SIGKILL those still there after ``timeout`` seconds (at once if 0)."""
    for signum in (signal.SIGTERM, signal.SIGKILL) if timeout else (signal.SIGKILL,):
        members = _session_members(session)
        for pid in members:
            with suppress(ProcessLookupError):
                os.kill(pid, signum)
        deadline = time.monotonic() + timeout
        while members and time.monotonic() < deadline:
            time.sleep(0.1)
            members = _session_members(session)
        if not members:
            return


def _session_members(session: int) -> list[int]:
    """The live processes of ``session`` (zombies are dead: they only wait to be reaped)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # it ended meanwhile
            continue
        # "pid (name) state ppid pgrp session ...": the name may hold spaces and parentheses.
        state, _ppid, _pgrp, sid = stat.rpartition(")")[2].split()[:4]
        if int(sid) == session and state != "Z":
            found.append(int(entry.name))
    return found
