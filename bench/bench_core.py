"""Core loop latencies under concurrency, next to bare Flask handlers doing the same job.

Runs Evaluaitor and bench/bare_app.py as separate processes on 127.0.0.1, each under gunicorn
with the same workers and threads (as in production), with the fake Moodle from the tests as
the platform and a real Redis. Phases, each with N concurrent clients (default 20): login +
launch, upload of a 1 MB PDF, page reload (the student page a browser loads after a launch or
an upload), and status polls. Prints p50/p95 per phase and the ratio to the bare handler.
Targets (issue #12): launch, upload and page within 1.3x of the bare handlers; status p95 <
20 ms. No grading worker runs: the jobs only pile up in Redis.

    .venv/bin/python bench/bench_core.py [--clients 20] [--rounds 10] [--workers 2] [--repeat 2]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

import httpx
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from app.jobs.redis_server import EmbeddedRedis  # noqa: E402
from tests.documents import pdf_bytes  # noqa: E402
from tests.fakes.platform import FakePlatform  # noqa: E402

#: The student page polls this often (app/static/status.js).
PAGE_POLL_SECONDS = 1.5


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_up(url: str, process: subprocess.Popen) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"server for {url} exited with {process.returncode}")
        try:
            httpx.get(url, timeout=1)
            return
        except httpx.TransportError:
            time.sleep(0.1)
    raise SystemExit(f"{url} did not come up")


def gunicorn(app: str, port: int, workers: int, env: dict, log: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            app,
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            str(workers),
            "--threads",
            "8",
            "--keep-alive",  # longer than the paced pollers' pauses
            "10",
            "--worker-class",
            "gthread",
        ],  # fmt: skip
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=open(log, "w"),
    )


def start_tool(
    tmp: Path, redis_url: str, platform: FakePlatform, workers: int
) -> tuple[str, subprocess.Popen]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("EVALUAITOR_")}
    env |= {
        "EVALUAITOR_INSTANCE_DIR": str(tmp / "instance"),
        "REDIS_URL": redis_url,
        "EVALUAITOR_ALLOW_PRIVATE_URLS": "1",  # the fake Moodle's keys are on 127.0.0.1
    }
    cli = [sys.executable, "-m", "app.cli"]
    subprocess.run([*cli, "db", "upgrade"], env=env, check=True, capture_output=True, cwd=ROOT)
    subprocess.run(
        [
            *cli,
            "platform",
            "add",
            "--issuer",
            platform.issuer,
            "--client-id",
            platform.client_id,
            "--auth-login-url",
            platform.auth_login_url,
            "--auth-token-url",
            platform.auth_token_url,
            "--key-set-url",
            platform.key_set_url,
            "--deployment-id",
            platform.deployment_id,
        ],  # fmt: skip
        env=env,
        check=True,
        capture_output=True,
        cwd=ROOT,
    )
    # gunicorn workers share keys and the secret through the instance folder: create them now.
    subprocess.run([*cli, "platform", "list"], env=env, check=True, capture_output=True, cwd=ROOT)
    port = free_port()
    process = gunicorn("wsgi:app", port, workers, env, tmp / "tool.log")
    url = f"http://127.0.0.1:{port}"
    wait_up(url + "/health", process)
    return url, process


def bare_environment(
    tmp: Path, redis_url: str, platform: FakePlatform, secret: str
) -> dict[str, str]:
    """What bench/bare_app.py reads: the platform, a fresh signing key and its folders."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    key_file = tmp / "bare.pem"
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    (tmp / "bare-uploads").mkdir()
    return {
        "BARE_ISSUER": platform.issuer,
        "BARE_CLIENT_ID": platform.client_id,
        "BARE_AUTH_LOGIN_URL": platform.auth_login_url,
        "BARE_AUTH_TOKEN_URL": platform.auth_token_url,
        "BARE_KEY_SET_URL": platform.key_set_url,
        "BARE_DEPLOYMENT_ID": platform.deployment_id,
        "BARE_PRIVATE_KEY_FILE": str(key_file),
        "BARE_SECRET": secret,
        "BARE_REDIS_URL": redis_url,
        "BARE_UPLOAD_DIR": str(tmp / "bare-uploads"),
    }


def start_bare(
    tmp: Path, redis_url: str, platform: FakePlatform, workers: int
) -> tuple[str, subprocess.Popen]:
    port = free_port()
    env = (
        os.environ
        | bare_environment(tmp, redis_url, platform, os.urandom(16).hex())
        | {"PYTHONPATH": str(ROOT / "bench")}
    )
    process = gunicorn("bare_app:app", port, workers, env, tmp / "bare.log")
    url = f"http://127.0.0.1:{port}"
    wait_up(url + "/lti/login", process)
    return url, process


