"""Shared fixtures: a real Redis server, a fresh SQLite database per test, the app served
over real HTTP, and the fake LMS and LLM peers on 127.0.0.1."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from rq import SimpleWorker
from sqlalchemy import create_engine, make_url, text

from app import create_app, tenants
from app.extensions import db, redis_connection
from app.jobs import queue
from app.jobs.redis_server import EmbeddedRedis
from app.models import Deployment, Platform
from tests.fakes.http import BackgroundServer
from tests.fakes.llm_server import FakeLLM
from tests.fakes.platform import FakePlatform

DATA = Path(__file__).parent / "data"


def _worker_database(url: str | None) -> str | None:
    """One PostgreSQL database per pytest-xdist worker, so parallel workers never share a
    schema; made on first use next to the database scripts/test.sh created."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if not url or not worker:
        return url
    base = make_url(url)
    name = f"{base.database}_{worker}"
    admin = create_engine(base.set(database="postgres"), isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        exists = connection.execute(
            text("SELECT 1 FROM pg_database WHERE datname = :name"), {"name": name}
        ).scalar()
        if not exists:
            connection.exec_driver_sql(f'CREATE DATABASE "{name}"')
    admin.dispose()
    return base.set(database=name).render_as_string(hide_password=False)


#: Set by scripts/test.sh for its PostgreSQL pass; unset, every test gets its own SQLite file.
POSTGRES_URL = _worker_database(os.environ.get("EVALUAITOR_TEST_DATABASE_URL"))


def database_url(tmp_path: Path) -> str:
    return POSTGRES_URL or f"sqlite:///{tmp_path / 'test.db'}"


def reset_schema() -> None:
    """A clean schema for this test (one PostgreSQL database serves the whole run)."""
    if POSTGRES_URL:
        with db.engine.begin() as connection:
            connection.exec_driver_sql("DROP SCHEMA public CASCADE; CREATE SCHEMA public")
    db.create_all()


@pytest.fixture(scope="session", autouse=True)
def instance_dir(tmp_path_factory) -> Iterator[Path]:
    """Apps made in tests keep their instance files (secret, keys, cache) out of the repo."""
    path = tmp_path_factory.mktemp("instance")
    previous = os.environ.get("EVALUAITOR_INSTANCE_DIR")
    os.environ["EVALUAITOR_INSTANCE_DIR"] = str(path)
    yield path
    if previous is None:
        del os.environ["EVALUAITOR_INSTANCE_DIR"]
    else:
        os.environ["EVALUAITOR_INSTANCE_DIR"] = previous


# -- leaked processes ---------------------------------------------------------------------


@pytest.fixture(scope="session", autouse=True)
def no_process_outlives_the_tests(tmp_path_factory) -> Iterator[None]:
    """Fail the run if a process the tests started (redis-server, a worker, `evaluaitor run`)
    is still alive once every other fixture has stopped, and end it.

    Set up before any fixture that starts a process, so torn down after them. Each test
    process (each pytest-xdist worker) checks its own temporary folder, which every process it
    starts mentions (tests/processes.py). One still ending gets five seconds.
    """
    import time

    from tests import processes

    yield
    leaked = processes.find(tmp_path_factory.getbasetemp())
    deadline = time.monotonic() + 5
    while any(p.is_alive for p in leaked) and time.monotonic() < deadline:
        time.sleep(0.1)
    leaked = [p for p in leaked if p.is_alive]
    survivors = processes.kill(leaked)
    assert not leaked, "processes outlived the tests (now killed{}):\n{}".format(
        f"; still alive: {[p.pid for p in survivors]}" if survivors else "",
        "\n".join(f"{p.pid} {p.command}" for p in leaked),
    )


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory) -> Iterator[EmbeddedRedis]:
    with EmbeddedRedis(tmp_path_factory.mktemp("redis"), persistent=False) as server:
        yield server


@pytest.fixture(scope="session")
def key_dir(tmp_path_factory) -> Path:
    """One tool key for the whole run: generating RSA keys per test would only cost time."""
    return tmp_path_factory.mktemp("keys")


