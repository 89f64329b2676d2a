"""Sessions that outlive their reason: page tokens after an admin switches their platform,
deployment or organization off; an admin cookie after sign-out; guessing the admin token or
an API token over and over. All over real HTTP against the real app, Redis and database."""

from __future__ import annotations

import csv
import io
import logging
import socket

import httpx
import pytest
from redis import Redis

from app.extensions import db
from app.models import Activity, Deployment, LtiUser, Platform, Submission
from tests.conftest import run_jobs
from tests.documents import ESSAY
from tests.fakes.platform import TEACHER, browser_launch
from tests.test_admin import TOKEN, csrf_token, sign_in, switch
from tests.test_core_loop import open_activity, upload

SWITCHED_OFF = "This activity is switched off for your platform; ask your LMS administrator."
WRONG_TOKENS = [f"wrong-admin-token-{n}-secret" for n in range(6)]


@pytest.fixture
def admin(app, browser):
    """The browser, signed in on /admin."""
    app.config["EVALUAITOR_ADMIN_TOKEN"] = TOKEN
    assert sign_in(browser).status_code == 303
    return browser


@pytest.fixture
def pages(admin, platform, llm, live_tool) -> dict[str, str]:
    """A student's page (with a graded essay) and the teacher's page of the same activity."""
    llm.set_default("Final score: 8/10")
    student = open_activity(admin, platform, live_tool)
    assert upload(admin, student, "essay.txt", ESSAY.encode()).status_code == 303
    run_jobs()
    teacher = open_activity(admin, platform, live_tool, user="3", roles=TEACHER)
    return {"student": student, "teacher": teacher}


def _submission_id() -> int:
    return db.session.query(Submission).one().id


def assert_pages_work(browser, pages: dict[str, str]) -> None:
    student, teacher = pages["student"], pages["teacher"]
    assert "essay.txt" in browser.get(student).text
    assert browser.get(student + "status").json()["submission"]["score"] == 8
    assert f"submissions/{_submission_id()}" in browser.get(teacher).text  # the class list
    assert "essay.txt" in browser.get(f"{teacher}submissions/{_submission_id()}").text
    exported = browser.get(teacher + "gradebook.csv")
    assert exported.status_code == 200
    assert [row["ai_score"] for row in csv.DictReader(io.StringIO(exported.text))] == ["8"]
    assert browser.get(f"{teacher}submissions/{_submission_id()}/file").content == ESSAY.encode()


def assert_pages_refused(browser, pages: dict[str, str]) -> None:
    """403 with the explanation, and none of the activity's data, on every kind of route."""
    student, teacher = pages["student"], pages["teacher"]
    submission = _submission_id()
    for url in (
        student,
        teacher,
        f"{teacher}submissions/{submission}",
        f"{teacher}submissions/{submission}/file",
        teacher + "gradebook.csv",
        teacher + "settings",
    ):
        response = browser.get(url)
        assert response.status_code == 403, url
        assert SWITCHED_OFF in response.text.replace("&#39;", "'"), url
        assert "essay.txt" not in response.text and "Photosynthesis" not in response.text, url
    status = browser.get(student + "status")
    assert status.status_code == 403
    assert status.json() == {"error": "switched_off", "message": SWITCHED_OFF}
    again = upload(browser, student, "again.txt", ESSAY.encode())
    assert again.status_code == 403
    db.session.expire_all()
    assert db.session.query(Submission).count() == 1  # the upload was not taken


def _switch_platform(browser, active: bool) -> None:
    platform_id = db.session.query(Platform).one().id
    assert switch(browser, f"/admin/platforms/{platform_id}/active", active).status_code == 303


def _switch_deployment(browser, active: bool) -> None:
    deployment_id = db.session.query(Deployment).one().id
    response = switch(browser, f"/admin/deployments/{deployment_id}/active", active)
    assert response.status_code == 303


def _switch_organization(browser, active: bool) -> None:
    """Organizations are switched through the REST API, with the admin token."""
    org = db.session.query(Platform).one().organization
    response = browser.post(
        "/organizations",
        json={"external_id": org.external_id, "is_active": active},
        headers={"Authorization": f"Bearer {TOKEN}"},
    )
    assert response.status_code == 200


@pytest.mark.parametrize(
    "switch_off",
    [_switch_platform, _switch_deployment, _switch_organization],
    ids=["platform", "deployment", "organization"],
)
def test_switching_off_ends_page_tokens_at_once_and_on_restores_them(admin, pages, switch_off):
    assert_pages_work(admin, pages)
    switch_off(admin, False)
    assert_pages_refused(admin, pages)
    switch_off(admin, True)
    assert_pages_work(admin, pages)


def test_every_page_token_route_is_refused_when_switched_off(app, admin, pages):
    """Each route under /l/<token>/ (today's and any added later) goes through the check."""
    _switch_platform(admin, False)
    ids = {
        "submission_id": _submission_id(),
        "push_id": 1,
        "report_id": 1,
        "appeal_id": 1,
        "fmt": "yaml",
    }
    routes = [r for r in app.url_map.iter_rules() if "token" in r.arguments]
    assert len(routes) >= 20
    for rule in routes:
        for page in pages.values():
            token = page.rstrip("/").rsplit("/", 1)[-1]
            path = rule.build({**ids, "token": token}, append_unknown=False)[1]
            for method in rule.methods - {"HEAD", "OPTIONS"}:
                response = admin.request(method, path)
                assert response.status_code == 403, (method, rule.rule)
                assert "essay.txt" not in response.text, (method, rule.rule)


