"""LTI Dynamic Registration against the fake Moodle over real HTTP, then a launch with the result;
and the Canvas developer-key JSON."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator

import httpx
import pytest
from sqlalchemy import func, select

from app import create_app
from app.extensions import db
from app.lti import registration
from app.models import Deployment, Organization, Platform
from tests.conftest import registration_path
from tests.fakes.platform import BrowserFlowError, FakePlatform, browser_launch
from tests.fakes.platform.vocab import AP_SCOPES


@pytest.fixture
def moodle(app, live_tool) -> Iterator[FakePlatform]:
    """A fake Moodle that knows nothing of the tool until Dynamic Registration tells it."""
    with FakePlatform() as fake:
        yield fake


#: What the page says whatever the other end did (refused, slow, HTTP error, not JSON, ...).
NEUTRAL = "could not complete the registration with the LMS at 127.0.0.1"


def register(browser, moodle: FakePlatform, live_tool: str, *, token: str | None = None):
    token = moodle.registration.token() if token is None else token
    link = live_tool + registration_path(moodle.url)
    return browser.get(moodle.registration.start_url(link, token=token))


def stored_platforms() -> list[Platform]:
    db.session.expire_all()
    return db.session.scalars(select(Platform)).all()


def test_registration_stores_the_platform_and_a_launch_works(app, browser, moodle, live_tool):
    app.config["EVALUAITOR_REGISTRATION_AUTO_ACTIVATE"] = 1
    page = register(browser, moodle, live_tool)

    assert page.status_code == 200, page.text
    assert "pending" in page.text and "Site administration" in page.text
    assert "/static/registration.js" in page.text and "<script>" not in page.text
    # What the tool sent, built from the address it was reached at.
    sent = moodle.registration.registrations[0]
    assert sent["initiate_login_uri"] == f"{live_tool}/lti/login"
    assert sent["redirect_uris"] == [f"{live_tool}/lti/launch"]
    assert sent["jwks_uri"] == f"{live_tool}/lti/jwks"
    assert set(sent["scope"].split()) == set(registration.SCOPES)
    tool = sent[registration.TOOL_CONFIGURATION]
    assert tool["domain"] == live_tool.removeprefix("http://")
    assert [m["type"] for m in tool["messages"]] == [
        "LtiDeepLinkingRequest",
        "LtiResourceLinkRequest",
    ]
    # Deep linking is offered in the course and on an assignment, as its asset processor;
    # the processor's own launches are no messages (Canvas refuses those types).
    assert tool["messages"][0]["placements"] == ["ContentArea", "ActivityAssetProcessor"]
    assert set(AP_SCOPES) <= set(sent["scope"].split())
    # What the tool stored, from the configuration and the platform's answer.
    (platform,) = stored_platforms()
    assert (platform.issuer, platform.client_id) == (moodle.issuer, moodle.client_id)
    assert platform.auth_login_url == moodle.auth_login_url
    assert platform.auth_token_url == moodle.auth_token_url
    assert platform.key_set_url == moodle.key_set_url
    assert platform.is_active
    assert [d.deployment_id for d in platform.deployments] == [moodle.deployment_id]
    assert platform.organization is not None
    assert f"Client ID {moodle.client_id}" in page.text

    launch = browser_launch(browser, moodle, live_tool)
    assert launch.status_code == 303, launch.text
    assert "Essay 1" in browser.get(launch.headers["Location"]).text


def test_new_registrations_wait_for_an_admin_by_default(browser, moodle, live_tool):
    page = register(browser, moodle, live_tool)
    assert page.status_code == 200
    assert "admin page" in page.text
    (platform,) = stored_platforms()
    assert not platform.is_active

    with pytest.raises(BrowserFlowError, match=r"(?s)400.*switched off this registration"):
        browser_launch(browser, moodle, live_tool)

    platform.is_active = True
    db.session.commit()
    assert browser_launch(browser, moodle, live_tool).status_code == 303


def test_registering_again_updates_the_platform(app, browser, moodle, live_tool):
    app.config["EVALUAITOR_REGISTRATION_AUTO_ACTIVATE"] = 1
    assert register(browser, moodle, live_tool).status_code == 200
    (platform,) = stored_platforms()
    platform.is_active = False  # an admin switched it off; updating keeps that
    db.session.commit()
    moodle.registration.configuration_changes["authorization_server"] = moodle.url + "/aud"

    again = register(browser, moodle, live_tool, token=moodle.registration.token(update=True))

    assert again.status_code == 200, again.text
    (platform,) = stored_platforms()
    assert platform.auth_audience == moodle.url + "/aud"
    assert not platform.is_active
    assert db.session.scalar(select(func.count()).select_from(Deployment)) == 1
    assert db.session.scalar(select(func.count()).select_from(Organization)) == 1


def _unanswering_port() -> Iterator[int]:
    """A socket that accepts connections and never answers (the OS queues them)."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        yield listener.getsockname()[1]


