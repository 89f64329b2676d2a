"""What one scrape of ``/metrics`` costs the web app: a school's month in the database (300
students, 10,000 grading jobs with their spend ledger rows, 10 organizations) and a
multiprocess directory as the worker leaves it, with the work horses' files folded into its
archive (app.metrics.fold_dead), next to the same directory unfolded (one file per ended
horse, what RQ's fork per job would leave without the fold).

Each figure is the median of ``--repeat`` scrapes through the Flask test client (no HTTP),
SQLite and a real Redis, in one process.

    .venv/bin/python bench/bench_metrics.py [--jobs 10000] [--students 300] [--repeat 20]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
COUNTERS = Path(tempfile.mkdtemp()) / "counters"
COUNTERS.mkdir()
os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(COUNTERS)  # before the library is imported

from sqlalchemy import insert  # noqa: E402

from app import create_app, metrics  # noqa: E402
from app.extensions import db  # noqa: E402
from app.jobs.redis_server import EmbeddedRedis  # noqa: E402
from app.models import (  # noqa: E402
    Activity,
    Deployment,
    GradingJob,
    LtiUser,
    Organization,
    Platform,
    Submission,
)
from app.models.jobs import ModelUsage  # noqa: E402

TOKEN = "bench-token"
STATUSES = ["completed"] * 8 + ["needs_review", "failed"]


def fill(students: int, jobs: int) -> None:
    """Ten organizations with a platform and three activities each; ``students`` students;
    ``jobs`` submissions, each with its grading job and one ledger row this month."""
    activities = []
    users = []
    for n in range(10):
        platform = Platform(
            issuer=f"https://lms{n}.example",
            name=f"LMS {n}",
            client_id="bench",
            auth_login_url="https://lms.example/login",
            auth_token_url="https://lms.example/token",
            key_set_url="https://lms.example/jwks",
            organization=Organization(external_id=f"school-{n}"),
        )
        deployment = Deployment(platform=platform, deployment_id="1")
        db.session.add(deployment)
        db.session.flush()
        activities += [
            Activity(platform=platform, deployment_id=deployment.id, max_score=10) for _ in range(3)
        ]
        users += [LtiUser(platform_id=platform.id, sub=f"s{k}") for k in range(students // 10)]
    db.session.add_all(activities + users)
    db.session.flush()
    db.session.execute(
        insert(Submission),
        [
            {
                "activity_id": activities[i % 30].id,
                "user_id": users[i % len(users)].id,
                "attempt": i // len(users) + 1,
            }
            for i in range(jobs)
        ],
    )
    ids = db.session.scalars(db.select(Submission.id).order_by(Submission.id)).all()
    db.session.execute(
        insert(GradingJob),
        [
            {
                "submission_id": sid,
                "status": STATUSES[i % len(STATUSES)],
                "original_filename": "essay.txt",
                "kind": "text",
                "size_bytes": 1,
                "sha256": "0" * 64,
                "storage_path": "essay.txt",
            }
            for i, sid in enumerate(ids)
        ],
    )
    now = datetime.now(UTC)
    db.session.execute(
        insert(ModelUsage),
        [
            {
                "activity_id": activities[i % 30].id,
                "model": "gpt-4o-mini",
                "calls": 2,
                "prompt_tokens": 1800,
                "completion_tokens": 400,
                "cost": 0.0005,
                "created_at": now,
            }
            for i in range(jobs)
        ],
    )
    db.session.commit()


def horse_files() -> tuple[Path, Path]:
    """One real work horse's value files: a forked child counts what a grading and a push
    count, then ends."""
    pid = os.fork()
    if pid == 0:
        metrics.MODEL_CALLS.labels("gpt-4o-mini").inc(2)
        metrics.MODEL_TOKENS.labels("gpt-4o-mini", "prompt").inc(1800)
        metrics.MODEL_TOKENS.labels("gpt-4o-mini", "completion").inc(400)
        metrics.MODEL_COST.labels("gpt-4o-mini").inc(0.0005)
        metrics.TIME_TO_GRADE.labels("completed").observe(42)
        metrics.DELIVERIES.labels("score_push", "sent").inc()
        os._exit(0)
    os.waitpid(pid, 0)
    kept = []
    for kind in ("counter", "histogram"):  # out of the directory, which each round empties
        kept.append(COUNTERS.parent / f"{kind}_template.db")
        shutil.move(COUNTERS / f"{kind}_{pid}.db", kept[-1])
    return kept[0], kept[1]


def dead_horses(count: int, template: tuple[Path, Path]) -> list[int]:
    """``count`` ended horses' files, copies of ``template`` under made-up pids."""
    pids = list(range(10_000_000, 10_000_000 + count))
    for pid in pids:
        for source in template:
            kind = source.name.split("_")[0]
            shutil.copyfile(source, COUNTERS / f"{kind}_{pid}.db")
    return pids


def median_ms(client, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        answer = client.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
        times.append(time.perf_counter() - started)
        assert answer.status_code == 200, answer.status_code
    return statistics.median(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--students", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--horses", default="0,1000,10000", help="dead horses' files")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp())
    with EmbeddedRedis(folder / "redis", persistent=False) as redis_server:
        app = create_app(
            {
                "DATABASE_URL": f"sqlite:///{folder}/bench.db",
                "REDIS_URL": redis_server.url,
                "EVALUAITOR_DATA_DIR": str(folder / "data"),
                "EVALUAITOR_METRICS_TOKEN": TOKEN,
                "PROMETHEUS_MULTIPROC_DIR": str(COUNTERS),
            }
        )
        with app.app_context():
            db.create_all()
            fill(args.students, args.jobs)
        client = app.test_client()
        template = horse_files()
        print(f"{args.students} students, {args.jobs} jobs; median of {args.repeat} scrapes")
        print(f"{'ended horses':>12} {'unfolded: files':>16} {'ms':>7} {'folded: files':>14} ms")
        for count in (int(n) for n in args.horses.split(",")):
            metrics.prepare(COUNTERS)
            pids = dead_horses(count, template)
            unfolded = (len(list(COUNTERS.glob("*.db"))), median_ms(client, args.repeat))
            for pid in pids:
                metrics.fold_dead(pid, COUNTERS)
            folded = (len(list(COUNTERS.glob("*.db"))), median_ms(client, args.repeat))
            row = f"{count:>12} {unfolded[0]:>16} {unfolded[1]:>7.1f} {folded[0]:>14}"
            print(f"{row} {folded[1]:.1f}")
    shutil.rmtree(folder, ignore_errors=True)
    shutil.rmtree(COUNTERS.parent, ignore_errors=True)


if __name__ == "__main__":
    main()
