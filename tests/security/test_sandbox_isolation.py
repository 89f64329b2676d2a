"""The code judge's sandbox, attacked by a student's program: nothing of the worker (its
environment, bwrap's command line, its descriptors and connections, its session keyring, its
files) reaches the program, scratch space is private, capped and gone after the run, and a
server whose bwrap cannot build the sandbox sends the work to the teacher with a clear
message instead of an "internal error" or a student's "runtime error".

Every test runs the real bwrap; the end-to-end ones go through the LTI launch, the upload and
the grading worker a student's program goes through.
"""

from __future__ import annotations

import ctypes
import json
import os
import platform
import secrets
import shutil
import socket
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from redis import Redis

from app.extensions import db
from app.judge.sandbox import Limits, SandboxResult, SandboxUnavailable, run_sandboxed
from app.models import Grade, JobStatus
from tests.conftest import run_jobs
from tests.fakes.platform import TEACHER
from tests.test_core_loop import latest_submission, open_activity, status, upload
from tests.test_strategies_loop import configure

FAST = Limits(wall_seconds=5.0, cpu_seconds=3)
REAL_BWRAP = shutil.which("bwrap")
#: Secrets the worker's environment holds in production (app/config.py).
SECRET_NAMES = (
    "SECRET_KEY",
    "EVALUAITOR_LLM_API_KEY",
    "EVALUAITOR_ADMIN_TOKEN",
    "DATABASE_URL",
    "REDIS_URL",
)
UNAVAILABLE = "The code judge cannot run: this server has no working sandbox (bubblewrap)."

pytestmark = pytest.mark.skipif(REAL_BWRAP is None, reason="bubblewrap is not installed")

# A student's program that looks for the worker's secrets wherever the sandbox lets it, prints
# what it finds and exits with the first byte of the first secret (the exit-status channel).
LEAK_PROGRAM = """
import os, sys
NAMES = [name.encode() + b"=" for name in {names!r}]
found = []

def look(where, data):
    print(f"{{where}}: {{len(data)}} bytes")
    for entry in data.replace(b"\\0", b"\\n").split(b"\\n"):
        if any(entry.startswith(name) for name in NAMES):
            found.append(entry)
            print("FOUND", where, entry.decode(errors="replace"))

look("own environment", b"\\n".join(f"{{k}}={{v}}".encode() for k, v in os.environ.items()))
for pid in sorted(os.listdir("/proc")):
    if pid.isdigit() or pid in ("self", "thread-self"):
        for part in ("environ", "cmdline"):
            try:
                look(f"/proc/{{pid}}/{{part}}", open(f"/proc/{{pid}}/{{part}}", "rb").read())
            except OSError as error:
                print(f"/proc/{{pid}}/{{part}}: {{error.strerror}}")
for fd in sorted(os.listdir("/proc/self/fd")):
    try:
        look(f"fd {{fd}}", os.readlink(f"/proc/self/fd/{{fd}}").encode())
    except OSError:
        pass
look("stdin", sys.stdin.buffer.read())
sys.exit(found[0].split(b"=", 1)[1][0] if found else 0)
"""


