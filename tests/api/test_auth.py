"""Who may call what: no token, a wrong one, a revoked one, an inactive organization, the
admin token where an organization's is needed and the other way round."""

from __future__ import annotations

from datetime import UTC, datetime

import httpx
import pytest

from app.api.auth import hash_token
from app.extensions import db
from app.models import ApiToken
from tests.api.conftest import ADMIN_TOKEN

ADMIN_ROUTES = [
    ("GET", "/database/status"),
    ("POST", "/organizations"),
    ("GET", "/organizations/school-a"),
]
ORG_ROUTES = [
    ("GET", "/evaluations"),
    ("POST", "/evaluations"),
    ("GET", "/evaluations/ev_x/status"),
    ("GET", "/evaluations/ev_x/result"),
    ("POST", "/evaluations/ev_x/cancel"),
]
ALL_ROUTES = [*ADMIN_ROUTES, *ORG_ROUTES, ("GET", "/plugins")]


def call(live_tool: str, method: str, path: str, token: str | None) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.request(method, live_tool + path, headers=headers, timeout=10)


@pytest.mark.parametrize(("method", "path"), ALL_ROUTES)
@pytest.mark.parametrize("token", [None, "wrong", "evk_unknown"], ids=["none", "junk", "unknown"])
def test_every_route_refuses_a_missing_or_unknown_token(live_tool, tenant, method, path, token):
    response = call(live_tool, method, path, token)
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "unauthorized"
    assert response.headers["WWW-Authenticate"].startswith("Bearer")


@pytest.mark.parametrize(("method", "path"), ALL_ROUTES)
def test_a_revoked_token_and_an_inactive_organization_are_refused(live_tool, tenant, method, path):
    token = db.session.query(ApiToken).filter_by(token_hash=hash_token(tenant.token)).one()
    token.revoked_at = datetime.now(UTC)
    db.session.commit()
    assert call(live_tool, method, path, tenant.token).status_code == 401
    token.revoked_at = None
    tenant.org.is_active = False
    db.session.commit()
    assert call(live_tool, method, path, tenant.token).status_code == 401


@pytest.mark.parametrize(("method", "path"), ADMIN_ROUTES)
def test_organization_tokens_cannot_use_admin_routes(live_tool, tenant, method, path):
    response = call(live_tool, method, path, tenant.token)
    assert response.status_code == 403


@pytest.mark.parametrize(("method", "path"), ORG_ROUTES)
def test_the_admin_token_cannot_reach_evaluations(live_tool, method, path):
    response = call(live_tool, method, path, ADMIN_TOKEN)
    assert response.status_code == 403
    assert "organization" in response.json()["error"]["message"]


def test_both_kinds_of_token_list_plugins(live_tool, tenant):
    for token in (ADMIN_TOKEN, tenant.token):
        response = call(live_tool, "GET", "/plugins", token)
        assert response.status_code == 200


@pytest.mark.parametrize(("method", "path"), ADMIN_ROUTES)
def test_admin_routes_say_when_no_admin_token_is_configured(app, live_tool, method, path):
    app.config["EVALUAITOR_ADMIN_TOKEN"] = None
    for token in (None, "", "anything"):
        response = call(live_tool, method, path, token)
        assert response.status_code == 503
        error = response.json()["error"]
        assert error["code"] == "admin_token_not_configured"
        assert "EVALUAITOR_ADMIN_TOKEN" in error["message"]


def test_token_use_is_recorded_and_only_the_hash_is_stored(live_tool, tenant):
    assert call(live_tool, "GET", "/plugins", tenant.token).status_code == 200
    db.session.expire_all()
    stored = db.session.query(ApiToken).one()
    assert stored.last_used_at is not None
    assert stored.token_hash == hash_token(tenant.token) and tenant.token not in stored.prefix * 2


def test_errors_outside_views_use_the_api_shape_and_the_lti_side_keeps_html(live_tool, tenant):
    unknown = call(live_tool, "GET", "/evaluations/ev_x/nothing", tenant.token)
    assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "not_found"
    wrong_method = call(live_tool, "DELETE", "/plugins", tenant.token)
    assert wrong_method.status_code == 405 and wrong_method.headers["Allow"]
    assert wrong_method.json()["error"]["code"] == "method_not_allowed"
    page = httpx.get(live_tool + "/no-such-page", headers={"Accept": "text/html"})
    assert page.status_code == 404 and "text/html" in page.headers["Content-Type"]