def test_a_launch_into_a_switched_off_organization_is_refused(admin, platform, live_tool):
    _switch_organization(admin, False)
    response = browser_launch(admin, platform, live_tool)
    assert response.status_code == 403
    assert SWITCHED_OFF in response.text.replace("&#39;", "'")
    assert db.session.query(Activity).count() == 0 and db.session.query(LtiUser).count() == 0


def test_a_copied_admin_cookie_is_refused_after_sign_out(admin, live_tool, platform):
    page = admin.get("/admin/").text
    assert platform.issuer in page
    copied = dict(admin.cookies)
    assert admin.post("/admin/sign-out", data={"csrf_token": csrf_token(page)}).status_code == 303

    with httpx.Client(base_url=live_tool, cookies=copied, timeout=10) as thief:
        replayed = thief.get("/admin/")
        assert replayed.status_code == 200
        assert platform.issuer not in replayed.text and 'name="token"' in replayed.text
        platform_id = db.session.query(Platform).one().id
        switched = thief.post(
            f"/admin/platforms/{platform_id}/active",
            data={"active": "0", "csrf_token": csrf_token(replayed.text)},
        )
    assert switched.status_code == 403
    db.session.expire_all()
    assert db.session.query(Platform).one().is_active


def test_wrong_admin_tokens_lock_the_address_out(app, browser, caplog, live_tool, platform):
    app.config["EVALUAITOR_ADMIN_TOKEN"] = TOKEN
    caplog.set_level(logging.WARNING, logger="app.ratelimit")
    for wrong in WRONG_TOKENS[:5]:
        assert sign_in(browser, wrong).status_code == 401
    locked = sign_in(browser, WRONG_TOKENS[5])
    assert locked.status_code == 429
    assert 0 < int(locked.headers["Retry-After"]) <= 900
    assert "Too many failed attempts" in locked.text
    right = sign_in(browser, TOKEN)
    assert right.status_code == 429  # the right token too, while locked
    assert platform.issuer not in browser.get("/admin/").text

    failures = [r for r in caplog.records if r.name == "app.ratelimit"]
    assert len(failures) == 5
    assert all(r.levelno == logging.WARNING and "127.0.0.1" in r.getMessage() for r in failures)
    logged = caplog.text + "".join(str(r.args) for r in caplog.records)
    assert not any(wrong in logged for wrong in WRONG_TOKENS) and TOKEN not in logged

    # The lockout is per address: another one signs in.
    transport = httpx.HTTPTransport(local_address="127.0.0.2")
    with httpx.Client(base_url=live_tool, transport=transport, timeout=10) as elsewhere:
        assert sign_in(elsewhere).status_code == 303
        assert platform.issuer in elsewhere.get("/admin/").text


def test_wrong_api_tokens_lock_the_address_out(app, live_tool, caplog):
    app.config["EVALUAITOR_ADMIN_TOKEN"] = TOKEN
    caplog.set_level(logging.WARNING, logger="app.ratelimit")
    admin = {"Authorization": f"Bearer {TOKEN}"}
    with httpx.Client(base_url=live_tool, timeout=10) as client:
        for wrong in WRONG_TOKENS[:5]:
            response = client.get("/plugins", headers={"Authorization": f"Bearer {wrong}"})
            assert response.status_code == 401
        right = client.get("/database/status", headers=admin)
        assert right.status_code == 429
        assert right.json()["error"]["code"] == "too_many_attempts"
        assert 0 < int(right.headers["Retry-After"]) <= 900
        assert len([r for r in caplog.records if r.name == "app.ratelimit"]) == 5
        assert not any(wrong in caplog.text for wrong in WRONG_TOKENS)

        # Without Redis the API's lockout is skipped (fails open, see app.api.auth), so
        # clients keep reading their results while Redis is briefly down.
        _unreachable_redis(app)
        assert client.get("/plugins", headers=admin).status_code == 200


def _unreachable_redis(app) -> None:
    """Point the app's Redis client at a port nothing listens on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    app.extensions["evaluaitor.redis"] = Redis(port=port, socket_connect_timeout=1)


def test_admin_pages_fail_closed_without_redis(app, admin, platform):
    form = {"csrf_token": csrf_token(admin.get("/admin/").text)}
    platform_id = db.session.query(Platform).one().id
    _unreachable_redis(app)
    for response in (
        admin.get("/admin/"),
        admin.post(f"/admin/platforms/{platform_id}/active", data={**form, "active": "0"}),
        admin.post("/admin/sign-in", data={**form, "token": TOKEN}),
    ):
        assert response.status_code == 503
        assert "session store (Redis) is not reachable" in response.text
        assert platform.issuer not in response.text and "Traceback" not in response.text
    db.session.expire_all()
    assert db.session.query(Platform).one().is_active