@pytest.fixture
def silent_port() -> Iterator[int]:
    yield from _unanswering_port()


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.parametrize(
    ("query", "status", "message"),
    [
        ("", 400, "open it from your LMS"),
        ("?openid_configuration=http%3A%2F%2F127.0.0.1%2Fx", 400, "open it from your LMS"),
        ("?openid_configuration=file%3A%2F%2F%2Fetc%2Fpasswd&registration_token=t", 400, "http(s)"),
        ("?openid_configuration=javascript%3Aalert(1)&registration_token=t", 400, "http(s)"),
    ],
    ids=["no-parameters", "no-token", "file-url", "javascript-url"],
)
def test_bad_parameters_are_refused(browser, query, status, message):
    response = browser.get("/lti/register" + query)
    assert response.status_code == status
    assert message in response.text
    assert stored_platforms() == []


def test_an_unreachable_platform_is_named(browser):
    url = f"http://127.0.0.1:{_closed_port()}/openid-configuration"
    response = browser.get(
        registration_path(url), params={"openid_configuration": url, "registration_token": "t"}
    )
    assert response.status_code == 502
    assert NEUTRAL in response.text
    assert stored_platforms() == []


def test_a_platform_that_never_answers_times_out(app, browser, silent_port):
    app.config["EVALUAITOR_AGS_TIMEOUT"] = 0.5
    url = f"http://127.0.0.1:{silent_port}/openid-configuration"
    response = browser.get(
        registration_path(url), params={"openid_configuration": url, "registration_token": "t"}
    )
    assert response.status_code == 502
    assert NEUTRAL in response.text
    assert stored_platforms() == []


def _without(name: str) -> dict:
    return {name: None}


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"issuer": "https://moodle.example.edu"}, "issuer does not match"),
        ({"issuer": "not a url"}, "no valid issuer"),
        (_without("issuer"), "no valid issuer"),
        (_without("registration_endpoint"), "registration_endpoint"),
        (_without("jwks_uri"), "jwks_uri"),
        ({"token_endpoint": "ftp://127.0.0.1/token"}, "token_endpoint"),
        ({"jwks_uri": "http://127.0.0.1/" + "k" * 1000}, "jwks_uri"),
        (_without("authorization_endpoint"), "authorization_endpoint"),
        (_without(registration.PLATFORM_CONFIGURATION), "does not describe an LTI platform"),
    ],
    ids=[
        "foreign-issuer",
        "issuer-not-url",
        "no-issuer",
        "no-registration-endpoint",
        "no-jwks",
        "ftp-token-endpoint",
        "jwks-too-long",
        "no-auth-endpoint",
        "not-lti",
    ],
)
def test_a_bad_platform_configuration_is_refused(browser, moodle, live_tool, changes, message):
    moodle.registration.configuration_changes.update(changes)
    response = register(browser, moodle, live_tool)
    assert response.status_code == 400
    assert message in response.text
    assert moodle.registration.registrations == []
    assert stored_platforms() == []


def test_a_configuration_that_is_too_large_is_refused(browser, moodle, live_tool):
    padding = "x" * (registration.MAX_DOCUMENT_BYTES + 1)
    moodle.registration.configuration_changes["padding"] = padding
    response = register(browser, moodle, live_tool)
    assert response.status_code == 502
    assert NEUTRAL in response.text
    assert moodle.registration.registrations == []
    assert stored_platforms() == []


def test_a_configuration_that_is_not_json_is_refused(browser, moodle):
    response = browser.get(
        registration_path(moodle.url),
        params={
            "openid_configuration": moodle.url + "/mod/lti/return.php",
            "registration_token": "t",
        },
    )
    assert response.status_code == 502
    assert NEUTRAL in response.text
    assert stored_platforms() == []


@pytest.mark.parametrize(
    ("token", "status"),
    [("forged", 401), ("expired", 401), ("used", 401)],
)
def test_the_platform_refuses_bad_tokens_and_nothing_is_stored(
    app, browser, moodle, live_tool, caplog, token, status
):
    """The page says nothing of the refusal (whoever opened /lti/register chose the URL);
    the log has the status and the platform's refusal code, for the administrator."""
    if token == "forged":
        value = FakePlatform().registration.token()  # signed by another platform's key
    elif token == "expired":
        value = moodle.registration.token(lifetime=-10)
    else:
        value = moodle.registration.token()
        assert register(browser, moodle, live_tool, token=value).status_code == 200
        db.session.execute(db.delete(Platform))
        db.session.commit()
    response = register(browser, moodle, live_tool, token=value)
    assert response.status_code == 502
    assert NEUTRAL in response.text
    assert "HTTP" not in response.text and "token" not in response.text
    assert f"answered HTTP {status}" in caplog.text
    if token == "used":  # Moodle's refusal code reaches the server log
        assert "(token_already_used)" in caplog.text
    assert stored_platforms() == []


