"""Finding and ending the processes a test started, by a path that only they mention.

A process a test starts mentions the test's temporary folder: ``evaluaitor run`` and all it
starts (worker, scheduler, work horse) in the environment they inherit
(``EVALUAITOR_INSTANCE_DIR``); redis-server, which writes its title over its command line and
environment, in its working directory (it moves into its ``--dir``). An orphan is reparented,
so parent ids cannot find it; these still can. Linux only (/proc).
"""

from __future__ import annotations

import os
import re
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Process:
    pid: int
    #: Clock ticks from boot to its start: with the pid, names one process even if the pid
    #: is reused later.
    started: int
    command: str

    @property
    def is_alive(self) -> bool:
        """Running (a zombie has ended: it only waits for its parent to read its status)."""
        stat = _stat(self.pid)
        return stat is not None and stat[1] == self.started and stat[0] != "Z"


def find(mark: Path) -> list[Process]:
    """Live processes of this user, other than this one, whose command line, environment or
    working directory mentions the path ``mark`` (itself or anything under it)."""
    pattern = re.compile(re.escape(os.fsencode(mark)) + rb"(?=/|\x00|$)")
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            command = (entry / "cmdline").read_bytes()
            environment = (entry / "environ").read_bytes()
            directory = os.fsencode(os.readlink(entry / "cwd"))
        except OSError:  # ended meanwhile, or another user's
            continue
        stat = _stat(int(entry.name))
        if stat is None or stat[0] == "Z":
            continue
        if any(pattern.search(text) for text in (command, environment, directory)):
            text = command.replace(b"\x00", b" ").decode(errors="replace").strip()
            found.append(Process(int(entry.name), stat[1], text))
    return found


def kill(processes: list[Process], timeout: float = 10.0) -> list[Process]:
    """SIGKILL ``processes``; returns those still alive after ``timeout`` seconds."""
    for process in processes:
        if process.is_alive:
            with suppress(ProcessLookupError):
                os.kill(process.pid, signal.SIGKILL)
    deadline = time.monotonic() + timeout
    alive = [p for p in processes if p.is_alive]
    while alive and time.monotonic() < deadline:
        time.sleep(0.05)
        alive = [p for p in alive if p.is_alive]
    return alive


@contextmanager
def reaped(mark: Path) -> Iterator[None]:
    """On the way out, failures and timeouts included, SIGKILL whatever still mentions
    ``mark``: a test that failed half-way leaves nothing running behind it."""
    try:
        yield
    finally:
        kill(find(mark))


def _stat(pid: int) -> tuple[str, int] | None:
    """A process's state letter and start time, or None if there is no such process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # "pid (name) state ppid ...": the name may hold spaces and parentheses.
    fields = stat.rpartition(")")[2].split()
    return fields[0], int(fields[19])
