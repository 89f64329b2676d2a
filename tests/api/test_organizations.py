"""The admin endpoints: organizations (upsert and read) and the database status."""

from __future__ import annotations

import pytest
from flask_migrate import stamp

from app.extensions import db
from app.models import Organization
from tests.api.conftest import submit


def test_create_then_update_an_organization(admin):
    created = admin.post("/organizations", json={"external_id": "org_123", "name": "Example U"})
    assert created.status_code == 201, created.text
    body = created.json()
    assert body["external_id"] == "org_123" and body["name"] == "Example U"
    assert len(body["callback_secret"]) == 64  # shown once, at creation
    stored = db.session.query(Organization).filter_by(external_id="org_123").one()
    assert stored.callback_secret == body["callback_secret"]

    updated = admin.post(
        "/organizations",
        json={"external_id": "org_123", "name": "Example University", "config": {"lang": "es"}},
    )
    assert updated.status_code == 200
    assert updated.json()["name"] == "Example University"
    assert updated.json()["callback_secret"] is None  # never shown again
    assert updated.json()["id"] == body["id"]

    fetched = admin.get("/organizations/org_123").json()
    assert fetched["config"] == {"lang": "es"} and fetched["jobs_count"] == 0


def test_organization_counts_its_evaluations(admin, tenant):
    submit(tenant.client)
    submit(tenant.client)
    fetched = admin.get("/organizations/school-a").json()
    assert fetched["jobs_count"] == 2 and fetched["pending_jobs"] == 2


def test_an_unknown_organization_is_not_found(admin):
    response = admin.get("/organizations/nobody")
    assert response.status_code == 404 and response.json()["error"]["code"] == "not_found"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "external_id"),
        ({"external_id": ""}, "external_id"),
        ({"external_id": "has space"}, "external_id"),
        ({"external_id": "ok", "name": "x" * 201}, "name"),
        ({"external_id": "ok", "config": []}, "config"),
        ({"external_id": "ok", "colour": "red"}, "colour"),
        ([1, 2], "body"),
    ],
)
def test_bad_organization_bodies_name_the_field(admin, body, field):
    response = admin.post("/organizations", json=body)
    assert response.status_code == 422
    assert field in response.json()["error"]["message"]


def test_organization_bodies_must_be_json(admin):
    as_form = admin.post("/organizations", data={"external_id": "x"})
    assert as_form.status_code == 415
    broken = admin.post(
        "/organizations", content=b"{nope", headers={"Content-Type": "application/json"}
    )
    assert broken.status_code == 422 and "JSON" in broken.json()["error"]["message"]
    deep = admin.post(  # 130 kB of brackets: refused like broken JSON, not a RecursionError
        "/organizations",
        content=b'{"external_id": ' + b"[" * 65_000 + b"]" * 65_000 + b"}",
        headers={"Content-Type": "application/json"},
    )
    assert deep.status_code == 422 and "JSON" in deep.json()["error"]["message"]


def test_an_organization_can_be_deactivated(admin, tenant):
    response = admin.post("/organizations", json={"external_id": "school-a", "is_active": False})
    assert response.status_code == 200 and response.json()["is_active"] is False
    assert tenant.client.get("/evaluations").status_code == 401


def test_database_status(admin, tenant):
    submit(tenant.client)
    # The test schema is built from the models, without Alembic: no revision is recorded.
    unstamped = admin.get("/database/status").json()["database"]
    assert unstamped["revision"] is None and unstamped["schema_current"] is False
    stamp()  # the models match the newest migration (tests/test_migrations.py checks it)

    status = admin.get("/database/status").json()
    database = status["database"]
    assert database["reachable"] is True and database["dialect"] in ("sqlite", "postgresql")
    assert database["revision"] == database["head"] and database["schema_current"] is True
    assert status["jobs_count"] == 1 and status["pending_jobs"] == 1
    assert status["organizations_count"] == 1


def test_concurrent_creation_of_one_organization_creates_it_once(admin):
    from concurrent.futures import ThreadPoolExecutor

    def create(_: int) -> int:
        return admin.post("/organizations", json={"external_id": "race", "name": "R"}).status_code

    with ThreadPoolExecutor(8) as pool:
        statuses = sorted(pool.map(create, range(8)))
    assert statuses == [200] * 7 + [201]
    assert db.session.query(Organization).filter_by(external_id="race").count() == 1
