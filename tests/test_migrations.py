"""The Alembic migrations build exactly the schema the models describe."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from flask_migrate import downgrade, upgrade
from sqlalchemy import create_engine, inspect, text

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
            assert connection.execute(text("SELECT score FROM grade")).scalar_one() == 7.5
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