def launch(client: httpx.Client, platform: FakePlatform, base: str, user: str) -> tuple[float, str]:
    """One login + launch; returns the tool's time (both requests) and where it sent us."""
    # pylti1p3 leaves a state cookie per login for 5 minutes; dozens of launches a minute from
    # one client (not a thing a person does) would pile them past the header size limit.
    client.cookies.clear()
    params = platform.login_params(target_link_uri=base + "/lti/launch", user=user)
    started = time.perf_counter()
    login = client.post(base + "/lti/login", data=params)
    elapsed = time.perf_counter() - started
    assert login.status_code == 302, login.text[:300]
    _, fields = platform.authorize(dict(parse_qsl(urlsplit(login.headers["Location"]).query)))
    started = time.perf_counter()
    launched = client.post(base + "/lti/launch", data=fields)
    elapsed += time.perf_counter() - started
    assert launched.status_code == 303, launched.text[:300]
    return elapsed, launched.headers["Location"]


def timed(call: Callable[[], httpx.Response], expect: int) -> float:
    started = time.perf_counter()
    response = call()
    elapsed = time.perf_counter() - started
    assert response.status_code == expect, (response.status_code, response.text[:300])
    return elapsed


def server_cpu(process: subprocess.Popen) -> float:
    """CPU seconds used so far by a gunicorn server: its master and its workers. Latencies on
    a shared machine move with whatever else runs; the CPU a request costs hardly does."""
    pids = {process.pid}
    for children in Path(f"/proc/{process.pid}/task").glob("*/children"):
        pids.update(int(pid) for pid in children.read_text().split())
    ticks = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except FileNotFoundError:
            continue
        ticks += int(fields[11]) + int(fields[12])  # utime and stime
    return ticks / os.sysconf("SC_CLK_TCK")


def run_clients(clients: int, work: Callable[[int], dict[str, list[float]]]) -> dict:
    with ThreadPoolExecutor(clients) as pool:
        results = list(pool.map(work, range(clients)))
    merged: dict[str, list[float]] = {}
    for result in results:
        for name, values in result.items():
            merged.setdefault(name, []).extend(values)
    return merged


def percentiles(values: list[float]) -> tuple[float, float]:
    cuts = statistics.quantiles(values, n=100, method="inclusive")
    return cuts[49] * 1000, cuts[94] * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers per server")
    parser.add_argument("--repeat", type=int, default=2, help="alternating runs per step")
    args = parser.parse_args()
    document = pdf_bytes(padding=1024 * 1024)
    tmp = Path(tempfile.mkdtemp(prefix="evaluaitor-bench-"))
    try:
        with EmbeddedRedis(tmp / "redis", persistent=False) as redis, FakePlatform() as platform:
            tool, tool_process = start_tool(tmp, redis.url, platform, args.workers)
            bare, bare_process = start_bare(tmp, redis.url, platform, args.workers)
            platform.tool_redirect_uris = [tool + "/lti/launch", bare + "/lti/launch"]
            try:
                results, cpu = measure(
                    args,
                    platform,
                    {"tool": tool, "bare": bare},
                    {"tool": tool_process, "bare": bare_process},
                    document,
                )
            finally:
                for process in (tool_process, bare_process):
                    process.terminate()
                    process.wait(timeout=30)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)  # hundreds of megabytes of uploads
    report(args, document, results, cpu)


