"""Extension objects, created unbound and wired to the app in :func:`app.create_app`."""

from __future__ import annotations

from typing import Any

from flask.json.provider import DefaultJSONProvider
from flask_migrate import Migrate
from flask_sqlalchemy import SQLAlchemy
from flask_wtf.csrf import CSRFProtect
from sqlalchemy import MetaData, event
from sqlalchemy.orm import DeclarativeBase

from app import safe_json

#: Stable constraint names, so Alembic migrations are reproducible across databases.
NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


#: Rows keep their values after commit instead of being reloaded on next access: requests and
#: jobs are short, each with its own session, and the reloads were most of the upload's queries.
db = SQLAlchemy(model_class=Base, session_options={"expire_on_commit": False})
migrate = Migrate()
#: Checks nothing by itself: the admin blueprint, the one with cookie sessions, calls
#: ``csrf.protect()`` (:mod:`app.admin`).
csrf = CSRFProtect()


def init_db(app) -> None:
    if not app.config["SQLALCHEMY_DATABASE_URI"].startswith("sqlite"):
        # A database server restarts: a pooled connection is tested before use instead of
        # failing the first request or job after the restart.
        options = app.config.setdefault("SQLALCHEMY_ENGINE_OPTIONS", {})
        options.setdefault("pool_pre_ping", True)
    db.init_app(app)
    if app.config["SQLALCHEMY_DATABASE_URI"].startswith("sqlite"):
        with app.app_context():
            event.listen(db.engine, "connect", _sqlite_pragmas)


def _sqlite_pragmas(connection, _record) -> None:
    """SQLite as a web database: concurrent readers during a write (WAL), a wait instead of
    an immediate "database is locked", fsync at checkpoints only, and enforced foreign keys
    (deleting a platform deletes its data)."""
    cursor = connection.cursor()
    for pragma in (
        "journal_mode=WAL",
        "synchronous=NORMAL",
        "busy_timeout=10000",
        "foreign_keys=ON",
    ):
        cursor.execute(f"PRAGMA {pragma}")
    cursor.close()


def init_redis(app) -> None:
    """One connection pool per process, shared by views, LTI storage and RQ."""
    from redis import Redis

    app.extensions["evaluaitor.redis"] = Redis.from_url(
        app.config["REDIS_URL"], socket_timeout=5, socket_connect_timeout=2
    )


def redis_connection():
    from flask import current_app

    return current_app.extensions["evaluaitor.redis"]


class BoundedJSONProvider(DefaultJSONProvider):
    """Flask's JSON, with ``request.get_json`` (and ``flask.json.loads``) bounded by
    :func:`app.safe_json.loads`: a too-deep body is invalid JSON, answered 400 like any other."""

    def loads(self, s: str | bytes, **kwargs: Any) -> Any:
        return safe_json.loads(s, **kwargs)
