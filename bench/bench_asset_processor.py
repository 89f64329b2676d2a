"""The LTI Asset Processor's costs: answering the LMS's notices, refusing forged and replayed
ones, and the whole way from a notice to its Processed report.

Starts a real Redis, the web app under gunicorn (bench_throughput.Tool, 2 workers x 8
threads), the fake Canvas-like platform from the tests and the fake OpenAI-compatible server
(in a process of its own, answering after ``--latency`` seconds). Then, against
``POST /lti/notices``:

1. notice answer time: the first notice on a fresh server (the platform's key set is fetched
   then), ``--notices`` notices posted one by one, ``--evicted`` notices posted with the
   cached key set deleted just before (the fetch, on a warm server), and ``--batches`` bodies
   of 20 notices (Canvas's limit is one notice a body; the handler takes up to 20);
2. refusals: a notice signed with a key the platform never published, and an accepted notice
   posted again (its nonce used);
3. the whole way: ``--whole`` notices (a text entry, a PDF, three files: .txt, .pdf, .docx, in
   turn) posted one after another while one worker in this process (RQ's SimpleWorker, in
   bursts, as tests/conftest.run_jobs) downloads, grades and reports: notices per second from
   the first notice to the last Processed report, and each notice's time to its Processed
   report; then ``--alone`` notices of each kind sent one at a time to the idle worker.

SQLite always; PostgreSQL too with ``--postgres`` (a throwaway server, scripts/postgres.sh) or
``--database URL`` / EVALUAITOR_TEST_DATABASE_URL (a scratch database: its schema is dropped).

    .venv/bin/python bench/bench_asset_processor.py [--notices 200] [--whole 50] [--postgres]
"""

from __future__ import annotations

import argparse
import itertools
import logging
import multiprocessing
import os
import shutil
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
from bench_throughput import Tool, serve_llm, start_postgres, stop_postgres
from flask import Flask
from rq.job import Job
from rq.registry import FinishedJobRegistry
from sqlalchemy import create_engine

from app.extensions import db, redis_connection
from app.jobs import queue
from app.jobs.redis_server import EmbeddedRedis
from app.lti import keys
from tests.conftest import register, run_jobs
from tests.documents import ESSAY, docx_bytes, pdf_bytes
from tests.fakes.platform import FakePlatform
from tests.fakes.platform.asset_processor import AssetProcessor
from tests.test_asset_processor import attach_processor

DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
#: What ends an asset's reports (Processed when graded; the others would be a fault here).
FINAL = {"Processed", "Failed", "PendingManual", "NotProcessed"}


# --- the notices


def text_entry(service: AssetProcessor) -> list[dict[str, Any]]:
    html = "".join(f"<p>{part}</p>" for part in ESSAY.split("\n\n"))
    return [service.add_asset(html.encode(), title="Online text", text_entry=True)]


def one_pdf(service: AssetProcessor) -> list[dict[str, Any]]:
    return [
        service.add_asset(
            pdf_bytes(), title="essay.pdf", filename="essay.pdf", content_type="application/pdf"
        )
    ]


def three_files(service: AssetProcessor) -> list[dict[str, Any]]:
    third = len(ESSAY) // 3
    return [
        service.add_asset(ESSAY[:third].encode(), title="Part one", filename="one.txt"),
        service.add_asset(
            pdf_bytes(ESSAY[third : 2 * third]),
            title="Part two",
            filename="two.pdf",
            content_type="application/pdf",
        ),
        service.add_asset(
            docx_bytes(ESSAY[2 * third :]),
            title="Part three",
            filename="three.docx",
            content_type=DOCX,
        ),
    ]


KINDS: dict[str, Callable[[AssetProcessor], list[dict[str, Any]]]] = {
    "text entry": text_entry,
    "PDF": one_pdf,
    "3 files": three_files,
}


class Notices:
    """Signed notices to one attached processor, each from another student and submission."""

    def __init__(self, platform: FakePlatform, activity: str, handler: str) -> None:
        self.service = platform.asset_processor
        self.activity = activity
        self.handler = handler
        self._numbers = itertools.count(1)
        self.client = httpx.Client(timeout=60)

    def token(self, assets: list[dict[str, Any]], how: str = "platform") -> str:
        n = next(self._numbers)
        claims = self.service.notice_claims(
            activity=self.activity, assets=assets, user=f"student-{n}", submission_id=f"sub-{n}"
        )
        return self.service.sign(claims, how=how)

    def post(self, *tokens: str, expect: int = 204) -> float:
        """Seconds to the answer (the tokens are signed beforehand: the LMS's work)."""
        body = {"notices": [{"jwt": token} for token in tokens]}
        started = time.perf_counter()
        response = self.client.post(self.handler, json=body)
        elapsed = time.perf_counter() - started
        if response.status_code != expect:
            raise SystemExit(f"notice answered {response.status_code}: {response.text[:300]}")
        return elapsed


# --- the measurements