def test_nothing_of_a_refused_configuration_request_is_shown(browser, moodle):
    """The configuration URL is whatever the caller chose: its answer is never echoed."""
    response = browser.get(
        registration_path(moodle.url),
        params={"openid_configuration": moodle.url + "/secret-admin", "registration_token": "t"},
    )
    assert response.status_code == 502
    assert NEUTRAL in response.text
    assert "404" not in response.text
    assert "requested URL was not found" not in response.text
    assert stored_platforms() == []


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        ((500, "Database error"), NEUTRAL),
        ((503, "<html><body>Maintenance</body></html>"), NEUTRAL),
        ((200, "<html>Login</html>"), NEUTRAL),
        ((200, '{"client_id": "abc"}'), "did not say its client ID and deployment"),
        ((200, "[1, 2]"), "did not say its client ID and deployment"),
        (
            (
                200,
                json.dumps(
                    {"client_id": "", registration.TOOL_CONFIGURATION: {"deployment_id": 3}}
                ),
            ),
            "did not say its client ID and deployment",
        ),
    ],
    ids=["500", "503-html", "200-html", "no-deployment", "not-an-object", "empty-client-id"],
)
def test_bad_answers_from_the_registration_endpoint(browser, moodle, live_tool, answer, message):
    moodle.registration.next_answer = answer
    response = register(browser, moodle, live_tool)
    assert response.status_code == (502 if message == NEUTRAL else 400)
    assert message in response.text
    # nothing the platform answered reaches the page
    assert "Maintenance" not in response.text and "Database" not in response.text
    assert stored_platforms() == []


def _tool_body() -> dict:
    return registration.tool_registration(
        registration.ToolUrls(
            login="https://tool.example/lti/login",
            launch="https://tool.example/lti/launch",
            jwks="https://tool.example/lti/jwks",
        )
    )


@pytest.mark.parametrize(
    ("field", "value", "refusal"),
    [
        ("jwks_uri", None, "missing required attribute jwks_uri"),
        ("grant_types", ["implicit"], "invalid_grant_types"),
        ("token_endpoint_auth_method", "client_secret_basic", "invalid_token_endpoint_auth_method"),
        ("redirect_uris", "https://tool.example/lti/launch", "invalid_redirect_uris"),
    ],
)
def test_the_fake_checks_bodies_as_strictly_as_moodle(moodle, field, value, refusal):
    """The tool's own body passes the same checks (see the first test); broken ones do not."""
    body = _tool_body()
    if value is None:
        del body[field]
    else:
        body[field] = value
    endpoint = moodle.registration.configuration()["registration_endpoint"]
    headers = {"Authorization": f"Bearer {moodle.registration.token()}"}
    answer = httpx.post(endpoint, json=body, headers=headers)
    assert (answer.status_code, answer.text) == (400, refusal)
    assert httpx.post(endpoint, json=_tool_body(), headers=headers).status_code == 200


# --- Canvas ------------------------------------------------------------------------------


def test_canvas_json_names_this_server(browser, live_tool):
    config = browser.get("/lti/canvas.json").json()
    assert config["oidc_initiation_url"] == f"{live_tool}/lti/login"
    assert config["target_link_uri"] == f"{live_tool}/lti/launch"
    assert config["public_jwk_url"] == f"{live_tool}/lti/jwks"
    assert set(config["scopes"]) == set(registration.SCOPES)
    (canvas,) = config["extensions"]
    assert canvas["platform"] == "canvas.instructure.com"
    assert canvas["privacy_level"] == "name_only"
    placements = canvas["settings"]["placements"]
    assert {p["placement"] for p in placements} == {
        "assignment_selection",
        "link_selection",
        "ActivityAssetProcessor",  # Canvas's Document Processor: no "Canvas." prefix
    }
    assert {p["message_type"] for p in placements} == {"LtiDeepLinkingRequest"}
    assert {p["target_link_uri"] for p in placements} == {f"{live_tool}/lti/launch"}
    assert set(AP_SCOPES) <= set(config["scopes"])


def behind_a_proxy(tmp_path, redis_server, key_dir, **settings):
    """An app that trusts one reverse proxy's X-Forwarded-* headers, for the test client."""
    return create_app(
        {
            "TESTING": True,
            "DATABASE_URL": f"sqlite:///{tmp_path / 'proxied.db'}",
            "REDIS_URL": redis_server.url,
            "EVALUAITOR_KEY_DIR": str(key_dir),
            "SECRET_KEY": "test-secret",
            "EVALUAITOR_TRUSTED_PROXIES": 1,
            **settings,
        }
    )


def test_urls_come_from_the_proxy_when_it_is_trusted(tmp_path, redis_server, key_dir):
    proxied = behind_a_proxy(tmp_path, redis_server, key_dir)
    headers = {"X-Forwarded-Proto": "https", "X-Forwarded-Host": "grading.example.edu"}
    config = proxied.test_client().get("/lti/canvas.json", headers=headers).get_json()
    assert config["oidc_initiation_url"] == "https://grading.example.edu/lti/login"
    assert config["extensions"][0]["domain"] == "grading.example.edu"
