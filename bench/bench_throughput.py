"""Grading throughput with 1, 2 and 4 workers: jobs per minute when the work is waiting on
the model.

Starts a throwaway PostgreSQL (scripts/postgres.sh, stopped at the end), a real Redis, the
web app under gunicorn and a fake OpenAI-compatible server on 127.0.0.1 that answers every
request after ``--latency`` seconds (1 s). For each worker count N it makes an organization
and a token with the CLI, queues ``--jobs`` API evaluations (``POST /evaluations``) first,
then starts N ``evaluaitor worker`` processes and times them until every evaluation has
finished. Prints jobs per minute for each N and the speed-up against N = 1, and checks that
none was lost or graded twice: each evaluation must end ``completed``, and the fake model
must have seen the same number of calls for each (each evaluation's instructions carry a
marker the fake server counts).

Only the REST API, the CLI and the worker command are used, so the figures stay comparable
when the grading core changes underneath.

    .venv/bin/python bench/bench_throughput.py [--jobs 200] [--workers 1 2 4] [--latency 1]
"""

from __future__ import annotations

import argparse
import multiprocessing
import multiprocessing.synchronize
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from bench_core import ROOT, free_port, gunicorn, wait_up
from flask import Flask

from app import create_app
from app.jobs.redis_server import EmbeddedRedis
from tests.documents import pdf_bytes
from tests.fakes.llm_server import FakeLLM

REPLY = "Clear and accurate.\n\n**Strengths:** uses the right terms.\n\nFinal score: 8/10"
#: Put in each evaluation's instructions; the fake model counts the calls that carry it.
MARKER = "Benchmark item {}."
_MARKER = re.compile(r"Benchmark item ([a-z0-9-]+)\.")
#: The final states of an API evaluation (older and newer names).
FINAL = {"completed", "graded", "needs_review", "failed", "cancelled"}


@dataclass
class Run:
    workers: int
    codes: dict[str, str] = field(default_factory=dict)  # marker -> job code
    started: float = 0.0
    #: (seconds since the workers started, evaluations completed), one per poll.
    progress: list[tuple[float, int]] = field(default_factory=list)
    statuses: Counter = field(default_factory=Counter)
    calls: Counter = field(default_factory=Counter)  # marker -> model calls

    @property
    def seconds(self) -> float:
        return self.progress[-1][0]

    def per_minute(self) -> float:
        return len(self.codes) / self.seconds * 60

    def steady_per_minute(self) -> float:
        """From the first finished evaluation to the last: without the workers' start-up."""
        first = next(t for t, done in self.progress if done > 0)
        return (len(self.codes) - 1) / max(self.seconds - first, 1e-9) * 60


# --- the fake model, in a process of its own


def serve_llm(
    latency: float,
    urls: multiprocessing.Queue,
    counts: multiprocessing.Queue,
    stop: multiprocessing.synchronize.Event,
) -> None:
    """Answer every request after ``latency`` seconds; on ``stop``, report the calls seen
    per marker (a real model would be another machine: its threads must not compete with
    the benchmark's for the interpreter lock)."""
    seen: Counter = Counter()

    def answer(request: dict) -> str:
        text = " ".join(str(m.get("content", "")) for m in request.get("messages") or [])
        seen.update(set(_MARKER.findall(text)) or {"(no marker)"})
        time.sleep(latency)
        return REPLY

    with FakeLLM() as llm:
        llm.set_default(answer)
        urls.put(llm.url)
        stop.wait()
    counts.put(dict(seen))


# --- the servers


def start_postgres(directory: Path) -> str:
    """A throwaway server from scripts/postgres.sh; its URL."""
    directory.parent.chmod(0o755)  # PostgreSQL runs as its own user when we are root
    done = subprocess.run(
        ["bash", str(ROOT / "scripts" / "postgres.sh"), str(directory)],
        check=True,
        capture_output=True,
        text=True,
    )
    return done.stdout.strip().splitlines()[-1]


def stop_postgres(directory: Path) -> None:
    """Stop it as scripts/test.sh does."""
    if not (directory / "data").exists():
        return
    binaries = sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=lambda p: int(p.parent.name))
    command = [str(binaries[-1] / "pg_ctl"), "-D", str(directory / "data"), "stop", "-m", "fast"]
    if os.getuid() == 0:
        command = ["runuser", "-u", "postgres", "--", *command]
    subprocess.run(command, check=False, capture_output=True)


