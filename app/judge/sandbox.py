"""Run one untrusted command under bubblewrap with resource limits (model: docs/sandbox.md).

The sandbox sees only the system toolchains (read-only), a work directory mounted at /sandbox
(writable only for the compile step), a small private tmpfs at /tmp, and fresh /proc and /dev.
No network, no view of other processes, no application files. Limits are rlimits set before
bwrap starts (inherited by everything inside) plus a wall clock and an output cap that this
process enforces by killing bwrap, which takes the whole pid namespace down with it.

Nothing of the worker reaches the sandbox: bwrap starts with an empty environment (its own
process is the sandbox's pid 1, whose /proc/1/environ the program can read), its options come
through a file descriptor rather than its command line, stdin is a sealed in-memory file, no
other descriptor is inherited, and the program gets a fresh session keyring.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import json
import os
import platform
import resource
import secrets
import selectors
import shutil
import signal
import stat
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from app.catalogue import N_

Stopped = Literal["ok", "timeout", "memory", "output_limit", "signal"]

SANDBOX_DIR = "/sandbox"
# Paths inside the sandbox, each a private per-run tmpfs (not the host's shared directories).
SANDBOX_TMP = "/tmp"  # nosec B108
SANDBOX_SHM = "/dev/shm"  # nosec B108
MIB = 1024 * 1024

# Read-only views of the host: the toolchains and what their loaders and launchers read.
# Deliberately absent: /home, /root, /srv, /var, /run, the application's own directory, and
# /etc (except the lines below).
_RO_BINDS = ("/usr", "/etc/alternatives", "/etc/ld.so.cache", "/etc/java-17-openjdk")
_ROOT_SYMLINKS = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")

# How runtimes say they ran out of memory when an allocation hits RLIMIT_AS.
_MEMORY_MARKERS = (
    b"MemoryError",
    b"java.lang.OutOfMemoryError",
    b"std::bad_alloc",
    b"heap out of memory",
    b"Cannot allocate memory",
    b"failed to map segment",
    b"Could not reserve enough space",
)

# Every run gets its own host uid, so RLIMIT_NPROC (counted per real uid) caps this run alone
# and two runs cannot signal or ptrace each other.
_UID_BASE = 1_000_000
_UID_SPAN = 1_000_000
# After a kill, how long bwrap may take to see its namespace empty before we kill it too.
_REAP_SECONDS = 5.0
# bwrap's own environment. Empty: the namespace's init is a fork of bwrap, and the program can
# read its /proc/1/environ (the program's own environment is set with --clearenv/--setenv).
_BWRAP_ENV: dict[str, str] = {}
# keyctl(2) has no libc wrapper; its number per architecture (others: see docs/sandbox.md).
_SYS_KEYCTL = {"x86_64": 250, "aarch64": 219, "riscv64": 219}.get(platform.machine())
_KEYCTL_JOIN_SESSION_KEYRING = 1
_LIBC = ctypes.CDLL(None, use_errno=True)
_SEALS = fcntl.F_SEAL_SEAL | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_WRITE


class SandboxUnavailable(RuntimeError):
    """bwrap is missing or cannot build its namespaces on this server: the judge refuses to run
    code unconfined. str() is the technical detail for the log; user_message is for teachers."""

    user_message = N_(
        "The code judge cannot run: this server has no working sandbox (bubblewrap). Ask the "
        "administrator to see docs/sandbox.md."
    )


@dataclass(frozen=True)
class Limits:
    """Per-run limits. memory_bytes is the address-space cap (RLIMIT_AS)."""

    wall_seconds: float = 5.0
    cpu_seconds: int = 5
    memory_bytes: int = 256 * MIB
    max_processes: int = 32
    output_bytes: int = 64 * 1024
    file_bytes: int = 16 * MIB
    open_files: int = 64


# The probe that proves bwrap can build a sandbox here; bwrap paths it succeeded for, so it runs
# once per process (a failure is probed again next time: the administrator may fix it).
_PROBE_LIMITS = Limits(wall_seconds=10.0, cpu_seconds=5)
_working: set[str] = set()


@dataclass(frozen=True)
class SandboxResult:
    """What happened. exit_code is None when the run was killed or died from a signal."""

    stopped: Stopped
    exit_code: int | None
    signal: int | None
    stdout: bytes
    stderr: bytes
    wall_seconds: float
    stdout_truncated: bool = False
    stderr_truncated: bool = False


def bwrap_path() -> str:
    """Locate bwrap or refuse: judging without isolation is never a silent fallback."""
    path = shutil.which("bwrap")
    if path is None:
        raise SandboxUnavailable("bubblewrap (bwrap) is not installed: scripts/install-sandbox.sh")
    return path


def bwrap_options(
    workdir: Path, limits: Limits, *, writable: bool = False, info_fd: int | None = None
) -> list[str]:
    """bwrap's options that build the sandbox; workdir appears at /sandbox. They hold host
    paths, so they reach bwrap through --args (a file descriptor), not its command line."""
    cmd = [
        "--unshare-all",
        "--unshare-user",
        "--disable-userns",
        "--die-with-parent",
        "--new-session",
        "--uid",
        "65534",
        "--gid",
        "65534",
        "--hostname",
        "sandbox",
    ]
    if info_fd is not None:
        cmd += ["--info-fd", str(info_fd)]
    for path in _RO_BINDS:
        cmd += ["--ro-bind-try", path, path]
    for name in _ROOT_SYMLINKS:
        if Path("/", name).is_symlink():
            cmd += ["--symlink", os.readlink(Path("/", name)), f"/{name}"]
        elif Path("/", name).is_dir():
            cmd += ["--ro-bind", f"/{name}", f"/{name}"]
    cmd += [
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        # bwrap's /dev is a tmpfs the program owns and could fill up to half the RAM: a capped
        # private /dev/shm instead, and the rest of /dev read-only.
        "--size",
        str(limits.file_bytes),
        "--tmpfs",
        SANDBOX_SHM,
        "--remount-ro",
        "/dev",
        "--size",
        str(limits.file_bytes),
        "--tmpfs",
        SANDBOX_TMP,
        "--bind" if writable else "--ro-bind",
        str(workdir),
        SANDBOX_DIR,
        "--remount-ro",
        "/",
        "--chdir",
        SANDBOX_DIR,
        "--clearenv",
        "--setenv",
        "PATH",
        "/usr/local/bin:/usr/bin:/bin",
        "--setenv",
        "HOME",
        SANDBOX_TMP,
        "--setenv",
        "LANG",
        "C.UTF-8",
        "--setenv",
        "TMPDIR",
        SANDBOX_TMP,
    ]
    return cmd


def _sealed_memfd(name: str, data: bytes) -> int:
    """An in-memory file holding data, sealed read-only and rewound: no host path, and
    nothing the sandbox can change."""
    fd = os.memfd_create(name, os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, _SEALS)
        os.lseek(fd, 0, os.SEEK_SET)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _join_new_session_keyring() -> None:
    """bwrap keeps the caller's session keyring, so the program could read the worker's keys
    (keyctl read); an anonymous new one holds nothing. Where keyctl is refused (seccomp, as in
    Docker's default profile) the program is refused it too."""
    if _SYS_KEYCTL is None:
        return
    call, operation = ctypes.c_long(_SYS_KEYCTL), ctypes.c_long(_KEYCTL_JOIN_SESSION_KEYRING)
    if _LIBC.syscall(call, operation, None) < 0:
        code = ctypes.get_errno()
        if code not in (errno.ENOSYS, errno.EPERM):
            raise OSError(code, f"keyctl(JOIN_SESSION_KEYRING): {os.strerror(code)}")


def _preexec(limits: Limits, uid: int | None, nproc_base: int) -> None:
    """In the forked child before exec: set rlimits, then drop to the run's own uid."""
    cpu = max(1, int(limits.cpu_seconds))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes))
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_bytes, limits.file_bytes))
    resource.setrlimit(resource.RLIMIT_NOFILE, (limits.open_files, limits.open_files))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    nproc = nproc_base + limits.max_processes
    resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
    if uid is not None:
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
    _join_new_session_keyring()  # after setuid: the new keyring belongs to the run's uid


