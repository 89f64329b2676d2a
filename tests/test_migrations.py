"""The Alembic migrations build exactly the schema the models describe."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from flask_migrate import downgrade, upgrade
from sqlalchemy import Engine, create_engine, inspect, text

from app import create_app
from app.extensions import db
from tests.conftest import POSTGRES_URL, database_url


def test_upgrade_matches_models_and_downgrades_cleanly(tmp_path, redis_server, key_dir):
    url = database_url(tmp_path)
    app = create_app({"DATABASE_URL": url, "REDIS_URL": redis_server.url})
    with app.app_context():
        if POSTGRES_URL:  # start from an empty database, as a new deployment does
            with db.engine.begin() as connection:
                connection.exec_driver_sql("DROP SCHEMA public CASCADE; CREATE SCHEMA public")
        upgrade()
        engine = create_engine(url)
        with engine.connect() as connection:
            diff = compare_metadata(MigrationContext.configure(connection), db.metadata)
        assert diff == []
        assert "submission" in inspect(engine).get_table_names()
        downgrade(revision="base")
        assert set(inspect(engine).get_table_names()) <= {"alembic_version"}
        engine.dispose()


def test_upgrade_keeps_existing_rows(tmp_path, redis_server, key_dir):
    """Batch migrations copy tables on SQLite; the rows under them must survive, and rows made
    before revision 0004 get what 0004 adds (a public id, an organization per platform)."""
    url = database_url(tmp_path)
    app = create_app({"DATABASE_URL": url, "REDIS_URL": redis_server.url})
    with app.app_context():
        if POSTGRES_URL:
            with db.engine.begin() as connection:
                connection.exec_driver_sql("DROP SCHEMA public CASCADE; CREATE SCHEMA public")
        upgrade(revision="0003")
        engine = create_engine(url)
        now = "2026-01-01 00:00:00"
        with engine.begin() as connection:
            for statement in (
                "INSERT INTO platform (id, name, issuer, client_id, auth_login_url, auth_token_url,"
                " key_set_url, is_active, created_at, updated_at) VALUES (1, 'Moodle', 'https://m',"
                " 'c', 'https://m/a', 'https://m/t', 'https://m/k', true, :now, :now)",
                "INSERT INTO deployment (id, platform_id, deployment_id, is_active, created_at,"
                " updated_at) VALUES (1, 1, '1', true, :now, :now)",
                "INSERT INTO lti_user (id, platform_id, sub, name, email, created_at, updated_at)"
                " VALUES (1, 1, 's', 'Ann', '', :now, :now)",
                "INSERT INTO activity (id, platform_id, deployment_id, resource_link_id, title,"
                " instructions, plugin_name, plugin_params, ags_scopes, reference_text,"
                " release_policy, created_at, updated_at) VALUES (1, 1, 1, 'rl', 'Essay', '',"
                " 'rubric_eval', '{}', '[]', '', 'auto', :now, :now)",
                "INSERT INTO submission (id, activity_id, user_id, attempt, status, progress_step,"
                " progress_total, progress_message, original_filename, kind, size_bytes, sha256,"
                " storage_path, comment, created_at, updated_at) VALUES (1, 1, 1, 1, 'graded', 0,"
                " 0, '', 'essay.txt', 'text', 3, 'x', 'p1/a1/u1/x', '', :now, :now)",
                "INSERT INTO grade (submission_id, score, feedback, criteria, flags, provenance,"
                " raw_replies, created_at, updated_at) VALUES (1, 7.5, 'Good', '[]', '[]', '{}',"
                " '[]', :now, :now)",
            ):
                connection.execute(text(statement), {"now": now})
        upgrade()
        with engine.connect() as connection:
            assert connection.execute(text("SELECT score FROM grading_job")).scalar_one() == 7.5
            assert connection.execute(text("SELECT count(*) FROM submission")).scalar_one() == 1
            public_id = connection.execute(text("SELECT public_id FROM activity")).scalar_one()
            assert len(public_id) == 32
            org = connection.execute(
                text(
                    "SELECT o.external_id, o.name FROM platform p"
                    " JOIN organization o ON o.id = p.organization_id"
                )
            ).one()
            assert tuple(org) == ("platform-1", "Moodle")
        engine.dispose()


def _fresh(tmp_path, redis_server):
    url = database_url(tmp_path)
    app = create_app({"DATABASE_URL": url, "REDIS_URL": redis_server.url})
    return url, app


FILE = "'essay.txt', 'text', 3, 'abc', 'p1/a1/u1/x'"
#: (id, status, error_message, job_id) of submissions at revision 0004, one per status.
OLD_SUBMISSIONS = [
    (1, "received", None, None),
    (2, "queued", None, "rq-2"),
    (3, "processing", None, "rq-3"),
    (4, "graded", None, "rq-4"),
    (5, "needs_review", "The reply had no score.", "rq-5"),
    (6, "failed", "The file could not be read.", "rq-6"),
]
OLD_EVALUATIONS = [  # (id, status, error_message, result, callback status)
    (1, "queued", None, None, None),
    (2, "completed", None, '{"score": 8, "max_score": 10, "score_normalized": 0.8,'
     ' "feedback": "Good", "criteria": [{"name": "A"}], "flags": [],'
     ' "provenance": {"plugin": "rubric_eval"}}', "sent"),
    (3, "needs_review", "Steering attempt.", '{"score": 9, "max_score": 10,'
     ' "score_normalized": 0.9, "feedback": "Hm", "criteria": [], "flags": [{"code": "X"}],'
     ' "provenance": {}}', "pending"),
    (4, "failed", "No model.", None, "failed"),
    (5, "cancelled", None, None, None),
]  # fmt: skip


def _fill_0004(engine) -> None:
    """A database at revision 0004 with a submission and an evaluation in every state."""
    now = "2026-01-01 00:00:00"
    statements = [
        "INSERT INTO organization (id, external_id, name, is_active, config, created_at,"
        " updated_at) VALUES (1, 'org', 'Org', true, '{}', :now, :now)",
        "INSERT INTO platform (id, name, issuer, client_id, auth_login_url, auth_token_url,"
        " key_set_url, is_active, organization_id, created_at, updated_at) VALUES (1, 'M',"
        " 'https://m', 'c', 'https://m/a', 'https://m/t', 'https://m/k', true, 1, :now, :now)",
        "INSERT INTO deployment (id, platform_id, deployment_id, is_active, created_at,"
        " updated_at) VALUES (1, 1, '1', true, :now, :now)",
        "INSERT INTO activity (id, public_id, platform_id, deployment_id, resource_link_id,"
        " title, instructions, plugin_name, plugin_params, ags_scopes, reference_text,"
        " release_policy, accepted_kinds, created_at, updated_at) VALUES (1, 'a1', 1, 1, 'rl',"
        " 'Essay', '', 'rubric_eval', '{}', '[]', '', 'auto', '[]', :now, :now)",
    ]
    for number, status, error, job_id in OLD_SUBMISSIONS:
        statements += [
            f"INSERT INTO lti_user (id, platform_id, sub, name, email, created_at, updated_at)"
            f" VALUES ({number}, 1, 's{number}', 'S', '', :now, :now)",
            f"INSERT INTO submission (id, activity_id, user_id, attempt, status, progress_step,"
            f" progress_total, progress_message, original_filename, kind, size_bytes, sha256,"
            f" storage_path, comment, error_message, job_id, created_at, updated_at) VALUES"
            f" ({number}, 1, {number}, 1, '{status}', 1, 3, 'Reading', {FILE}, '',"
            f" {repr(error) if error else 'NULL'}, {repr(job_id) if job_id else 'NULL'},"
            f" :now, :now)",
        ]
        if status in ("graded", "needs_review"):
            statements.append(
                f"INSERT INTO grade (submission_id, score, scale, normalized, feedback, criteria,"
                f" flags, provenance, raw_replies, error, override_score, released_at,"
                f" created_at, updated_at) VALUES ({number}, 7.5, 10, 0.75, 'Fine',"
                f" '[{{\"name\": \"A\"}}]', '[]', '{{\"total_tokens\": 5}}', '[\"7.5/10\"]',"
                f" {repr(error) if error else 'NULL'}, 9, :now, :now, :now)"
            )
    for number, status, error, result, callback in OLD_EVALUATIONS:
        statements.append(
            f"INSERT INTO evaluation (id, code, organization_id, status, progress_step,"
            f" progress_total, progress_message, original_filename, kind, size_bytes, sha256,"
            f" storage_path, plugin_name, plugin_params, evaluator_id, instructions, max_score,"
            f" client_reference, client_metadata, result, error_message, callback_url,"
            f" callback_status, callback_attempts, callback_error, created_at, updated_at)"
            f" VALUES ({number}, 'ev_{number}', 1, '{status}', 0, 0, '', {FILE}, 'rubric_eval',"
            f" '{{}}', 'm', '', 10, 'r{number}', '{{}}', {repr(result) if result else 'NULL'},"
            f" {repr(error) if error else 'NULL'},"
            f" {repr('https://client/hook') if callback else 'NULL'},"
            f" {repr(callback) if callback else 'NULL'}, 2, NULL, :now, :now)"
        )
    with engine.begin() as connection:
        for statement in statements:
            connection.execute(text(statement), {"now": now})


@contextmanager
def filled_0004_upgraded(tmp_path, redis_server, revision: str) -> Iterator[Engine]:
    """Inside the app's context, an engine on a database that revision 0004 filled (see
    :func:`_fill_0004`), then upgraded to ``revision``."""
    url, app = _fresh(tmp_path, redis_server)
    with app.app_context():
        if POSTGRES_URL:
            with db.engine.begin() as connection:
                connection.exec_driver_sql("DROP SCHEMA public CASCADE; CREATE SCHEMA public")
        upgrade(revision="0004")
        engine = create_engine(url)
        _fill_0004(engine)
        upgrade(revision=revision)
        try:
            yield engine
        finally:
            engine.dispose()


def test_0005_moves_every_submission_and_evaluation_into_its_grading_job(
    tmp_path, redis_server, key_dir
):
    """A database filled by revision 0004 keeps every row through 0005: the file, state,
    progress and result move into grading jobs with the core's status words, callbacks into
    their own rows; and back again on downgrade."""
    with filled_0004_upgraded(tmp_path, redis_server, "0005") as engine:
        with engine.connect() as connection:
            jobs = {
                row.submission_id: row
                for row in connection.execute(
                    text("SELECT * FROM grading_job WHERE submission_id IS NOT NULL")
                )
            }
            assert {n: jobs[n].status for n in jobs} == {
                1: "pending",
                2: "pending",
                3: "processing",
                4: "completed",
                5: "needs_review",
                6: "failed",
            }
            assert all(job.original_filename == "essay.txt" for job in jobs.values())
            assert all(job.storage_path == "p1/a1/u1/x" for job in jobs.values())
            assert (jobs[2].job_id, jobs[3].progress_message) == ("rq-2", "Reading")
            assert (jobs[4].score, jobs[4].scale, jobs[4].feedback) == (7.5, 10, "Fine")
            assert jobs[5].review_reason == "The reply had no score."
            assert jobs[5].error_message is None
            assert jobs[6].error_message == "The file could not be read."
            grades = connection.execute(
                text("SELECT submission_id, override_score FROM grade ORDER BY submission_id")
            ).all()
            assert [tuple(g) for g in grades] == [(4, 9), (5, 9)]  # the teacher's side stays

            evaluations = {
                row.evaluation_id: row
                for row in connection.execute(
                    text("SELECT * FROM grading_job WHERE evaluation_id IS NOT NULL")
                )
            }
            assert {n: e.status for n, e in evaluations.items()} == {
                1: "pending",
                2: "completed",
                3: "needs_review",
                4: "failed",
                5: "cancelled",
            }
            assert (evaluations[2].score, evaluations[2].scale) == (8, 10)
            assert evaluations[2].feedback == "Good"
            assert evaluations[3].review_reason == "Steering attempt."
            assert evaluations[4].error_message == "No model."
            callbacks = connection.execute(
                text("SELECT evaluation_id, status, attempts FROM callback ORDER BY evaluation_id")
            ).all()
            assert [tuple(c) for c in callbacks] == [
                (2, "sent", 2),
                (3, "pending", 2),
                (4, "failed", 2),
            ]

        downgrade(revision="0004")
        with engine.connect() as connection:
            statuses = connection.execute(
                text("SELECT status FROM submission ORDER BY id")
            ).scalars()
            assert list(statuses) == [
                "queued",
                "queued",
                "processing",
                "graded",
                "needs_review",
                "failed",
            ]
            assert (
                connection.execute(
                    text("SELECT score FROM grade WHERE submission_id = 4")
                ).scalar_one()
                == 7.5
            )
            result = connection.execute(
                text("SELECT result, callback_status FROM evaluation WHERE id = 2")
            ).one()
            assert result.callback_status == "sent"