class Tool:
    """The CLI, the web app and the workers, all with the same settings."""

    def __init__(self, tmp: Path, database_url: str, redis_url: str, llm_url: str) -> None:
        self.tmp = tmp
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("EVALUAITOR_")}
        self.env |= {
            "EVALUAITOR_INSTANCE_DIR": str(tmp / "instance"),
            "EVALUAITOR_DATA_DIR": str(tmp / "data"),
            "DATABASE_URL": database_url,
            "REDIS_URL": redis_url,
            "EVALUAITOR_LLM_BASE_URL": llm_url,
            "EVALUAITOR_LLM_MODEL": "fake-model",
            "EVALUAITOR_LLM_CACHE_DIR": str(tmp / "llm-cache"),
        }
        self.server: subprocess.Popen | None = None
        self.url = ""

    def cli(self, *args: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "app.cli", *args],
            env=self.env,
            cwd=ROOT,
            check=True,
            capture_output=True,
            text=True,
        )
        return done.stdout.strip()

    def app(self) -> Flask:
        """The same app in this process (to seed it, or to run jobs in it), with the same
        settings: create_app reads them from the environment, as the CLI and gunicorn do."""
        saved = dict(os.environ)
        os.environ.clear()
        os.environ.update(self.env)
        try:
            return create_app()
        finally:
            os.environ.clear()
            os.environ.update(saved)

    def start_web(self) -> None:
        port = free_port()
        self.server = gunicorn("wsgi:app", port, 2, self.env, self.tmp / "web.log")
        self.url = f"http://127.0.0.1:{port}"
        wait_up(self.url + "/health", self.server)

    def start_workers(self, count: int, run_name: str) -> list[subprocess.Popen]:
        return [
            subprocess.Popen(
                [sys.executable, "-m", "app.cli", "worker"],
                env=self.env,
                cwd=ROOT,
                stdout=subprocess.DEVNULL,
                stderr=open(self.tmp / f"worker-{run_name}-{n}.log", "w"),  # noqa: SIM115
            )
            for n in range(count)
        ]

    def stop(self) -> None:
        if self.server is not None:
            self.server.terminate()
            self.server.wait(timeout=30)
            self.server = None


def stop_workers(workers: list[subprocess.Popen]) -> None:
    """Each finishes the job it runs (RQ's warm shutdown), then all are gone."""
    for worker in workers:
        worker.terminate()
    for worker in workers:
        try:
            worker.wait(timeout=60)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait()


# --- one run


def queue_evaluations(tool: Tool, run: Run, token: str, jobs: int, document: bytes) -> None:
    """Submit every evaluation before any worker runs (a few clients at a time)."""
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=tool.url, headers=headers, timeout=60) as client:

        def submit(i: int) -> tuple[str, str]:
            marker = f"n{run.workers}-{i:03d}"
            response = client.post(
                "/evaluations",
                files={"file": ("work.pdf", document)},
                data={
                    "client_reference": marker,
                    "instructions": "Explain photosynthesis. " + MARKER.format(marker),
                },
            )
            if response.status_code != 202:
                raise SystemExit(f"submit {marker}: {response.status_code} {response.text[:300]}")
            return marker, response.json()["job_code"]

        with ThreadPoolExecutor(8) as pool:
            run.codes = dict(pool.map(submit, range(jobs)))


def wait_finished(tool: Tool, run: Run, token: str, timeout: float, stall: float) -> None:
    """Poll the list endpoint until every evaluation is completed (or failed, or stuck)."""
    headers = {"Authorization": f"Bearer {token}"}
    last_change, last_done = time.monotonic(), -1
    with httpx.Client(base_url=tool.url, headers=headers, timeout=30) as client:
        while True:
            done = finished = 0
            for status in FINAL:
                params = {"status": status, "limit": 1}
                response = client.get("/evaluations", params=params)
                if response.status_code == 200:  # 422: this version has no such status
                    count = response.json()["total"]
                    finished += count
                    done += count if status in ("completed", "graded") else 0
            now = time.monotonic()
            run.progress.append((now - run.started, done))
            if finished >= len(run.codes):
                return
            if done != last_done:
                last_change, last_done = now, done
            if now - run.started > timeout or now - last_change > stall:
                print(f"  N={run.workers}: stopped waiting at {finished}/{len(run.codes)} finished")
                return
            time.sleep(0.25)