def _own_process_count() -> int:
    """Processes of our uid: without root, RLIMIT_NPROC counts them against the sandbox too."""
    me = os.getuid()
    count = 0
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                count += entry.stat().st_uid == me
            except FileNotFoundError:
                continue
    return count


def run_sandboxed(
    argv: Sequence[str],
    workdir: Path,
    *,
    stdin: bytes = b"",
    limits: Limits | None = None,
    writable: bool = False,
) -> SandboxResult:
    """Run argv inside the sandbox with workdir at /sandbox (read-only unless writable).

    Raises SandboxUnavailable when this server cannot build the sandbox: argv is then never run.
    """
    bwrap = bwrap_path()
    if bwrap not in _working:
        _probe(bwrap)
        _working.add(bwrap)
    return _run(bwrap, argv, Path(workdir), stdin, limits or Limits(), writable)


def _probe(bwrap: str) -> None:
    """Build one sandbox around `true`. bwrap present but refused its namespaces (no
    unprivileged user namespaces, a container's seccomp or AppArmor profile, a masked /proc)
    fails here with bwrap's own reason, rather than as every student's "runtime error"."""
    workdir = Path(tempfile.mkdtemp(prefix="judge-probe-"))
    try:
        result = _run(bwrap, ["true"], workdir, b"", _PROBE_LIMITS, False)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    if result.stopped != "ok" or result.exit_code != 0:
        reason = result.stderr.decode(errors="replace").strip() or result.stopped
        raise SandboxUnavailable(f"{bwrap} cannot build a sandbox: {reason}")


