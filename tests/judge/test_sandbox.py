"""The sandbox itself: escape attempts are contained and the host is left untouched."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

import app
from app.judge.sandbox import Limits, SandboxResult, run_sandboxed

FAST = Limits(wall_seconds=3.0, cpu_seconds=2)


@pytest.fixture
def workdir() -> Iterator[Path]:
    """A fresh work directory where the runner makes them (pytest's tmp_path is 0700)."""
    path = Path(tempfile.mkdtemp(prefix="judge-test-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def py(code: str, workdir: Path, limits: Limits = FAST, **kwargs: object) -> SandboxResult:
    return run_sandboxed(["python3", "-I", "-c", code], workdir, limits=limits, **kwargs)


def sandbox_processes(workdir: Path) -> list[str]:
    """Host processes still running under the uid of workdir's last run, which owns it (there
    should be none left). Only that uid: a parallel test worker's runs have their own."""
    uid = workdir.stat().st_uid
    if uid < 1_000_000:
        return []  # not root: runs share the worker's uid, so none can be told apart
    out = subprocess.run(["ps", "-eo", "uid=,pid=,comm="], capture_output=True, text=True)
    return [line for line in out.stdout.splitlines() if int(line.split()[0]) == uid]


def test_runs_a_program_with_stdin(workdir: Path) -> None:
    (workdir / "echo.py").write_text("import sys; print(sys.stdin.read().upper())")
    result = run_sandboxed(["python3", "echo.py"], workdir, stdin=b"hello", limits=FAST)
    assert (result.stopped, result.exit_code, result.stdout) == ("ok", 0, b"HELLO\n")


def test_unreachable_workdir_is_refused(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("only root hands the work directory to a separate uid")
    with pytest.raises(ValueError, match="not searchable"):
        run_sandboxed(["true"], tmp_path)


def test_nonzero_exit_is_reported(workdir: Path) -> None:
    result = py("import sys; sys.exit(3)", workdir)
    assert (result.stopped, result.exit_code) == ("ok", 3)


def test_environment_is_cleared(workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALUAITOR_SECRET_PROBE", "leak")
    result = py("import os; print(sorted(os.environ))", workdir)
    assert b"EVALUAITOR_SECRET_PROBE" not in result.stdout
    assert b"'PATH'" in result.stdout


def test_runs_as_unprivileged_user_in_own_pid_namespace(workdir: Path) -> None:
    result = run_sandboxed(["sh", "-c", "id -u; ls /proc | grep -c '^[0-9]'"], workdir)
    uid, processes = result.stdout.split()
    assert uid == b"65534"
    assert int(processes) <= 4  # bwrap's init, sh, ls, grep: no host process is visible


def test_infinite_loop_is_stopped_by_cpu_limit(workdir: Path) -> None:
    result = py("while True: pass", workdir, Limits(wall_seconds=5, cpu_seconds=1))
    assert result.stopped == "timeout"
    assert result.wall_seconds < 3


def test_sleeping_program_is_stopped_by_wall_clock(workdir: Path) -> None:
    result = py("import time; time.sleep(30)", workdir, Limits(wall_seconds=1, cpu_seconds=5))
    assert result.stopped == "timeout"
    assert result.wall_seconds < 2


def test_python_fork_bomb_is_contained(workdir: Path) -> None:
    code = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass"
    result = py(code, workdir, Limits(wall_seconds=2, cpu_seconds=2, max_processes=16))
    assert result.stopped == "timeout"
    assert sandbox_processes(workdir) == []
    assert subprocess.run(["true"]).returncode == 0  # the host can still fork


def test_c_fork_bomb_is_contained(workdir: Path) -> None:
    (workdir / "bomb.c").write_text("#include <unistd.h>\nint main(void) { for (;;) fork(); }\n")
    build = run_sandboxed(["gcc", "-o", "bomb", "bomb.c"], workdir, writable=True)
    assert build.exit_code == 0, build.stderr
    result = run_sandboxed(["./bomb"], workdir, limits=Limits(wall_seconds=2, max_processes=16))
    assert result.stopped == "timeout"
    assert sandbox_processes(workdir) == []


def test_memory_hog_is_refused(workdir: Path) -> None:
    result = py("x = bytearray(2 * 1024**3)", workdir, Limits(memory_bytes=256 * 1024**2))
    assert result.stopped == "memory"
    assert b"MemoryError" in result.stderr
    assert py("print('still fine')", workdir).stdout == b"still fine\n"


def test_huge_output_is_cut_at_the_cap(workdir: Path) -> None:
    result = py("while True: print('x' * 1000)", workdir, Limits(output_bytes=10_000))
    assert result.stopped == "output_limit"
    assert result.stdout_truncated
    assert len(result.stdout) == 10_000
    assert result.wall_seconds < 2


def test_host_passwd_is_not_visible(workdir: Path) -> None:
    result = py("print(open('/etc/passwd').read())", workdir)
    assert result.exit_code == 1
    assert b"FileNotFoundError" in result.stderr
    assert b"root:x:0:0" not in result.stdout


def test_application_files_are_not_visible(workdir: Path) -> None:
    app_file = Path(app.__file__).resolve()
    result = py(f"print(open({str(app_file)!r}).read())", workdir)
    assert result.exit_code == 1
    assert b"FileNotFoundError" in result.stderr
    listing = py("import os; print(os.listdir('/'))", workdir).stdout.decode()
    for hidden in ("work", "root", "home", "var", "srv"):
        assert f"'{hidden}'" not in listing


@pytest.fixture
def listening_port() -> Iterator[tuple[socket.socket, int]]:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.2)
    yield server, server.getsockname()[1]
    server.close()


def test_network_is_unreachable(workdir: Path, listening_port: tuple[socket.socket, int]) -> None:
    server, port = listening_port
    code = f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=1)"
    result = py(code, workdir)
    assert result.exit_code == 1
    assert b"ConnectionRefusedError" in result.stderr or b"OSError" in result.stderr
    with pytest.raises(TimeoutError):
        server.accept()  # nothing arrived on the host's listener
    outside = py("import socket; socket.create_connection(('1.1.1.1', 53), timeout=1)", workdir)
    assert outside.exit_code == 1


def test_writes_outside_the_private_tmp_do_not_reach_the_host(workdir: Path) -> None:
    sentinel = f"/tmp/judge-sentinel-{uuid.uuid4().hex}"
    code = (
        f"open({sentinel!r}, 'w').write('x')\n"
        "import os\n"
        "for path in ('/sandbox/x', '/usr/x', '/etc/x', '/x'):\n"
        "    try:\n"
        "        open(path, 'w')\n"
        "        print('WROTE', path)\n"
        "    except OSError as e:\n"
        "        print('refused', path, e.errno)\n"
    )
    result = py(code, workdir)
    assert result.exit_code == 0, result.stderr
    assert b"WROTE" not in result.stdout
    assert not os.path.exists(sentinel)
    assert os.listdir(workdir) == []


def test_private_tmp_is_size_limited(workdir: Path) -> None:
    code = "open('/tmp/big', 'wb').write(b'x' * 64 * 1024**2)"
    result = py(code, workdir, Limits(file_bytes=4 * 1024**2, wall_seconds=5))
    assert result.exit_code == 1
    assert b"File too large" in result.stderr or b"No space left" in result.stderr


def test_bwrap_is_probed_once_per_process(workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The first run proves bwrap can build a sandbox here; later runs go straight to work."""
    real = shutil.which("bwrap")
    folder = Path(tempfile.mkdtemp(prefix="counting-bwrap-"))
    folder.chmod(0o755)
    log = folder / "calls"
    log.touch()  # as root, bwrap starts under each run's own uid, which logs here
    log.chmod(0o666)
    script = folder / "bwrap"
    script.write_text(f'#!/bin/sh\necho "$*" >> {log}\nexec {real} "$@"\n')
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    try:
        outputs = [py(f"print({n})", workdir).stdout for n in range(3)]
        calls = log.read_text().splitlines()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    assert outputs == [b"0\n", b"1\n", b"2\n"]
    assert len(calls) == 4 and calls[0].endswith("-- true"), calls
