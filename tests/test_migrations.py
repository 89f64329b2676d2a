"""The Alembic migrations build exactly the schema the models describe."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from flask_migrate import downgrade, upgrade
from sqlalchemy import create_engine, inspect

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