def _run(
    bwrap: str,
    argv: Sequence[str],
    workdir: Path,
    stdin: bytes,
    limits: Limits,
    writable: bool,
) -> SandboxResult:
    """One run under a given bwrap: run_sandboxed's work, and the probe's without the probe."""
    workdir = workdir.resolve()
    if os.geteuid() == 0:
        _check_reachable(workdir)
        uid: int | None = _UID_BASE + secrets.randbelow(_UID_SPAN)
        nproc_base = 0
        _chown_tree(workdir, uid)
    else:
        uid, nproc_base = None, _own_process_count()
    info_read, info_write = os.pipe()
    args_fd: int | None = None
    try:
        options = bwrap_options(workdir, limits, writable=writable, info_fd=info_write)
        args_fd = _sealed_memfd("bwrap-args", b"".join(os.fsencode(o) + b"\0" for o in options))
        cmd = [bwrap, "--args", str(args_fd), "--", *argv]
        proc = _start(cmd, stdin, limits, uid, nproc_base, (info_write, args_fd))
    finally:
        os.close(info_write)
        if args_fd is not None:
            os.close(args_fd)
    started = time.monotonic()
    try:
        init_pid = _read_child_pid(info_read)
        out, err, killed_for = _collect(
            proc, init_pid, started + limits.wall_seconds, limits.output_bytes
        )
    except BaseException:
        _kill(proc, None)
        raise
    finally:
        os.close(info_read)
    try:
        code = proc.wait(timeout=_REAP_SECONDS)
    except subprocess.TimeoutExpired:
        _kill(proc, None)
        code = proc.wait()
    if init_pid is None and killed_for is None and code != 0:
        # bwrap reports the child's pid before letting it run: without one, argv never ran.
        reason = err.decode(errors="replace").strip() or f"exit status {code}"
        raise SandboxUnavailable(f"{bwrap} failed before starting the program: {reason}")
    return _result(code, out, err, killed_for, time.monotonic() - started, limits)


def _start(
    cmd: list[str],
    stdin: bytes,
    limits: Limits,
    uid: int | None,
    nproc_base: int,
    keep_fds: tuple[int, ...],
) -> subprocess.Popen[bytes]:
    """Start bwrap in its own process group with an empty environment and stdin from a sealed
    in-memory file (no writer thread needed). close_fds keeps every other descriptor of the
    worker (database and Redis connections, listening sockets) out of the sandbox."""
    stdin_fd = _sealed_memfd("stdin", stdin)
    try:
        return subprocess.Popen(
            cmd,
            stdin=stdin_fd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            close_fds=True,
            pass_fds=keep_fds,
            env=_BWRAP_ENV,
            start_new_session=True,
            preexec_fn=lambda: _preexec(limits, uid, nproc_base),
        )
    finally:
        os.close(stdin_fd)