@pytest.fixture
def workdir() -> Iterator[Path]:
    """A fresh work directory where the judge makes them (pytest's tmp_path is 0700)."""
    path = Path(tempfile.mkdtemp(prefix="judge-test-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def worker_secrets(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The worker's secrets, each a fresh value starting with "Z" (90 as an exit status)."""
    values = {name: f"Z{secrets.token_hex(16)}" for name in SECRET_NAMES}
    values["DATABASE_URL"] = f"postgresql://evaluaitor:{values['DATABASE_URL']}@db/evaluaitor"
    for name, value in values.items():
        monkeypatch.setenv(name, value)
    return values


def py(code: str, workdir: Path, limits: Limits = FAST, **kwargs: object) -> SandboxResult:
    return run_sandboxed(["python3", "-I", "-c", code], workdir, limits=limits, **kwargs)


def leaked(values: dict[str, str], *texts: str | bytes) -> list[str]:
    """The secrets (by name) that appear in any of the texts."""
    joined = "\n".join(t.decode(errors="replace") if isinstance(t, bytes) else t for t in texts)
    return [name for name, value in values.items() if value in joined]


def test_no_secret_of_the_worker_is_readable_in_the_sandbox(
    workdir: Path, worker_secrets: dict[str, str]
) -> None:
    """bwrap's own fork is the sandbox's pid 1, whose environ and cmdline the program reads;
    no host process is visible at all."""
    result = py(LEAK_PROGRAM.format(names=SECRET_NAMES), workdir, stdin=b"2 3\n")
    assert leaked(worker_secrets, result.stdout, result.stderr) == []
    assert (result.stopped, result.exit_code) == ("ok", 0), result.stdout
    assert b"/proc/1/environ: 0 bytes" in result.stdout  # read, and empty
    lines = result.stdout.decode().splitlines()
    processes = {line.split("/")[2] for line in lines if line.startswith("/proc/")}
    assert processes <= {"1", "2", "self", "thread-self"}, "a host process is visible"


def test_bwraps_command_line_holds_no_host_path(workdir: Path) -> None:
    """The bind mounts name the worker's paths; they reach bwrap by a descriptor instead."""
    result = py("print(open('/proc/1/cmdline', 'rb').read())", workdir)
    cmdline = result.stdout
    assert str(workdir).encode() not in cmdline
    assert b"--ro-bind" not in cmdline and b"--uid" not in cmdline and b"--info-fd" not in cmdline
    assert b"--args" in cmdline, cmdline  # what is left: bwrap --args N -- python3 …


def test_the_workers_descriptors_and_connections_stay_out(
    workdir: Path, redis_server, tmp_path: Path
) -> None:
    """Open Redis and TCP/Unix sockets in the worker; the program has only 0, 1 and 2, its
    stdin is a sealed in-memory file (no host path, not writable) and Redis is unreachable."""
    redis = Redis.from_url(redis_server.url)
    redis.set("judge-probe", "worker")
    listener = socket.create_server(("127.0.0.1", 0))
    unix = socket.socket(socket.AF_UNIX)
    unix.bind(str(tmp_path / "worker.sock"))
    unix.listen()
    code = f"""
import os, socket
for fd in sorted(os.listdir("/proc/self/fd"), key=int):
    try:
        print("fd", fd, os.readlink(f"/proc/self/fd/{{fd}}"))
    except OSError:
        pass
for fd in range(3, 64):
    try:
        os.fstat(fd)
        print("OPEN", fd)
    except OSError:
        pass
try:
    os.write(0, b"overwritten")
    print("STDIN WRITTEN")
except OSError as error:
    print("stdin write refused", error.errno)
print("stdin", os.read(0, 100))
try:
    socket.create_connection(("127.0.0.1", {redis_server.port}), timeout=1)
    print("REDIS REACHED")
except OSError as error:
    print("redis unreachable", error.errno)
"""
    try:
        result = py(code, workdir, stdin=b"teacher input")
        assert redis.get("judge-probe") == b"worker"  # the worker's connection still works
    finally:
        listener.close()
        unix.close()
        redis.close()
    out = result.stdout.decode()
    assert result.exit_code == 0, result.stderr
    fds = [line.split(maxsplit=2)[1:] for line in out.splitlines() if line.startswith("fd ")]
    assert [fd for fd, _target in fds] == ["0", "1", "2"], fds
    assert fds[0][1].startswith("/memfd:"), fds  # not a file on the host's disk
    assert "OPEN" not in out and "STDIN WRITTEN" not in out and "REDIS REACHED" not in out
    assert "stdin b'teacher input'" in out


def _keyctl_number() -> int | None:
    return {"x86_64": 250, "aarch64": 219}.get(platform.machine())


def test_the_workers_session_keyring_is_not_readable(workdir: Path) -> None:
    """bwrap keeps the caller's session keyring; the program must not possess the worker's."""
    keyctl = _keyctl_number()
    if keyctl is None:
        pytest.skip("keyctl's syscall number is not known for this architecture")
    libc = ctypes.CDLL(None, use_errno=True)
    value = f"keyring-{secrets.token_hex(16)}".encode()
    add_key = {250: 248, 219: 217}[keyctl]
    key = libc.syscall(add_key, b"user", b"judge-probe", value, len(value), ctypes.c_int(-3))
    if key < 0:
        pytest.skip(f"keyctl is refused here: {os.strerror(ctypes.get_errno())}")
    code = f"""
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
buffer = ctypes.create_string_buffer(4096)
session = libc.syscall({keyctl}, 0, ctypes.c_int(-3), 0)
count = libc.syscall({keyctl}, 11, ctypes.c_long(session), buffer, 4096)
ids = [int.from_bytes(buffer.raw[i:i + 4], "little") for i in range(0, max(count, 0), 4)]
for key in [*ids, {key}]:
    size = libc.syscall({keyctl}, 11, ctypes.c_long(key), buffer, 4096)
    print(key, buffer.raw[:max(size, 0)])
"""
    try:
        result = py(code, workdir)
    finally:
        libc.syscall(keyctl, 3, ctypes.c_long(key))  # KEYCTL_REVOKE
    assert result.exit_code == 0, result.stderr
    assert value not in result.stdout


def test_tmp_and_dev_shm_are_private_capped_and_gone_after_the_run(workdir: Path) -> None:
    """/dev was a tmpfs as large as half the RAM, writable by the program: a capped private
    /dev/shm now, the rest of /dev read-only; nothing is shared between runs or kept."""
    name = f"judge-mark-{uuid.uuid4().hex}"
    limits = Limits(wall_seconds=10.0, cpu_seconds=5, file_bytes=4 * 1024 * 1024)
    write = f"""
import os
for folder in ("/tmp", "/dev/shm", "/dev"):
    try:
        open(f"{{folder}}/{name}", "w").write("mark")
        print("wrote", folder)
    except OSError as error:
        print("refused", folder, error.errno)
written = 0
try:
    for i in range(3):
        with open(f"/dev/shm/fill-{{i}}", "wb") as f:
            f.write(b"x" * 3 * 1024 * 1024)
        written += 3
except OSError as error:
    print("shm full", error.errno)
print("shm MiB", written)
"""
    first = py(write, workdir, limits)
    out = first.stdout.decode()
    assert "wrote /tmp" in out and "wrote /dev/shm" in out, first.stderr
    assert "refused /dev " in out  # /dev itself is read-only
    assert "shm full" in out and "shm MiB 3" in out  # the cap held before 9 MiB
    second = py("import os; print(os.listdir('/tmp'), os.listdir('/dev/shm'))", workdir)
    assert name.encode() not in second.stdout and b"fill-" not in second.stdout
    assert second.stdout.strip() == b"[] []"
    assert not os.path.exists(f"/tmp/{name}") and not os.path.exists(f"/dev/shm/{name}")


# --- a server that cannot sandbox ---------------------------------------------------------

#: What bwrap prints where unprivileged user namespaces are off (a sysctl, or AppArmor's
#: restriction on Ubuntu 24.04).
NO_USERNS_MESSAGE = (
    "bwrap: No permissions to creating new namespace, likely because the kernel does not allow "
    "non-privileged user namespaces. On e.g. debian this can be enabled with 'sysctl "
    "kernel.unprivileged_userns_clone=1'."
)


#: Each way the sandbox is missing or refused, as the script a `bwrap` on PATH runs (None: no
#: bwrap on PATH at all).
SERVERS = {
    "missing": None,
    # bwrap's own refusal where user namespaces are off.
    "no userns (message)": f'echo "{NO_USERNS_MESSAGE}" >&2; exit 1',
    # The real bwrap in a process that may create no user namespace: the kernel refuses.
    "no userns (real)": (
        f'exec {REAL_BWRAP} --unshare-user --disable-userns --dev-bind / / -- {REAL_BWRAP} "$@"'
    ),
    # The real bwrap under Docker's masked /proc: it starts the namespace, then cannot mount a
    # new /proc ("Can't mount proc on /newroot/proc: Operation not permitted").
    "masked /proc (real)": (
        f"exec {REAL_BWRAP} --unshare-user --unshare-pid --dev-bind / / --proc /proc "
        f'--ro-bind /dev/null /proc/timer_list -- {REAL_BWRAP} "$@"'
    ),
}
#: What the administrator's log says for each server where bwrap is present but refused.
REASONS = {
    "no userns (message)": "No permissions to creating new namespace",
    "no userns (real)": "Creating new namespace failed",
    "masked /proc (real)": "Can't mount proc",
}


@pytest.fixture(params=sorted(SERVERS))
def broken_sandbox(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Iterator[str]:
    """PATH leads to no bwrap, or to one that cannot build the sandbox. The folder is
    searchable by others: as root, bwrap is started under each run's own uid."""
    folder = Path(tempfile.mkdtemp(prefix="fake-bwrap-"))
    folder.chmod(0o755)
    script = SERVERS[request.param]
    if script is not None:
        (folder / "bwrap").write_text(f"#!/bin/sh\n{script}\n")
        (folder / "bwrap").chmod(0o755)
    others = [p for p in os.environ["PATH"].split(os.pathsep) if not (Path(p) / "bwrap").exists()]
    monkeypatch.setenv("PATH", os.pathsep.join([str(folder), *others]))
    yield request.param
    shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.parametrize("broken_sandbox", sorted(REASONS), indirect=True)
def test_a_sandbox_that_cannot_be_built_is_reported_not_run(
    broken_sandbox: str, workdir: Path
) -> None:
    """bwrap present but refused: before, its refusal was the program's "exit status 1"."""
    with pytest.raises(SandboxUnavailable, match=REASONS[broken_sandbox]):
        py("print('ran')", workdir)


#: Every strategy that runs the teacher's tests in the judge, with the settings it needs besides.
JUDGING_STRATEGIES = {"code_judge": {}, "ensemble": {"models": ["g", "e"]}}


@pytest.mark.parametrize("strategy", JUDGING_STRATEGIES)
def test_the_teacher_is_told_the_judge_cannot_run_and_the_student_waits(
    app, browser, platform, live_tool, broken_sandbox: str, strategy: str
) -> None:
    """Through the launch, the upload and the worker: the submission waits for the teacher
    with the administrator's fix named, instead of failing with an internal error."""
    app.config["EVALUAITOR_LLM_BASE_URL"] = None
    page = open_activity(browser, platform, live_tool)
    tests = [{"name": "adds", "stdin": "2 3\n", "expected_stdout": "5"}]
    configure(plugin_name=strategy, plugin_params={"tests": tests, **JUDGING_STRATEGIES[strategy]})
    upload(browser, page, "add.py", b"a, b = map(int, input().split())\nprint(a + b)\n")
    run_jobs()
    submission = latest_submission()
    assert submission.status == JobStatus.NEEDS_REVIEW, submission.error_message
    assert submission.review_reason.startswith(UNAVAILABLE)
    assert submission.grade.score is None
    student_page = browser.get(page).text
    assert "Waiting for your teacher" in student_page and "bubblewrap" not in student_page
    assert status(browser, page)["status"] == "needs_review"
    teacher = open_activity(browser, platform, live_tool, user="3", roles=TEACHER)
    assert UNAVAILABLE in browser.get(teacher).text


def test_a_students_program_cannot_read_the_workers_secrets_end_to_end(
    app, browser, platform, live_tool, worker_secrets: dict[str, str]
) -> None:
    """A student uploads a program that hunts for the worker's secrets and reports them in
    its output and exit status; nothing of them reaches the grade, the pages or the verdict."""
    app.config["EVALUAITOR_LLM_BASE_URL"] = None
    page = open_activity(browser, platform, live_tool)
    tests = [{"name": "runs", "stdin": "", "expected_stdout": None}]  # passes on exit 0
    configure(plugin_name="code_judge", plugin_params={"tests": tests})
    upload(browser, page, "leak.py", LEAK_PROGRAM.format(names=SECRET_NAMES).encode())
    run_jobs()
    db.session.expire_all()
    grade = db.session.query(Grade).one()
    run = grade.result.provenance["judge"]["tests"][0]
    assert run["status"] == "passed", run  # exit 0: no secret byte came out as the status
    assert "/proc/1/environ: 0 bytes" in run["stdout"]  # it did read bwrap's environment
    stored = json.dumps([grade.result.provenance, grade.result.criteria, grade.result.feedback])
    teacher = open_activity(browser, platform, live_tool, user="3", roles=TEACHER)
    pages = (
        browser.get(teacher).text + browser.get(f"{teacher}submissions/{grade.submission_id}").text
    )
    assert leaked(worker_secrets, stored, pages) == []