def answers(notices: Notices, args: argparse.Namespace) -> dict[str, list[float]]:
    assets = text_entry(notices.service)  # one asset for all: the handler does not fetch it
    times = {"first notice (key set fetched)": [notices.post(notices.token(assets))]}
    times["one notice a body"] = [notices.post(notices.token(assets)) for _ in range(args.notices)]
    redis = redis_connection()
    evicted = []
    for _ in range(args.evicted):
        token = notices.token(assets)
        redis.delete(*redis.keys("evaluaitor:jwks:*"))
        evicted.append(notices.post(token))
    times["one notice, key set evicted"] = evicted
    batches = [[notices.token(assets) for _ in range(20)] for _ in range(args.batches)]
    times["a body of 20 notices"] = [notices.post(*batch) for batch in batches]
    return times


def refusals(notices: Notices, args: argparse.Namespace) -> dict[str, list[float]]:
    assets = text_entry(notices.service)
    forged = [notices.token(assets, how="stranger") for _ in range(args.notices // 2)]
    times = {"bad signature (401)": [notices.post(token, expect=401) for token in forged]}
    replays = []
    for _ in range(args.notices // 2):
        token = notices.token(assets)
        notices.post(token)
        replays.append(notices.post(token, expect=409))
    times["replayed nonce (409)"] = replays
    return times


def empty_queues() -> None:
    """The notices above were only answered: their jobs are not part of the whole way."""
    for name in (queue.GRADING, queue.PASSBACK):
        queue.queue(name).empty()


def processed_at(service: AssetProcessor, assets: list[dict[str, Any]]) -> float | None:
    """When the last of the notice's assets got its final report; None until then."""
    found = []
    for asset in assets:
        final = [
            (when, r)
            for when, r in service.arrivals_for(asset["asset_id"])
            if r["processingProgress"] in FINAL
        ]
        if not final:
            return None
        found.append(final[0])
    progress = {report["processingProgress"] for _, report in found}
    if progress != {"Processed"}:
        raise SystemExit(f"a notice ended {progress}, not Processed: see the web and worker logs")
    return max(when for when, _ in found)


def work_until(done: Callable[[], bool], timeout: float) -> None:
    """Run the queued jobs in this process, burst after burst, until ``done``."""
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() > deadline:
            raise SystemExit(f"not every notice was processed in {timeout:g} s")
        run_jobs()
        time.sleep(0.005)


def whole_way(notices: Notices, args: argparse.Namespace) -> dict[str, Any]:
    """Notices posted back to back (another thread) while this one's worker works."""
    kinds = list(itertools.islice(itertools.cycle(KINDS), args.whole))
    prepared = []
    for kind in kinds:
        assets = KINDS[kind](notices.service)
        prepared.append((kind, assets, notices.token(assets)))
    sent: list[float] = []
    failed: list[BaseException] = []

    def send() -> None:
        try:
            for _, _, token in prepared:
                sent.append(time.monotonic())
                notices.post(token)
        except BaseException as exc:  # SystemExit too: a thread would drop it silently
            failed.append(exc)

    sender = threading.Thread(target=send)
    sender.start()
    ends: list[float | None] = [None] * len(prepared)

    def done() -> bool:
        if failed:
            raise failed[0]
        for i, (_, assets, _) in enumerate(prepared):
            ends[i] = ends[i] or processed_at(notices.service, assets)
        return not sender.is_alive() and all(ends)

    work_until(done, args.timeout)
    sender.join()
    jobs = job_times()
    took = [end - start for end, start in zip(ends, sent, strict=True)]
    alone: dict[str, list[float]] = {}
    for _ in range(args.alone):
        for kind, make in KINDS.items():
            assets = make(notices.service)
            token = notices.token(assets)
            started = time.monotonic()
            notices.post(token)
            work_until(lambda a=assets: processed_at(notices.service, a) is not None, args.timeout)
            alone.setdefault(kind, []).append(processed_at(notices.service, assets) - started)
    return {
        "seconds": max(ends) - sent[0],
        "to processed": took,
        "by kind": {
            kind: [t for k, t in zip(kinds, took, strict=True) if k == kind] for kind in KINDS
        },
        "alone": alone,
        "jobs": jobs,
    }


def job_times() -> dict[str, list[float]]:
    """Seconds of each job the worker finished so far, by task (a delivery by its kind)."""
    connection = redis_connection()
    times: dict[str, list[float]] = {}
    for name in (queue.GRADING, queue.PASSBACK):
        ids = FinishedJobRegistry(queue=queue.queue(name)).get_job_ids()
        for job in Job.fetch_many(ids, connection=connection):
            if job is None or not (job.started_at and job.ended_at):
                continue
            task = job.func_name.rsplit(".", 1)[-1]
            label = f"{task} {job.args[0]}" if task == "deliver" else task
            seconds = (job.ended_at - job.started_at).total_seconds()
            times.setdefault(label, []).append(seconds)
    return times


# --- one database


def scratch(url: str) -> None:
    """An empty schema in a database given to this benchmark."""
    engine = create_engine(url)
    with engine.begin() as connection:
        connection.exec_driver_sql("DROP SCHEMA public CASCADE; CREATE SCHEMA public")
    engine.dispose()


def seed(app: Flask, platform: FakePlatform) -> str:
    """The platform registered, an activity attached to its assignment, the tool's key made
    (before gunicorn's workers could race to make it); the activity's public id."""
    with app.app_context():
        register(platform)
        activity = attach_processor()
        keys.active_key(app.config["EVALUAITOR_KEY_DIR"])
        public_id = activity.public_id
        db.session.remove()
    return public_id


def run(database_url: str, llm_url: str, args: argparse.Namespace) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix="evaluaitor-bench-assets-"))
    tool = None
    try:
        with EmbeddedRedis(tmp / "redis", persistent=False) as redis, FakePlatform() as platform:
            tool = Tool(tmp, database_url, redis.url, llm_url)
            tool.env["EVALUAITOR_ALLOW_PRIVATE_URLS"] = "1"  # the fake LMS is on 127.0.0.1
            tool.cli("db", "upgrade")
            app = tool.app()
            logging.disable(logging.INFO)  # RQ's lines for every job; warnings still show
            activity = seed(app, platform)
            tool.start_web()
            platform.tool_jwks_url = tool.url + "/lti/jwks"
            notices = Notices(platform, activity, tool.url + "/lti/notices")
            with app.app_context():
                figures = answers(notices, args) | refusals(notices, args)
                empty_queues()
                whole = whole_way(notices, args)
            notices.client.close()
            return {"latency": figures, "whole": whole}
    finally:
        if tool is not None:
            tool.stop()
        shutil.rmtree(tmp, ignore_errors=True)


# --- report


COLUMNS = f"{'n':>5} {'median ms':>9} {'p95 ms':>9} {'max ms':>9}"


def ms(values: list[float]) -> str:
    ordered = sorted(values)
    p95 = ordered[max(0, round(0.95 * len(ordered)) - 1)]
    median = statistics.median(ordered)
    return f"{len(ordered):>5} {median * 1000:>9.1f} {p95 * 1000:>9.1f} {ordered[-1] * 1000:>9.1f}"


def report(name: str, figures: dict[str, Any]) -> None:
    print(f"\n== {name}")
    print(f"{'notice answer':<34}{COLUMNS}")
    for label, values in figures["latency"].items():
        print(f"{label:<34}{ms(values)}")
    whole = figures["whole"]
    count = len(whole["to processed"])
    print(
        f"whole way: {count} notices in {whole['seconds']:.1f} s = "
        f"{count / whole['seconds']:.2f} notices/s (one worker in this process)"
    )
    print(f"{'notice to Processed report':<34}{COLUMNS}")
    print(f"{'  all, sent back to back':<34}{ms(whole['to processed'])}")
    for kind, values in whole["by kind"].items():
        print(f"{'  ' + kind + ', back to back':<34}{ms(values)}")
    for kind, values in whole["alone"].items():
        print(f"{'  ' + kind + ', alone':<34}{ms(values)}")
    print(f"{'jobs of the whole way':<34}{COLUMNS}  total s")
    for label, values in sorted(whole["jobs"].items()):
        print(f"{'  ' + label:<34}{ms(values)}  {sum(values):>7.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--notices", type=int, default=200, help="notices posted one by one")
    parser.add_argument("--evicted", type=int, default=10, help="notices after a key set eviction")
    parser.add_argument("--batches", type=int, default=10, help="bodies of 20 notices")
    parser.add_argument("--whole", type=int, default=50, help="notices taken the whole way")
    parser.add_argument("--alone", type=int, default=5, help="notices of each kind sent alone")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds per model reply")
    parser.add_argument("--timeout", type=float, default=600, help="seconds for the whole way")
    parser.add_argument("--postgres", action="store_true", help="also a throwaway PostgreSQL")
    parser.add_argument("--database", default=os.environ.get("EVALUAITOR_TEST_DATABASE_URL"))
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="evaluaitor-bench-assets-"))
    urls: multiprocessing.Queue = multiprocessing.Queue()
    counts: multiprocessing.Queue = multiprocessing.Queue()
    stop = multiprocessing.Event()
    llm = multiprocessing.Process(target=serve_llm, args=(args.latency, urls, counts, stop))
    llm.start()
    results = {}
    try:
        llm_url = urls.get(timeout=30)
        databases = {"SQLite": f"sqlite:///{tmp / 'bench.db'}"}
        if args.postgres:
            databases["PostgreSQL"] = start_postgres(tmp / "postgres")
        elif args.database:
            scratch(args.database)
            databases["PostgreSQL"] = args.database
        for name, url in databases.items():
            results[name] = run(url, llm_url, args)
            print(f"  {name}: done", flush=True)
    finally:
        stop.set()
        if llm.is_alive() or not counts.empty():
            counts.get(timeout=30)  # what it saw; read, or it waits for a reader to exit
        llm.join(timeout=30)
        stop_postgres(tmp / "postgres")
        shutil.rmtree(tmp, ignore_errors=True)
    print(
        f"\ngunicorn 2 workers x 8 threads, Redis, fake model answering in {args.latency:g} s, "
        f"{os.cpu_count()} CPUs"
    )
    for name, figures in results.items():
        report(name, figures)


if __name__ == "__main__":
    main()