@pytest.fixture
def app(tmp_path, redis_server, key_dir):
    app = create_app(
        {
            "TESTING": True,
            "DATABASE_URL": database_url(tmp_path),
            "REDIS_URL": redis_server.url,
            "EVALUAITOR_DATA_DIR": str(tmp_path / "data"),
            "EVALUAITOR_KEY_DIR": str(key_dir),
            "EVALUAITOR_LLM_CACHE_DIR": str(tmp_path / "llm-cache"),
            "SECRET_KEY": "test-secret",
            "EVALUAITOR_LLM_BASE_URL": None,
            "EVALUAITOR_LLM_MODEL": "fake-model",
            "EVALUAITOR_LLM_BACKOFF_BASE": 0.01,
            "EVALUAITOR_LLM_MAX_RETRIES": 2,
            "EVALUAITOR_LLM_TIMEOUT": 2.0,
            "EVALUAITOR_AGS_TIMEOUT": 2.0,
            "EVALUAITOR_PASSBACK_RETRY_INTERVALS": [0, 0, 0],
            # The fake platforms and receivers listen on 127.0.0.1; tests/security turns it off.
            "EVALUAITOR_ALLOW_PRIVATE_URLS": 1,
        }
    )
    with app.app_context():
        reset_schema()
        redis_connection().flushdb()
        yield app
        db.session.remove()
        db.engine.dispose()


@pytest.fixture
def live_tool(app) -> Iterator[str]:
    """The app served over real HTTP, as an LMS and a browser would reach it."""
    server = BackgroundServer(app, "evaluaitor", quiet=False)
    yield f"http://127.0.0.1:{server.start()}"
    server.stop()


@pytest.fixture
def platform(app, live_tool) -> Iterator[FakePlatform]:
    """A Moodle-like platform, registered with the tool."""
    with FakePlatform() as fake:
        fake.tool_jwks_url = f"{live_tool}/lti/jwks"
        fake.tool_redirect_uris = [f"{live_tool}/lti/launch"]
        register(fake)
        yield fake


def register(fake: FakePlatform) -> Platform:
    platform = Platform(
        name=fake.name,
        issuer=fake.issuer,
        client_id=fake.client_id,
        auth_login_url=fake.auth_login_url,
        auth_token_url=fake.auth_token_url,
        key_set_url=fake.key_set_url,
    )
    platform.deployments.append(Deployment(deployment_id=fake.deployment_id))
    db.session.add(platform)
    tenants.attach_platform(platform)
    db.session.commit()
    return platform


@pytest.fixture
def llm(app) -> Iterator[FakeLLM]:
    with FakeLLM() as fake:
        app.config["EVALUAITOR_LLM_BASE_URL"] = fake.url
        yield fake


@pytest.fixture
def browser(live_tool) -> Iterator[httpx.Client]:
    """An HTTP client with a cookie jar, standing in for the user's browser."""
    with httpx.Client(base_url=live_tool, timeout=10) as client:
        yield client


def registration_path(lms_url: str) -> str:
    """``/lti/register/<token>``: a Dynamic Registration link an admin made for the LMS whose
    configuration lives at ``lms_url`` (its origin is what the link is tied to)."""
    from app.lti import registration_links

    return "/lti/register/" + registration_links.create(lms_url, hours=1).token


def run_jobs(*names: str) -> None:
    """Run the queued jobs (and immediate retries) in this process, as a worker would."""
    queues = [queue.queue(name) for name in names or (queue.GRADING, queue.PASSBACK)]
    SimpleWorker(queues, connection=redis_connection()).work(burst=True)


def announce_then_grade() -> None:
    """Send the queued pushes first, then run everything: as a worker does when the
    "submitted" push leaves while the file is being graded. (``run_jobs`` alone grades first,
    and the "submitted" push then finds a newer one and is not sent at all.)"""
    run_jobs(queue.PASSBACK)
    run_jobs()
