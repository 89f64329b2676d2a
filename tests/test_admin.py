"""The /admin page over real HTTP: sign-in, session cookie, CSRF, switches, usage figures."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest

from app.extensions import db
from app.lti import keys
from app.models import Deployment, Platform
from tests.conftest import run_jobs
from tests.documents import ESSAY
from tests.fakes.platform import BrowserFlowError, FakePlatform, browser_launch
from tests.test_core_loop import open_activity, upload
from tests.test_registration import behind_a_proxy, register

TOKEN = "admin-token-for-tests-0123456789"


@pytest.fixture
def admin_app(app):
    app.config["EVALUAITOR_ADMIN_TOKEN"] = TOKEN
    return app


def csrf_token(page: str) -> str:
    found = re.search(r'name="csrf_token" value="([^"]+)"', page)
    assert found, "no CSRF token on the page"
    return found.group(1)


def sign_in(browser, token: str = TOKEN):
    form = browser.get("/admin/")
    return browser.post(
        "/admin/sign-in", data={"token": token, "csrf_token": csrf_token(form.text)}
    )


@pytest.fixture
def admin(admin_app, browser):
    """The browser, signed in; returns the dashboard's HTML."""
    assert sign_in(browser).status_code == 303
    return browser


def switch(browser, path: str, active: bool):
    page = browser.get("/admin/").text
    return browser.post(
        path, data={"active": "1" if active else "0", "csrf_token": csrf_token(page)}
    )


def test_without_a_token_the_page_says_how_to_enable_it(app, browser):
    page = browser.get("/admin/")
    assert page.status_code == 200
    assert "switched off" in page.text and "EVALUAITOR_ADMIN_TOKEN" in page.text
    assert "<form" not in page.text


def test_a_wrong_token_is_refused(admin_app, browser, platform):
    response = sign_in(browser, "admin-token-for-tests-wrong")
    assert response.status_code == 401
    assert "not the admin token" in response.text
    assert platform.issuer not in browser.get("/admin/").text


def test_the_dashboard_lists_tenants_and_the_signing_key(app, admin, platform):
    page = admin.get("/admin/")
    assert page.status_code == 200
    assert platform.issuer in page.text and platform.client_id in page.text
    assert f"platform-{db.session.query(Platform).one().id}" in page.text  # its organization
    assert keys.active_key(app.config["EVALUAITOR_KEY_DIR"]).kid in page.text
    assert page.headers["X-Frame-Options"] == "DENY"
    assert "frame-ancestors 'none'" in page.headers["Content-Security-Policy"]
    assert page.headers["Cache-Control"] == "no-store"


def test_the_session_cookie_is_locked_down(admin_app, browser):
    response = sign_in(browser)
    cookie = response.headers["Set-Cookie"]
    assert "HttpOnly" in cookie and "SameSite=Lax" in cookie and "Expires=" in cookie
    assert "Secure" not in cookie  # plain HTTP here; see the HTTPS test
    assert TOKEN not in cookie


def test_the_cookie_is_secure_over_https(tmp_path, redis_server, key_dir):
    proxied = behind_a_proxy(tmp_path, redis_server, key_dir, EVALUAITOR_ADMIN_TOKEN=TOKEN)
    client = proxied.test_client()
    # Over HTTPS Flask-WTF also wants a same-origin Referer, which browsers send here.
    https = {"X-Forwarded-Proto": "https", "Referer": "https://localhost/admin/"}
    form = client.get("/admin/", headers=https).get_data(as_text=True)
    response = client.post(
        "/admin/sign-in", data={"token": TOKEN, "csrf_token": csrf_token(form)}, headers=https
    )
    assert response.status_code == 303
    assert "Secure" in response.headers["Set-Cookie"]


def test_sessions_expire(app, admin, platform):
    app.permanent_session_lifetime = timedelta(seconds=-1)
    assert platform.issuer not in admin.get("/admin/").text


def test_changing_the_token_signs_everyone_out(app, admin, platform):
    app.config["EVALUAITOR_ADMIN_TOKEN"] = "a-new-admin-token-0123456789"
    page = admin.get("/admin/").text
    assert platform.issuer not in page and 'name="token"' in page


def test_sign_out(admin, platform):
    page = admin.get("/admin/").text
    assert admin.post("/admin/sign-out", data={"csrf_token": csrf_token(page)}).status_code == 303
    assert platform.issuer not in admin.get("/admin/").text


@pytest.mark.parametrize("path", ["/admin/sign-in", "/admin/sign-out", "/admin/platforms/1/active"])
def test_every_admin_form_needs_the_csrf_token(admin, platform, path):
    response = admin.post(path, data={"token": TOKEN, "active": "0"})
    assert response.status_code == 400
    assert "CSRF" in response.text
    db.session.expire_all()
    assert db.session.query(Platform).one().is_active