def measure(
    args,
    platform: FakePlatform,
    servers: dict[str, str],
    processes: dict[str, subprocess.Popen],
    document: bytes,
) -> tuple[dict, dict]:
    """Step by step, each server on its own, alternating which goes first on each repeat so
    that drift on a shared machine does not favour either side. Returns the latencies per
    step, and the servers' CPU seconds and sample count per step."""
    tool, bare = servers["tool"], servers["bare"]
    pages: dict[str, dict[int, str]] = {"tool": {}, "bare": {}}
    clients = [httpx.Client(timeout=60) for _ in range(args.clients)]

    def launches(name: str) -> Callable[[int], dict[str, list[float]]]:
        def work(i: int) -> dict[str, list[float]]:
            times = []
            for _ in range(args.rounds):
                took, pages[name][i] = launch(clients[i], platform, servers[name], str(1000 + i))
                times.append(took)
            return {"launch": times}

        return work

    def uploads(name: str) -> Callable[[int], dict[str, list[float]]]:
        def url(i: int) -> str:
            if name == "bare":
                return f"{bare}/upload?user={1000 + i}"
            return tool + pages[name][i] + "submissions"

        def work(i: int) -> dict[str, list[float]]:
            files = {"file": ("work.pdf", document)}
            post = lambda: clients[i].post(url(i), files=files)  # noqa: E731
            return {"upload": [timed(post, 303) for _ in range(args.rounds)]}

        return work

    def reloads(name: str) -> Callable[[int], dict[str, list[float]]]:
        """The student page, as the browser loads it after a launch or an upload."""

        def work(i: int) -> dict[str, list[float]]:
            get = lambda: clients[i].get(servers[name] + pages[name][i])  # noqa: E731
            return {"page": [timed(get, 200) for _ in range(args.rounds)]}

        return work

    def polls(pause: float) -> Callable[[str], Callable[[int], dict]]:
        """Polls back to back (pause 0: a stress test), or paced like the page (every 1.5 s)."""

        def for_server(name: str) -> Callable[[int], dict[str, list[float]]]:
            def url(i: int) -> str:
                return bare + "/status" if name == "bare" else tool + pages[name][i] + "status"

            def work(i: int) -> dict[str, list[float]]:
                times = []
                for _ in range(args.rounds * 2):
                    times.append(timed(lambda: clients[i].get(url(i)), 200))
                    time.sleep(pause * random.uniform(0.5, 1.5))
                return {f"status-{pause}": times}

            return work

        return for_server

    steps = [launches, uploads, reloads, polls(0), polls(PAGE_POLL_SECONDS)]
    results: dict[str, dict[str, list[float]]] = {"tool": {}, "bare": {}}
    cpu: dict[str, dict[str, list[float]]] = {"tool": {}, "bare": {}}
    try:
        for name in servers:  # warm up: imports, compiled templates, connections
            for step in (launches, uploads, reloads):
                run_clients(2, step(name))
        for repeat in range(args.repeat):
            order = ["tool", "bare"] if repeat % 2 == 0 else ["bare", "tool"]
            for step in steps:
                for name in order:
                    before = server_cpu(processes[name])
                    ((key, values),) = run_clients(args.clients, step(name)).items()
                    spent = server_cpu(processes[name]) - before
                    results[name].setdefault(key, []).extend(values)
                    used = cpu[name].setdefault(key, [0.0, 0])
                    used[0], used[1] = used[0] + spent, used[1] + len(values)
        return results, cpu
    finally:
        for client in clients:
            client.close()


def report(args, document: bytes, results: dict, cpu: dict) -> None:
    servers = ("tool", "bare")
    ours, theirs = results["tool"], results["bare"]
    print(
        f"\n{args.clients} concurrent clients x {args.rounds} rounds x {args.repeat} repeats, "
        f"{len(document) / 1e6:.2f} MB PDF, gunicorn {args.workers} workers x 8 threads, "
        f"{os.cpu_count()} CPUs"
    )
    print(
        f"{'step':<24}{'p50 ms':>9}{'p95 ms':>9}{'bare p50':>10}{'bare p95':>10}"
        f"{'x p50':>7}{'x p95':>7}{'CPU ms':>8}{'bare':>6}{'x CPU':>7}"
    )
    steps = (
        ("launch", "login + launch"),
        ("upload", "upload 1 MB PDF"),
        ("page", "page reload"),
        ("status-0", "status, back to back"),
        (f"status-{PAGE_POLL_SECONDS}", "status, every 1.5 s"),
    )
    for name, label in steps:
        p50, p95 = percentiles(ours[name])
        b50, b95 = percentiles(theirs[name])
        ours_cpu, bare_cpu = (cpu[side][name][0] / cpu[side][name][1] * 1000 for side in servers)
        # A short run may spend less CPU than the clock's tick: no ratio then.
        cpu_ratio = f"{ours_cpu / bare_cpu:>7.2f}" if bare_cpu else f"{'–':>7}"
        print(
            f"{label:<24}{p50:>9.1f}{p95:>9.1f}{b50:>10.1f}{b95:>10.1f}"
            f"{p50 / b50:>7.2f}{p95 / b95:>7.2f}"
            f"{ours_cpu:>8.1f}{bare_cpu:>6.1f}{cpu_ratio}"
        )
    print("Targets: launch, upload and page within 1.3x of the bare handlers; status p95 < 20 ms.")
    print("The bare 'status' is a constant JSON answer: the floor any status endpoint could reach.")
    print("CPU ms: the server processes' CPU time per request (per login + launch), which")
    print("other work on the machine hardly changes; latencies on a shared machine it does.")


if __name__ == "__main__":
    main()
