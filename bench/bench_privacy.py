"""Time to export and to erase one course of many students (app.privacy).

A course with ``--students`` students (default 300) in ``--activities`` activities, each
student with one graded submission per activity: a stored file, its extracted text, the
prompts and replies, a teacher's override, a score push, a spend row, a cached model reply
in their folder and their launch data in Redis; and a second course of the same size that
must stay. Prints the seconds to export the course (a zip) and to erase it, on SQLite and,
with ``--database URL`` or EVALUAITOR_TEST_DATABASE_URL, on PostgreSQL (its ``public``
schema is dropped and made again: give a scratch database).

    .venv/bin/python bench/bench_privacy.py [--students 300] [--activities 2] [--database URL]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app import create_app, privacy, tenants  # noqa: E402
from app.extensions import db, redis_connection  # noqa: E402
from app.jobs.redis_server import EmbeddedRedis  # noqa: E402
from app.llm.cache import ReplyCache  # noqa: E402
from app.llm.client import Completion, Usage  # noqa: E402
from app.models import (  # noqa: E402
    Activity,
    Course,
    Deployment,
    Grade,
    GradingJob,
    LtiUser,
    ModelUsage,
    Platform,
    ScorePush,
    Submission,
)
from app.models.base import utcnow  # noqa: E402
from tests.documents import ESSAY  # noqa: E402


def seed(app, platform: Platform, context: str, students: int, activities: int) -> None:
    data_dir = Path(app.config["EVALUAITOR_DATA_DIR"])
    course = Course(platform_id=platform.id, context_id=context, title=context)
    deployment = platform.deployments[0]
    db.session.add(course)
    made = [
        Activity(
            platform_id=platform.id,
            deployment_id=deployment.id,
            course=course,
            resource_link_id=f"{context}-rl{n}",
            title=f"Essay {n}",
        )
        for n in range(activities)
    ]
    users = [
        LtiUser(
            platform_id=platform.id,
            sub=f"{context}-s{n}",
            name=f"Student {n}",
            email=f"s{n}@{context}.example",
        )
        for n in range(students)
    ]
    db.session.add_all([*made, *users])
    db.session.flush()
    redis = redis_connection()
    cache_dir = app.config["EVALUAITOR_LLM_CACHE_DIR"]
    reply = Completion(
        "Final score: 8/10. " + ESSAY[:400], "m", Usage(900, 60, 960), 1, 900, "stop"
    )
    for activity in made:
        for user in users:
            folder = tenants.student_folder(platform.id, activity.id, user.id)
            path = data_dir / folder / "1-0123456789abcdef.txt"
            path.parent.mkdir(parents=True, exist_ok=True)
            text = f"{user.name}\n\n{ESSAY}"
            path.write_text(text)
            submission = Submission(activity=activity, user=user, attempt=1)
            submission.job = GradingJob(
                status="completed",
                original_filename="essay.txt",
                kind="text",
                size_bytes=len(text),
                sha256="0" * 64,
                storage_path=str(path.relative_to(data_dir)),
                extracted_text=text,
                score=8.0,
                scale=10.0,
                feedback="Good work.",
                raw_replies=[reply.content],
                prompts=[{"prompt_hash": "h", "messages": [{"role": "user", "content": text}]}],
                finished_at=utcnow(),
            )
            submission.grade = Grade(
                override_score=9.0, override_feedback="Well argued.", overridden_at=utcnow()
            )
            db.session.add(submission)
            db.session.add(
                ScorePush(
                    activity=activity,
                    user=user,
                    submission=submission,
                    kind="graded",
                    status="sent",
                    score_given=9.0,
                )
            )
            db.session.add(ModelUsage(activity_id=activity.id, model="m", calls=1))
            ReplyCache(cache_dir, scope=folder).put(f"{user.id:04x}{activity.id:060x}", reply)
        db.session.flush()
    for user in users:
        launch = {"iss": platform.issuer, "aud": platform.client_id, "sub": user.sub}
        redis.set(f"evaluaitor:lti:lti1p3-launch-{context}-{user.id}", json.dumps(launch))
    db.session.commit()


def run(database_url: str, redis_url: str, students: int, activities: int) -> dict[str, float]:
    tmp = Path(tempfile.mkdtemp(prefix="evaluaitor-bench-privacy-"))
    app = create_app(
        {
            "DATABASE_URL": database_url,
            "REDIS_URL": redis_url,
            "EVALUAITOR_DATA_DIR": str(tmp / "data"),
            "EVALUAITOR_LLM_CACHE_DIR": str(tmp / "cache"),
            "EVALUAITOR_KEY_DIR": str(tmp / "keys"),
            "SECRET_KEY": "bench",
        }
    )
    with app.app_context():
        if database_url.startswith("postgresql"):
            with db.engine.begin() as connection:
                connection.exec_driver_sql("DROP SCHEMA public CASCADE; CREATE SCHEMA public")
        db.create_all()
        redis_connection().flushdb()
        platform = Platform(
            name="School",
            issuer="https://lms.example",
            client_id="c",
            auth_login_url="https://lms.example/auth",
            auth_token_url="https://lms.example/token",
            key_set_url="https://lms.example/jwks",
        )
        platform.deployments.append(Deployment(deployment_id="1"))
        db.session.add(platform)
        db.session.commit()
        started = time.perf_counter()
        for context in ("course-1", "course-2"):
            seed(app, platform, context, students, activities)
        seeded = time.perf_counter() - started
        scope = privacy.Scope("course", "course-1", platform.id)
        started = time.perf_counter()
        archive = privacy.export_scope(scope, actor="bench")
        exported = time.perf_counter() - started
        started = time.perf_counter()
        erased = privacy.erase_scope(scope, actor="bench")
        erasing = time.perf_counter() - started
        left = db.session.query(Submission).count()
        db.session.remove()
        db.engine.dispose()
    assert left == students * activities, left  # the other course stays whole
    assert erased.counts["submissions"] == students * activities
    return {
        "seed s": seeded,
        "export s": exported,
        "zip MB": len(archive) / 1e6,
        "erase s": erasing,
        "files": erased.counts["files"],
        "cache": erased.counts["cache_entries"],
        "redis": erased.counts["redis_keys"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=300)
    parser.add_argument("--activities", type=int, default=2)
    parser.add_argument("--database", default=os.environ.get("EVALUAITOR_TEST_DATABASE_URL"))
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="evaluaitor-bench-privacy-"))
    databases = {"SQLite": f"sqlite:///{tmp / 'bench.db'}"}
    if args.database:
        databases["PostgreSQL"] = args.database
    print(
        f"one course of {args.students} students x {args.activities} activities "
        f"(and another course that stays), {os.cpu_count()} CPUs"
    )
    with EmbeddedRedis(tmp / "redis", persistent=False) as redis:
        for name, url in databases.items():
            figures = run(url, redis.url, args.students, args.activities)
            shown = "  ".join(
                f"{key} {value:.2f}" if isinstance(value, float) else f"{key} {value}"
                for key, value in figures.items()
            )
            print(f"{name:<11} {shown}")


if __name__ == "__main__":
    main()
