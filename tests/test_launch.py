"""LTI 1.3 launches over real HTTP against a Moodle-like platform, including hostile ones."""

from __future__ import annotations

from urllib.parse import parse_qsl, urlsplit

import jwt
import pytest

from app.extensions import db
from app.lti.tool_config import find_platform
from app.models import Activity, Platform
from tests.fakes.platform import TEACHER, browser_launch


def launch_page(browser, platform, live_tool, **kwargs):
    response = browser_launch(browser, platform, live_tool, **kwargs)
    assert response.status_code == 303, response.text
    return browser.get(response.headers["Location"])


def test_student_launch_opens_the_upload_page(browser, platform, live_tool):
    page = launch_page(browser, platform, live_tool)
    assert page.status_code == 200
    assert "Submit your work" in page.text
    assert 'for="file"' in page.text  # the file input has a label


def test_teacher_launch_opens_the_submissions_page(browser, platform, live_tool):
    page = launch_page(browser, platform, live_tool, user="3", roles=TEACHER)
    assert page.status_code == 200
    assert "submissions" in page.text
    assert "No submissions yet." in page.text


def test_plain_resource_link_gets_defaults_from_the_launch(browser, platform, live_tool):
    launch_page(browser, platform, live_tool, title="Essay 2", description="Argue for X.")
    activity = db.session.query(Activity).one()
    assert activity.plugin_name == "rubric_eval"
    assert activity.instructions == "Essay 2\n\nArgue for X."
    assert activity.lineitem_url.endswith("/lineitem?type_id=1")


def test_login_initiation_by_get_works(browser, platform, live_tool):
    params = platform.login_params(target_link_uri=live_tool + "/lti/launch")
    response = browser.get("/lti/login", params=params)
    assert response.status_code == 302
    assert response.headers["Location"].startswith(platform.auth_login_url)


def _id_token_and_state(browser, platform, live_tool, **settings):
    """Run login and authentication, but keep the final form instead of posting it."""
    if settings:
        platform.set_launch("2", **settings)
    params = platform.login_params(target_link_uri=live_tool + "/lti/launch")
    login = browser.post("/lti/login", data=params)
    query = urlsplit(login.headers["Location"]).query
    _, fields = platform.authorize(dict(parse_qsl(query)))
    return fields


def test_replayed_id_token_is_refused(browser, platform, live_tool):
    fields = _id_token_and_state(browser, platform, live_tool)
    first = browser.post("/lti/launch", data=fields)
    assert first.status_code == 303
    replay = browser.post("/lti/launch", data=fields)
    assert replay.status_code == 400
    assert "already used" in replay.text


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"iat_offset": -600}, "expired"),
        ({"iat_offset": 600}, "expired or was not signed correctly"),
        ({"sign_with_other_key": True}, "not signed correctly"),
        ({"deployment_id": "999"}, "deployment of the tool is not registered"),
        ({"aud": "someone-else"}, "not registered with Evaluaitor"),
    ],
    ids=["expired", "issued-in-the-future", "bad-signature", "unknown-deployment", "wrong-aud"],
)
def test_untrustworthy_launches_get_a_clear_error_page(
    browser, platform, live_tool, settings, message
):
    fields = _id_token_and_state(browser, platform, live_tool, **settings)
    response = browser.post("/lti/launch", data=fields)
    assert response.status_code == 400
    assert message in response.text
    assert "Traceback" not in response.text


def test_clock_skew_of_thirty_seconds_is_accepted(browser, platform, live_tool):
    fields = _id_token_and_state(browser, platform, live_tool, iat_offset=30)
    assert browser.post("/lti/launch", data=fields).status_code == 303


def test_garbage_id_token_is_refused_without_a_stack_trace(browser, platform):
    response = browser.post("/lti/launch", data={"id_token": "not-a-jwt", "state": "x"})
    assert response.status_code == 400
    assert "could not be verified" in response.text


def test_login_from_an_unknown_issuer_is_refused(browser, platform, live_tool):
    params = platform.login_params(target_link_uri=live_tool + "/lti/launch")
    params["iss"] = "https://unknown.example.edu"
    response = browser.post("/lti/login", data=params)
    assert response.status_code == 400
    assert "not registered with Evaluaitor" in response.text


def test_several_client_ids_may_share_an_issuer(browser, platform, live_tool):
    """Canvas uses one issuer for every school: the client_id tells registrations apart."""
    twin = Platform(
        name="other school",
        issuer=platform.issuer,
        client_id="another-client",
        auth_login_url=platform.auth_login_url,
        auth_token_url=platform.auth_token_url,
        key_set_url=platform.key_set_url,
    )
    db.session.add(twin)
    db.session.commit()
    assert find_platform(platform.issuer, "another-client").id == twin.id
    assert launch_page(browser, platform, live_tool).status_code == 200


def test_jwks_publishes_the_public_key_only(browser, platform):
    keys = browser.get("/lti/jwks").json()["keys"]
    assert len(keys) == 1
    key = keys[0]
    assert key["kid"] and key["alg"] == "RS256" and key["kty"] == "RSA"
    assert "d" not in key and "p" not in key
    jwt.algorithms.RSAAlgorithm.from_jwk(key)


def test_page_token_cannot_be_forged(browser, platform, live_tool):
    page = launch_page(browser, platform, live_tool)
    token = str(page.url).rstrip("/").rsplit("/", 1)[-1]
    forged = token[:-3] + ("aaa" if not token.endswith("aaa") else "bbb")
    response = browser.get(f"/l/{forged}/")
    assert response.status_code == 401
    assert "session has expired" in response.text


def test_platform_key_rotation_is_picked_up(browser, platform, live_tool):
    assert launch_page(browser, platform, live_tool).status_code == 200  # JWKS now cached
    platform.rotate_key()  # the old key is gone from the platform's JWKS
    assert launch_page(browser, platform, live_tool).status_code == 200


def test_pages_link_back_to_the_course(browser, platform, live_tool):
    page = launch_page(browser, platform, live_tool)
    assert f'href="{platform.url}/mod/lti/return.php?course=' in page.text
    assert 'target="_top"' in page.text


def test_a_hostile_return_url_is_not_linked(browser, platform, live_tool):
    presentation = {"document_target": "iframe", "return_url": "javascript:alert(1)"}
    page = launch_page(
        browser,
        platform,
        live_tool,
        extra_claims={
            "https://purl.imsglobal.org/spec/lti/claim/launch_presentation": presentation
        },
    )
    assert "javascript:" not in page.text and "Back to the course" not in page.text