def check_statuses(tool: Tool, run: Run, token: str) -> None:
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=tool.url, headers=headers, timeout=30) as client:

        def status(code: str) -> str:
            response = client.get(f"/evaluations/{code}/status")
            return response.json().get("status", "?") if response.status_code == 200 else "?"

        with ThreadPoolExecutor(8) as pool:
            run.statuses = Counter(pool.map(status, run.codes.values()))


def measure(tool: Tool, workers: int, args, document: bytes) -> Run:
    run = Run(workers)
    org = f"bench-{workers}-{os.getpid()}"
    tool.cli("org", "add", org)
    token = tool.cli("token", "create", "--org", org).splitlines()[-1]
    queue_evaluations(tool, run, token, args.jobs, document)
    processes = tool.start_workers(workers, f"n{workers}")
    run.started = time.monotonic()
    try:
        wait_finished(tool, run, token, args.timeout, args.stall)
    finally:
        stop_workers(processes)
    check_statuses(tool, run, token)
    return run


# --- report


def report(args, runs: list[Run]) -> None:
    print(
        f"\n{args.jobs} API evaluations queued, then N workers; fake model answering in "
        f"{args.latency:g} s; PostgreSQL, Redis, {os.cpu_count()} CPUs"
    )
    print(
        f"{'workers':>7}{'seconds':>9}{'jobs/min':>10}{'speed-up':>10}"
        f"{'steady/min':>12}{'speed-up':>10}{'ideal':>7}   check"
    )
    base = runs[0]
    for run in runs:
        print(
            f"{run.workers:>7}{run.seconds:>9.1f}{run.per_minute():>10.1f}"
            f"{run.per_minute() / base.per_minute() * base.workers:>10.2f}"
            f"{run.steady_per_minute():>12.1f}"
            f"{run.steady_per_minute() / base.steady_per_minute() * base.workers:>10.2f}"
            f"{run.workers:>7}   {verdict(run)}"
        )
    print(
        f"ideal: {60 / args.latency:.0f} jobs/min per worker at most (one model call of "
        f"{args.latency:g} s each). steady: from the first finished evaluation to the last."
    )


def verdict(run: Run) -> str:
    """'ok' when every evaluation completed and the model saw each one equally often."""
    problems = []
    completed = run.statuses.get("completed", 0) + run.statuses.get("graded", 0)
    if completed != len(run.codes):
        problems.append(f"not completed: {dict(run.statuses)}")
    calls = Counter(run.calls.get(marker, 0) for marker in run.codes)
    if len(calls) != 1 or 0 in calls:
        problems.append(f"model calls per evaluation (calls: evaluations) {dict(calls)}")
    each = next(iter(calls)) if len(calls) == 1 else "?"
    return "; ".join(problems) or f"ok: all completed once, {each} model call(s) each"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=200)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--latency", type=float, default=1.0, help="seconds per model reply")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per run at most")
    parser.add_argument("--stall", type=float, default=180, help="give up after no progress")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = parser.parse_args()
    document = pdf_bytes()
    tmp = Path(tempfile.mkdtemp(prefix="evaluaitor-bench-throughput-"))
    urls: multiprocessing.Queue = multiprocessing.Queue()
    counts: multiprocessing.Queue = multiprocessing.Queue()
    stop = multiprocessing.Event()
    llm = multiprocessing.Process(target=serve_llm, args=(args.latency, urls, counts, stop))
    llm.start()
    runs: list[Run] = []
    tool = None
    try:
        database_url = start_postgres(tmp / "postgres")
        with EmbeddedRedis(tmp / "redis", persistent=False) as redis:
            tool = Tool(tmp, database_url, redis.url, urls.get(timeout=30))
            tool.cli("db", "upgrade")
            tool.start_web()
            for workers in args.workers:
                runs.append(measure(tool, workers, args, document))
                print(f"  N={workers}: {runs[-1].seconds:.1f} s", flush=True)
    finally:
        if tool is not None:
            tool.stop()
        stop.set()
        seen = counts.get(timeout=30) if llm.is_alive() or not counts.empty() else {}
        llm.join(timeout=10)
        stop_postgres(tmp / "postgres")
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    for run in runs:
        run.calls = Counter({marker: seen.get(marker, 0) for marker in run.codes})
    report(args, runs)


if __name__ == "__main__":
    main()