def _read_child_pid(fd: int) -> int | None:
    """bwrap's --info-fd JSON names the host pid of the namespace's init; None if bwrap failed
    before writing it (the fd then reaches EOF)."""
    data = b""
    while chunk := os.read(fd, 4096):
        data += chunk
        with contextlib.suppress(ValueError):
            return int(json.loads(data)["child-pid"])
    return None


def _check_reachable(workdir: Path) -> None:
    """bwrap runs as the run's uid, so every parent of workdir must be searchable by others
    (true of the default temporary directory, not of e.g. pytest's 0700 tmp_path)."""
    for parent in workdir.parents:
        if not parent.stat().st_mode & stat.S_IXOTH:
            raise ValueError(f"{parent} is not searchable by others; use tempfile.mkdtemp()")


def _chown_tree(root: Path, uid: int) -> None:
    """Hand the work directory to the run's uid so bwrap (unprivileged) can mount and use it."""
    os.chown(root, uid, uid)
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            os.chown(os.path.join(dirpath, name), uid, uid, follow_symlinks=False)


def _kill(proc: subprocess.Popen[bytes], init_pid: int | None) -> None:
    """Kill the namespace's init: the kernel then kills everything in the pid namespace and
    bwrap, which waits for it, exits once all are gone. Killing bwrap itself is the fallback
    (--die-with-parent then kills init, but asynchronously)."""
    if init_pid is not None and proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(init_pid, signal.SIGKILL)
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)


def _collect(
    proc: subprocess.Popen[bytes], init_pid: int | None, deadline: float, cap: int
) -> tuple[bytes, bytes, Stopped | None]:
    """Read both pipes until EOF, the deadline, or a stream passing cap bytes; kill on either."""
    assert proc.stdout is not None and proc.stderr is not None
    out, err = bytearray(), bytearray()
    buffers = {proc.stdout.fileno(): out, proc.stderr.fileno(): err}
    killed_for: Stopped | None = None
    with selectors.DefaultSelector() as sel:
        for stream in (proc.stdout, proc.stderr):
            sel.register(stream, selectors.EVENT_READ)
        while sel.get_map() and killed_for is None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                killed_for = "timeout"
                break
            for key, _ in sel.select(timeout=remaining):
                chunk = os.read(key.fd, 65536)
                if not chunk:
                    sel.unregister(key.fileobj)
                    continue
                buffers[key.fd] += chunk
                if len(buffers[key.fd]) > cap:
                    killed_for = "output_limit"
    if killed_for:
        _kill(proc, init_pid)
    proc.stdout.close()
    proc.stderr.close()
    return bytes(out), bytes(err), killed_for


def _result(
    code: int,
    out: bytes,
    err: bytes,
    killed_for: Stopped | None,
    wall: float,
    limits: Limits,
) -> SandboxResult:
    """Classify the end of a run. bwrap reports a child killed by signal N as exit 128+N."""
    sig = -code if code < 0 else (code - 128 if code > 128 else None)
    stopped: Stopped
    if killed_for:
        stopped = killed_for
    elif sig == signal.SIGXCPU:
        stopped = "timeout"
    elif code != 0 and any(marker in err for marker in _MEMORY_MARKERS):
        stopped = "memory"
    elif sig is not None:
        stopped = "signal"
    else:
        stopped = "ok"
    return SandboxResult(
        stopped=stopped,
        exit_code=None if killed_for or sig is not None else code,
        signal=sig,
        stdout=out[: limits.output_bytes],
        stderr=err[: limits.output_bytes],
        wall_seconds=wall,
        stdout_truncated=len(out) > limits.output_bytes,
        stderr_truncated=len(err) > limits.output_bytes,
    )
