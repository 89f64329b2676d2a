"""What the teacher's data costs the worker and the statistics page as a class grows: choosing
calibration examples for one grading (app.lms.calibration.for_grading: the candidate query, then
likeness over up to 200 texts) and the AI-teacher agreement report (app.lms.agreement_report),
over N teacher-graded submissions of one activity, each with a text of about 2,500 words and
60,000 characters of stored prompts (what a criteria grading keeps).

Each figure is the median of ``--repeat`` runs in a fresh session, in one process on SQLite
(``--database`` for another URL). Choosing runs in a forked RQ work-horse in production, so
its caches start cold every job: each run here clears them too.

    .venv/bin/python bench/bench_review_data.py [--sizes 50,200,500] [--repeat 5]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from app import create_app  # noqa: E402
from app.extensions import db  # noqa: E402
from app.grading import examples, retrieval  # noqa: E402
from app.lms import calibration  # noqa: E402
from app.lms.agreement_report import report  # noqa: E402
from app.models import (  # noqa: E402
    Activity,
    Deployment,
    Grade,
    GradingJob,
    LtiUser,
    Organization,
    Platform,
    Submission,
)

WORDS = (ROOT / "README.md").read_text().split()
PROMPTS = [{"prompt_hash": "0" * 64, "messages": [{"role": "user", "content": "x" * 60_000}]}]


def essay(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(2500))


def fill(size: int, rng: random.Random) -> tuple[Activity, Submission]:
    """An activity with ``size`` teacher-graded submissions, and a new one to grade."""
    organization = Organization(external_id="bench")
    platform = Platform(
        issuer="https://lms.example",
        name="Bench LMS",
        client_id="bench",
        auth_login_url="https://lms.example/login",
        auth_token_url="https://lms.example/token",
        key_set_url="https://lms.example/jwks",
        organization=organization,
    )
    deployment = Deployment(platform=platform, deployment_id="1")
    db.session.add(deployment)
    db.session.flush()
    activity = Activity(platform=platform, deployment_id=deployment.id, max_score=10)
    db.session.add(activity)
    for n in range(size):
        user = LtiUser(platform_id=platform.id, sub=f"s{n}")
        submission = Submission(activity=activity, user=user)
        submission.job = GradingJob(
            status="completed",
            original_filename="essay.txt",
            kind="text",
            size_bytes=1,
            sha256="0" * 64,
            storage_path="essay.txt",
            extracted_text=essay(rng),
            score=rng.randint(3, 10),
            scale=10,
            confidence=rng.random(),
            provenance={"models": ["model-a"]},
            prompts=PROMPTS,
        )
        submission.grade = Grade(override_score=rng.randint(3, 10), overridden_at=datetime.now(UTC))
        db.session.add(submission)
    new = Submission(activity=activity, user=LtiUser(platform_id=platform.id, sub="new"))
    db.session.add(new)
    db.session.commit()
    return activity, new


def median_ms(run: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        db.session.expire_all()
        examples._counts.cache_clear()
        retrieval._stem.cache_clear()
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="50,200,500")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--database", default=None)
    args = parser.parse_args()
    print(f"{'graded':>7} {'choose examples (ms)':>21} {'agreement report (ms)':>22}")
    for size in (int(s) for s in args.sizes.split(",")):
        folder = tempfile.mkdtemp()
        url = args.database or f"sqlite:///{folder}/bench.db"
        app = create_app({"DATABASE_URL": url, "EVALUAITOR_DATA_DIR": folder})
        with app.app_context():
            db.drop_all()
            db.create_all()
            rng = random.Random(size)
            activity, new = fill(size, rng)
            text = essay(rng)
            choose = median_ms(partial(calibration.for_grading, new, text), args.repeat)
            agree = median_ms(partial(report, activity, 10), args.repeat)
            print(f"{size:>7} {choose:>21.0f} {agree:>22.0f}")
            db.session.remove()
            db.drop_all()


if __name__ == "__main__":
    main()