def test_switches_need_a_signed_in_admin(admin_app, browser, platform):
    page = browser.get("/admin/").text  # the sign-in form, with a valid CSRF token
    response = browser.post(
        "/admin/platforms/1/active", data={"active": "0", "csrf_token": csrf_token(page)}
    )
    assert response.status_code == 403
    db.session.expire_all()
    assert db.session.query(Platform).one().is_active


def test_a_switched_off_platform_refuses_launches_until_activated(admin, platform, live_tool):
    platform_id = db.session.query(Platform).one().id
    response = switch(admin, f"/admin/platforms/{platform_id}/active", active=False)
    assert response.status_code == 303
    assert "is off" in admin.get("/admin/").text
    with pytest.raises(BrowserFlowError, match="switched off this registration"):
        browser_launch(admin, platform, live_tool)

    switch(admin, f"/admin/platforms/{platform_id}/active", active=True)
    assert browser_launch(admin, platform, live_tool).status_code == 303


def test_a_switched_off_deployment_refuses_launches(admin, platform, live_tool):
    deployment = db.session.query(Deployment).one()
    switch(admin, f"/admin/deployments/{deployment.id}/active", active=False)
    db.session.expire_all()
    assert not db.session.get(Deployment, deployment.id).is_active
    response = browser_launch(admin, platform, live_tool)
    assert response.status_code == 400
    assert "switched off this registration" in response.text.replace("&#39;", "'")


def test_unknown_ids_are_not_found(admin):
    assert switch(admin, "/admin/platforms/999/active", active=False).status_code == 404
    assert switch(admin, "/admin/deployments/999/active", active=False).status_code == 404


def test_usage_counts_activities_submissions_and_tokens(admin, platform, llm, live_tool):
    """LTI pages keep working without CSRF tokens while the admin blueprint demands them."""
    llm.reply(
        "Final score: 8/10",
        usage={"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150},
    )
    page = open_activity(admin, platform, live_tool)
    assert upload(admin, page, "essay.txt", ESSAY.encode()).status_code == 303
    run_jobs()
    dashboard = admin.get("/admin/").text
    cells = re.findall(r"<td>(\d+)</td>", dashboard)
    assert cells == ["1", "1", "150"]  # activities, submissions, LLM tokens


def test_a_dynamically_registered_platform_is_activated_here(admin, live_tool):
    """Dynamic Registration leaves a new platform off; the admin page switches it on."""
    with FakePlatform() as moodle:
        assert register(admin, moodle, live_tool).status_code == 200
        with pytest.raises(BrowserFlowError, match="switched off"):
            browser_launch(admin, moodle, live_tool)
        assert moodle.issuer in admin.get("/admin/").text
        platform_id = db.session.query(Platform).one().id
        switch(admin, f"/admin/platforms/{platform_id}/active", active=True)
        assert browser_launch(admin, moodle, live_tool).status_code == 303


def test_the_admin_sets_an_organizations_model_servers(admin, platform, llm, live_tool):
    """Set on the page, the list holds the platform's gradings: the configured server is not
    on it, so a submission fails without a request reaching it; emptied, it grades again."""
    organization = db.session.query(Platform).one().organization
    path = f"/admin/organizations/{organization.id}/model-servers"
    page = admin.get("/admin/").text
    assert 'name="urls"' in page
    refused = admin.post(path, data={"urls": "not-a-url", "csrf_token": csrf_token(page)})
    assert refused.status_code == 303
    assert "were not changed" in admin.get("/admin/").text

    page = admin.get("/admin/").text
    urls = "https://llm.school.example/v1 http://10.0.0.5:8000"
    assert admin.post(path, data={"urls": urls, "csrf_token": csrf_token(page)}).status_code == 303
    page = admin.get("/admin/").text
    assert "https://llm.school.example:443/v1 http://10.0.0.5:8000" in page
    db.session.expire_all()
    assert db.session.get(type(organization), organization.id).model_base_urls == [
        "https://llm.school.example:443/v1",
        "http://10.0.0.5:8000",
    ]
    student = open_activity(admin, platform, live_tool)
    upload(admin, student, "essay.txt", ESSAY.encode())
    run_jobs()
    assert llm.requests == []

    page = admin.get("/admin/").text
    admin.post(path, data={"urls": "", "csrf_token": csrf_token(page)})
    assert "any the site allows" in admin.get("/admin/").text


def test_model_servers_need_a_signed_in_admin(admin_app, browser, platform):
    organization_id = db.session.query(Platform).one().organization_id
    page = browser.get("/admin/").text
    response = browser.post(
        f"/admin/organizations/{organization_id}/model-servers",
        data={"urls": "https://llm.school.example", "csrf_token": csrf_token(page)},
    )
    assert response.status_code == 403
    db.session.expire_all()
    assert not db.session.query(Platform).one().organization.model_base_urls
