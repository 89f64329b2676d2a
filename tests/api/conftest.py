"""Fixtures for the REST API tests: an organization with a token, an HTTP client for it, and
a real HTTP server on 127.0.0.1 that receives callbacks."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import httpx
import pytest
from werkzeug.wrappers import Request, Response

from app import tenants
from app.api import auth
from app.extensions import db
from app.models import Organization
from tests.fakes.http import BackgroundServer

ADMIN_TOKEN = "admin-token-for-tests-only"


@pytest.fixture(autouse=True)
def api_settings(app):
    """The admin token set, callbacks retried at once (the app fixture allows 127.0.0.1)."""
    app.config.update(
        EVALUAITOR_ADMIN_TOKEN=ADMIN_TOKEN,
        EVALUAITOR_CALLBACK_RETRY_INTERVALS=[0, 0],
        EVALUAITOR_CALLBACK_TIMEOUT=0.5,
    )


@dataclass
class Tenant:
    org: Organization
    token: str
    client: httpx.Client


def make_tenant(live_tool: str, external_id: str) -> Tenant:
    org, _ = tenants.upsert_organization(external_id, name=external_id.title())
    org.callback_secret = auth.new_callback_secret()
    _, token = auth.create_token(org, "tests")
    db.session.commit()
    client = httpx.Client(
        base_url=live_tool, headers={"Authorization": f"Bearer {token}"}, timeout=10
    )
    return Tenant(org, token, client)


@pytest.fixture
def tenant(live_tool) -> Iterator[Tenant]:
    made = make_tenant(live_tool, "school-a")
    yield made
    made.client.close()


@pytest.fixture
def other_tenant(live_tool) -> Iterator[Tenant]:
    made = make_tenant(live_tool, "school-b")
    yield made
    made.client.close()


@pytest.fixture
def admin(live_tool) -> Iterator[httpx.Client]:
    headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    with httpx.Client(base_url=live_tool, headers=headers, timeout=10) as client:
        yield client


def submit(client: httpx.Client, filename: str = "essay.txt", data: bytes | None = None, **fields):
    from tests.documents import ESSAY

    body = ESSAY.encode() if data is None else data
    form = {
        key: json.dumps(value) if isinstance(value, dict | list) else str(value)
        for key, value in fields.items()
    }
    return client.post("/evaluations", files={"file": (filename, body)}, data=form)


@dataclass
class CallbackReceiver:
    """Records what it receives; answers each request with the next scripted status (200
    when the script is empty), sleeping first if told to."""

    statuses: list[int] = field(default_factory=list)
    delay: float = 0.0
    received: list[tuple[dict[str, str], bytes]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, environ, start_response):
        request = Request(environ)
        body = request.get_data()
        with self._lock:
            self.received.append((dict(request.headers), body))
            status = self.statuses.pop(0) if self.statuses else 200
        if self.delay:
            time.sleep(self.delay)
        return Response("ok", status=status)(environ, start_response)


@pytest.fixture
def receiver() -> Iterator[tuple[CallbackReceiver, str]]:
    app = CallbackReceiver()
    server = BackgroundServer(app, "callbacks")
    yield app, f"http://127.0.0.1:{server.start()}/hook"
    server.stop()
