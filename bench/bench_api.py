"""REST API latencies with 50 concurrent clients, next to the proposal's targets.

Runs Evaluaitor under gunicorn (as bench_core.py does: same workers and threads), a real
Redis, an RQ worker grading against the fake OpenAI-compatible server from the tests, and N
concurrent API clients of one organization, each paced like a real client (a request about
every ``--pause`` seconds, jittered). Phases: submit a small PDF (``POST /evaluations``),
poll ``GET /evaluations/{code}/status`` while the worker grades, and, once everything is
graded, ``GET /evaluations/{code}/result``. A last row polls status back to back (no pause),
a stress test of the machine rather than a client pattern. Prints p50/p95 per phase, the
proposal's targets (submit 500 ms, status 100 ms, result 200 ms) and how many times faster
than the target each figure is (goal: 10x).

    .venv/bin/python bench/bench_api.py [--clients 50] [--rounds 4] [--pause 1] [--workers 2]
"""

from __future__ import annotations

import argparse
import multiprocessing
import multiprocessing.synchronize
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import httpx
from bench_core import ROOT, free_port, gunicorn, percentiles, run_clients, timed, wait_up

from app.jobs.redis_server import EmbeddedRedis
from tests.documents import pdf_bytes
from tests.fakes.llm_server import FakeLLM

TARGETS_MS = {"submit": 500, "status": 100, "result": 200}
REPLY = "Clear and accurate.\n\n**Strengths:** uses the right terms.\n\nFinal score: 8/10"


def start(tmp: Path, redis_url: str, llm_url: str, workers: int):
    """Migrate, create an organization and a token, start the server and one RQ worker."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("EVALUAITOR_")}
    env |= {
        "EVALUAITOR_INSTANCE_DIR": str(tmp / "instance"),
        "REDIS_URL": redis_url,
        "EVALUAITOR_LLM_BASE_URL": llm_url,
        "EVALUAITOR_LLM_MODEL": "fake-model",
    }
    cli = [sys.executable, "-m", "app.cli"]

    def run(*args: str) -> str:
        done = subprocess.run([*cli, *args], env=env, check=True, capture_output=True, cwd=ROOT)
        return done.stdout.decode().strip()

    run("db", "upgrade")
    run("org", "add", "bench")
    token = run("token", "create", "--org", "bench")
    port = free_port()
    server = gunicorn("wsgi:app", port, workers, env, tmp / "tool.log")
    worker = subprocess.Popen(
        [*cli, "worker"],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=open(tmp / "worker.log", "w"),  # noqa: SIM115 (open while the worker runs)
    )
    url = f"http://127.0.0.1:{port}"
    wait_up(url + "/health", server)
    return url, token, [server, worker]


def measure(args, url: str, token: str, document: bytes) -> dict[str, list[float]]:
    headers = {"Authorization": f"Bearer {token}"}
    clients = [httpx.Client(base_url=url, headers=headers, timeout=60) for _ in range(args.clients)]
    codes: dict[int, list[str]] = {i: [] for i in range(args.clients)}

    def pace() -> None:
        time.sleep(args.pause * random.uniform(0.5, 1.5))

    def submits(i: int) -> dict[str, list[float]]:
        times = []
        time.sleep(random.uniform(0, args.pause))  # clients do not all start at once
        for n in range(args.rounds):
            pace()
            started = time.perf_counter()
            response = clients[i].post(
                "/evaluations",
                files={"file": ("work.pdf", document)},
                data={"client_reference": f"c{i}-{n}", "instructions": "Explain photosynthesis."},
            )
            times.append(time.perf_counter() - started)
            assert response.status_code == 202, response.text[:300]
            codes[i].append(response.json()["job_code"])
        return {"submit": times}

    def reads(kind: str, repeat: int, paced: bool = True) -> Callable[[int], dict]:
        def work(i: int) -> dict[str, list[float]]:
            times = []
            for _ in range(repeat):
                for code in codes[i]:
                    if paced:
                        pace()
                    get = lambda: clients[i].get(f"/evaluations/{code}/{kind}")  # noqa: E731, B023
                    times.append(timed(get, 200))
            return {kind if paced else f"{kind}-stress": times}

        return work

    try:
        run_clients(2, lambda i: {"warm": [timed(lambda: clients[i].get("/plugins"), 200)]})
        results = run_clients(args.clients, submits)
        results |= run_clients(args.clients, reads("status", 2))
        wait_graded(clients[0], args.clients * args.rounds)
        results |= run_clients(args.clients, reads("result", 2))
        results |= run_clients(args.clients, reads("status", 2, paced=False))
        return results
    finally:
        for client in clients:
            client.close()


def wait_graded(client: httpx.Client, expected: int, timeout: float = 600) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done = client.get("/evaluations", params={"status": "completed", "limit": 1}).json()
        if done["total"] >= expected:
            return
        time.sleep(0.5)
    raise SystemExit("the worker did not grade every evaluation in time")


def serve_llm(urls: multiprocessing.Queue, stop: multiprocessing.synchronize.Event) -> None:
    with FakeLLM() as llm:
        llm.set_default(REPLY)
        urls.put(llm.url)
        stop.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=4, help="submissions per client")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers")
    parser.add_argument("--pause", type=float, default=1.0, help="seconds between requests")
    args = parser.parse_args()
    document = pdf_bytes()
    tmp = Path(tempfile.mkdtemp(prefix="evaluaitor-bench-api-"))
    urls: multiprocessing.Queue = multiprocessing.Queue()
    stop = multiprocessing.Event()
    # The fake model runs in a process of its own, as a real one would: in the clients'
    # process its threads would compete with them for the interpreter lock.
    llm = multiprocessing.Process(target=serve_llm, args=(urls, stop), daemon=True)
    llm.start()
    with EmbeddedRedis(tmp / "redis", persistent=False) as redis:
        url, token, processes = start(tmp, redis.url, urls.get(timeout=30), args.workers)
        try:
            results = measure(args, url, token, document)
        finally:
            for process in processes:
                process.terminate()
                process.wait(timeout=10)
            stop.set()
            llm.join(timeout=10)
    report(args, document, results)


def report(args, document: bytes, results: dict[str, list[float]]) -> None:
    print(
        f"\n{args.clients} concurrent clients, {args.rounds} submissions each "
        f"({len(document) / 1e3:.1f} kB PDF), gunicorn {args.workers} workers x 8 threads, "
        f"one RQ worker, {os.cpu_count()} CPUs, a request every ~{args.pause:g} s per client"
    )
    print(f"{'request':<15}{'n':>6}{'p50 ms':>9}{'p95 ms':>9}{'target':>8}{'x p50':>8}{'x p95':>8}")
    rows = [*TARGETS_MS.items(), ("status-stress", TARGETS_MS["status"])]
    for name, target in rows:
        p50, p95 = percentiles(results[name])
        print(
            f"{name:<15}{len(results[name]):>6}{p50:>9.1f}{p95:>9.1f}{target:>8}"
            f"{target / p50:>8.1f}{target / p95:>8.1f}"
        )
    print("x = target / measured: how many times faster than the proposal's target (goal: 10).")


if __name__ == "__main__":
    main()
