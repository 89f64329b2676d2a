"""Self-tests of the fake Moodle platform, over real HTTP, with a stand-in tool."""

from __future__ import annotations

import json
import secrets
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlencode

import httpx
import jwt
import pytest
from werkzeug.serving import WSGIRequestHandler, make_server
from werkzeug.wrappers import Request, Response

from tests.fakes.platform import (
    AGS_CLAIM,
    LTI_CLAIM,
    NRPS_CLAIM,
    STUDENT,
    TEACHER,
    AuthorizationError,
    BrowserFlowError,
    FakePlatform,
    SigningKey,
    browser_launch,
)
from tests.fakes.platform.browser import parse_forms
from tests.fakes.platform.keys import jwks
from tests.fakes.platform.vocab import (
    AGS_SCOPES,
    LINEITEM_TYPE,
    LINEITEMS_TYPE,
    MEMBERSHIPS_TYPE,
    RESULTS_TYPE,
    SCOPE_LINEITEM_READONLY,
    SCOPE_NRPS,
    SCORE_TYPE,
)

CLIENT_ID = "evaluaitor-client"
HTTP = httpx.Client(timeout=10)  # shared: creating a client costs ~50 ms
TOOL_KEY = SigningKey.generate()  # shared: generating a key costs ~70 ms
FORM = "application/x-www-form-urlencoded"


class _Quiet(WSGIRequestHandler):
    def log(self, type: str, message: str, *args: Any) -> None:
        pass


class ToolStub:
    """Just enough tool: its JWKS, a pylti1p3-like login initiation, and a verifying launch."""

    def __init__(self) -> None:
        self.key = TOOL_KEY
        self.platform: FakePlatform | None = None
        self.cookie_check = False  # answer the first login with pylti1p3's cookie-check page
        self.nonces: set[str] = set()
        self._server = make_server("127.0.0.1", 0, self._app, threaded=True, request_handler=_Quiet)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_port}"

    def __enter__(self) -> ToolStub:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    @Request.application
    def _app(self, request: Request) -> Response:
        if request.path == "/lti/jwks":
            return Response(json.dumps(jwks(self.key)), content_type="application/json")
        if request.path == "/lti/login":
            return self._login(request)
        if request.path == "/lti/launch":
            return self._launch(request)
        return Response("not found", 404)

    def _login(self, request: Request) -> Response:
        assert self.platform is not None
        params = request.values.to_dict()
        if self.cookie_check and "lti1p3_new_window" not in params:
            url_params = json.dumps({**params, "lti1p3_new_window": "1"})
            return Response(f"<script>var urlParams = {url_params};</script>", mimetype="text/html")
        state, nonce = secrets.token_hex(8), secrets.token_hex(8)
        self.nonces.add(nonce)
        query = {
            "scope": "openid",
            "response_type": "id_token",
            "response_mode": "form_post",
            "prompt": "none",
            "client_id": params["client_id"],
            "redirect_uri": self.url + "/lti/launch",
            "state": state,
            "nonce": nonce,
            "login_hint": params["login_hint"],
            "lti_message_hint": params["lti_message_hint"],
        }
        location = f"{self.platform.auth_login_url}?{urlencode(query)}"
        response = Response(status=302, headers={"Location": location})
        response.set_cookie("lti-state", state)
        return response

    def _launch(self, request: Request) -> Response:
        assert self.platform is not None
        if request.cookies.get("lti-state") != request.form.get("state"):
            return Response("state mismatch", 400)
        claims = decode_id_token(self.platform, request.form["id_token"])
        if claims["nonce"] not in self.nonces:
            return Response("unknown nonce", 400)
        self.nonces.discard(claims["nonce"])
        return Response(json.dumps(claims), content_type="application/json")


@pytest.fixture
def tool() -> Iterator[ToolStub]:
    with ToolStub() as stub:
        yield stub


@pytest.fixture
def platform(tool: ToolStub) -> Iterator[FakePlatform]:
    with FakePlatform() as fake:
        fake.tool_jwks_url = tool.url + "/lti/jwks"
        fake.tool_redirect_uris = [tool.url + "/lti/launch"]
        tool.platform = fake
        yield fake


def decode_id_token(platform: FakePlatform, id_token: str) -> dict[str, Any]:
    """Verify as a tool would: key by kid from the platform's published key set."""
    keys = jwt.PyJWKSet.from_dict(HTTP.get(platform.key_set_url).json())
    kid = jwt.get_unverified_header(id_token)["kid"]
    key = next(k.key for k in keys.keys if k.key_id == kid)
    return jwt.decode(
        id_token, key, algorithms=["RS256"], audience=CLIENT_ID, issuer=platform.issuer
    )


def assertion(tool: ToolStub, platform: FakePlatform, **changes: Any) -> str:
    """A correct client assertion, with claims changed (None removes one)."""
    now = int(time.time())
    claims = {
        "iss": CLIENT_ID,
        "sub": CLIENT_ID,
        "aud": platform.auth_token_url,
        "iat": now,
        "exp": now + 300,
        "jti": secrets.token_hex(8),
    } | changes
    return tool.key.sign({k: v for k, v in claims.items() if v is not None})


def token_form(client_assertion: str, scope: str = " ".join(AGS_SCOPES)) -> dict[str, str]:
    return {
        "grant_type": "client_credentials",
        "client_assertion_type": "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
        "client_assertion": client_assertion,
        "scope": scope,
    }


def access_token(tool: ToolStub, platform: FakePlatform, scopes: list[str] = AGS_SCOPES) -> str:
    response = HTTP.post(
        platform.auth_token_url, data=token_form(assertion(tool, platform), " ".join(scopes))
    )
    assert response.status_code == 200, response.text
    return response.json()["access_token"]


def launch_lineitem(platform: FakePlatform, **kwargs: Any) -> str:
    claims = decode_id_token(platform, platform.make_id_token(nonce="n", **kwargs))
    return claims[AGS_CLAIM]["lineitem"]


def post_score(
    platform: FakePlatform,
    token: str,
    lineitem: str,
    *,
    content_type: str = SCORE_TYPE,
    **fields: Any,
) -> httpx.Response:
    """POST to Moodle's scores URL: "/scores" inserted before the line item URL's query."""
    path, query = lineitem.split("?", 1)
    score = {
        "userId": "2",
        "scoreGiven": 7,
        "scoreMaximum": 10,
        "activityProgress": "Completed",
        "gradingProgress": "FullyGraded",
        "timestamp": stamp(),
    } | fields
    return HTTP.post(
        f"{path}/scores?{query}",
        content=json.dumps({k: v for k, v in score.items() if v is not None}),
        headers={"Authorization": f"Bearer {token}", "Content-Type": content_type},
    )


def stamp(seconds: float = 0) -> str:
    moment = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=seconds)
    return moment.isoformat()


def bearer(token: str, **headers: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}", **headers}


# --- launches --------------------------------------------------------------------------------


def test_id_token_verifies_against_the_published_jwks_with_moodle_claims(
    platform: FakePlatform,
) -> None:
    claims = decode_id_token(platform, platform.make_id_token(nonce="abc"))

    assert claims["nonce"] == "abc"
    assert claims["sub"] == "2"
    assert claims["azp"] == CLIENT_ID
    assert claims["exp"] - claims["iat"] == 60
    assert claims[LTI_CLAIM + "version"] == "1.3.0"
    assert claims[LTI_CLAIM + "message_type"] == "LtiResourceLinkRequest"
    assert claims[LTI_CLAIM + "deployment_id"] == "1"
    assert claims[LTI_CLAIM + "target_link_uri"] == platform.tool_redirect_uris[0]
    assert claims[LTI_CLAIM + "roles"] == STUDENT
    assert claims[LTI_CLAIM + "resource_link"]["id"] == "rl-1"
    assert claims[LTI_CLAIM + "context"]["id"] == "course-1"
    assert claims[LTI_CLAIM + "launch_presentation"]["document_target"] == "iframe"
    assert claims["email"] == "user2@example.com"
    ags = claims[AGS_CLAIM]
    assert ags["scope"] == AGS_SCOPES
    assert ags["lineitems"] == platform.url + "/mod/lti/services.php/2/lineitems?type_id=1"
    assert (
        ags["lineitem"] == platform.url + "/mod/lti/services.php/2/lineitems/1/lineitem?type_id=1"
    )
    assert claims[NRPS_CLAIM]["context_memberships_url"] == platform.memberships_url
    assert platform.gradebook.lineitems[1].score_maximum == 10


def test_id_token_options(platform: FakePlatform) -> None:
    token = platform.make_id_token(
        nonce="n",
        user="7",
        roles=TEACHER,
        lineitem=False,
        aud=[CLIENT_ID, "other"],
        extra_claims={LTI_CLAIM + "custom": {"rubric": "r1"}},
        drop_claims=["email", "tool_platform"],
    )
    claims = decode_id_token(platform, token)

    assert claims[LTI_CLAIM + "roles"] == TEACHER
    assert "lineitem" not in claims[AGS_CLAIM]
    assert claims[LTI_CLAIM + "custom"] == {"rubric": "r1"}
    assert "email" not in claims and LTI_CLAIM + "tool_platform" not in claims
    with pytest.raises(ValueError, match="no claim"):
        platform.make_id_token(nonce="n", drop_claims=["no-such-claim"])


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"sign_with_other_key": True}, jwt.InvalidSignatureError),
        ({"iat_offset": -120}, jwt.ExpiredSignatureError),
        ({"aud": "someone-else"}, jwt.InvalidAudienceError),
    ],
)
def test_id_token_faults_fail_verification(
    platform: FakePlatform, kwargs: dict[str, Any], error: type[Exception]
) -> None:
    with pytest.raises(error):
        decode_id_token(platform, platform.make_id_token(nonce="n", **kwargs))


def test_login_params_are_moodles(platform: FakePlatform) -> None:
    params = platform.login_params(target_link_uri="http://tool/lti/launch", user="5")

    assert params["iss"] == platform.url
    assert params["login_hint"] == "5"
    assert params["client_id"] == CLIENT_ID
    assert params["lti_deployment_id"] == "1"
    hint = json.loads(params["lti_message_hint"])
    assert hint["cmid"] == 5
    assert hint["launchid"].startswith("ltilaunch1_")


def auth_params(platform: FakePlatform, tool: ToolStub, user: str = "2", **changes: str) -> dict:
    login = platform.login_params(target_link_uri=tool.url + "/lti/launch", user=user)
    params = {
        "scope": "openid",
        "response_type": "id_token",
        "response_mode": "form_post",
        "prompt": "none",
        "client_id": CLIENT_ID,
        "redirect_uri": tool.url + "/lti/launch",
        "login_hint": user,
        "lti_message_hint": login["lti_message_hint"],
        "nonce": "nonce-1",
        "state": "state-1",
    } | changes
    return {k: v for k, v in params.items() if v}


def test_auth_endpoint_answers_with_an_auto_submitting_form(
    platform: FakePlatform, tool: ToolStub
) -> None:
    response = HTTP.get(platform.auth_login_url, params=auth_params(platform, tool))

    assert response.status_code == 200
    [form] = parse_forms(response.text, platform.auth_login_url)
    assert form.method == "POST"
    assert form.action == tool.url + "/lti/launch"
    assert form.fields["state"] == "state-1"
    assert decode_id_token(platform, form.fields["id_token"])["nonce"] == "nonce-1"
    assert "document.ltiAuthForm.submit()" in response.text


def test_auth_endpoint_refuses_an_unregistered_redirect_uri(
    platform: FakePlatform, tool: ToolStub
) -> None:
    params = auth_params(platform, tool, redirect_uri="http://evil.example/launch")

    response = HTTP.post(platform.auth_login_url, data=params)

    assert response.status_code == 400
    assert "redirect_uri" in response.text


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"scope": "openid profile"}, "invalid_scope"),
        ({"response_type": "code"}, "unsupported_response_type"),
        ({"response_mode": "query"}, "response_mode"),
        ({"prompt": "login"}, "prompt"),
        ({"client_id": "other"}, "unauthorized_client"),
        ({"nonce": ""}, "missing nonce"),
        ({"state": ""}, "missing state"),
        ({"lti_message_hint": ""}, "missing lti_message_hint"),
        ({"lti_message_hint": '{"cmid": 5}'}, "No launch id"),
        ({"login_hint": "3"}, "access_denied"),
    ],
)
def test_authorize_refuses_bad_requests(
    platform: FakePlatform, tool: ToolStub, changes: dict[str, str], reason: str
) -> None:
    with pytest.raises(AuthorizationError, match=reason):
        platform.authorize(auth_params(platform, tool, **changes))


def test_launch_id_is_single_use(platform: FakePlatform, tool: ToolStub) -> None:
    params = auth_params(platform, tool)
    platform.authorize(params)

    with pytest.raises(AuthorizationError, match="unknown or used launch id"):
        platform.authorize(params)
    again = HTTP.post(platform.auth_login_url, data=params)
    assert again.status_code == 404 and "Invalid request" in again.text  # Moodle's error page


def test_set_launch_chooses_the_launch_by_login_hint(
    platform: FakePlatform, tool: ToolStub
) -> None:
    platform.set_launch("3", roles=TEACHER, title="Essay 2", resource_link_id="rl-2")

    _, fields = platform.authorize(auth_params(platform, tool, user="3"))
    teacher = decode_id_token(platform, fields["id_token"])
    _, fields = platform.authorize(auth_params(platform, tool, user="2"))
    student = decode_id_token(platform, fields["id_token"])

    assert teacher[LTI_CLAIM + "roles"] == TEACHER
    assert teacher[LTI_CLAIM + "resource_link"] == {
        "id": "rl-2",
        "title": "Essay 2",
        "description": "Write an essay on a topic of your choice.",
    }
    assert student[LTI_CLAIM + "roles"] == STUDENT
    with pytest.raises(TypeError):
        platform.set_launch("3", rolez=TEACHER)


@pytest.mark.parametrize("cookie_check", [False, True])
def test_browser_launch_follows_the_flow(
    platform: FakePlatform, tool: ToolStub, cookie_check: bool
) -> None:
    tool.cookie_check = cookie_check
    with httpx.Client() as http:
        response = browser_launch(http, platform, tool.url, user="4", roles=TEACHER)

    assert response.status_code == 200, response.text
    claims = response.json()
    assert claims["sub"] == "4"
    assert claims[LTI_CLAIM + "roles"] == TEACHER


def test_browser_launch_reports_a_refused_authentication(
    platform: FakePlatform, tool: ToolStub
) -> None:
    platform.tool_redirect_uris = []
    with httpx.Client() as http, pytest.raises(BrowserFlowError, match="redirect_uri"):
        browser_launch(http, platform, tool.url)


def test_key_rotation(platform: FakePlatform) -> None:
    old_kid = jwt.get_unverified_header(platform.make_id_token(nonce="n"))["kid"]
    platform.rotate_key(keep_old=True)
    token = platform.make_id_token(nonce="n")

    kids = [key["kid"] for key in HTTP.get(platform.key_set_url).json()["keys"]]
    assert kids == [jwt.get_unverified_header(token)["kid"], old_kid]
    assert decode_id_token(platform, token)["nonce"] == "n"


# --- token endpoint -----------------------------------------------------------------------------


def test_token_endpoint_accepts_a_correct_assertion(platform: FakePlatform, tool: ToolStub) -> None:
    response = HTTP.post(
        platform.auth_token_url,
        data=token_form(assertion(tool, platform, aud=[platform.auth_token_url])),
        headers={"Content-Type": FORM + "; charset=UTF-8"},
    )

    assert response.status_code == 200, response.text
    body = response.json()
    assert body["token_type"] == "Bearer"
    assert body["expires_in"] == 3600
    assert body["scope"].split() == AGS_SCOPES
    assert platform.token_requests == 1


def bad_token_request(case: str, tool: ToolStub, platform: FakePlatform) -> dict[str, Any]:
    """Keyword arguments for HTTP.post that get the token request wrong in one way."""
    now = int(time.time())
    claim_changes: dict[str, dict[str, Any]] = {
        "wrong-aud": {"aud": platform.url + "/login/token.php"},
        "two-auds": {"aud": [platform.auth_token_url, "someone-else"]},
        "iss-not-sub": {"iss": "someone-else"},
        "unknown-client": {"iss": "someone-else", "sub": "someone-else"},
        "no-jti": {"jti": None},
        "expired": {"iat": now - 100, "exp": now - 5},
        "too-long-lived": {"exp": now + 4000},
    }
    if case in claim_changes:
        return {"data": token_form(assertion(tool, platform, **claim_changes[case]))}
    form = token_form(assertion(tool, platform))
    if case in ("unknown-kid", "bad-signature"):
        claims = jwt.decode(form["client_assertion"], options={"verify_signature": False})
        kid = tool.key.kid if case == "bad-signature" else None
        return {"data": form | {"client_assertion": SigningKey.generate().sign(claims, kid=kid)}}
    return {
        "json-body": {"json": form},
        "empty-scope": {"data": form | {"scope": ""}},
        "unknown-scope": {"data": form | {"scope": "openid"}},
        "wrong-grant": {"data": form | {"grant_type": "password"}},
    }[case]


@pytest.mark.parametrize(
    ("case", "error"),
    [
        ("json-body", "invalid_request"),
        ("empty-scope", "invalid_request"),
        ("unknown-scope", "invalid_scope"),
        ("wrong-grant", "unsupported_grant_type"),
        ("wrong-aud", "invalid_client"),
        ("two-auds", "invalid_client"),
        ("iss-not-sub", "invalid_client"),
        ("unknown-client", "invalid_client"),
        ("no-jti", "invalid_client"),
        ("expired", "invalid_client"),
        ("too-long-lived", "invalid_client"),
        ("unknown-kid", "invalid_client"),
        ("bad-signature", "invalid_client"),
    ],
)
def test_token_endpoint_refuses(
    platform: FakePlatform, tool: ToolStub, case: str, error: str
) -> None:
    response = HTTP.post(platform.auth_token_url, **bad_token_request(case, tool, platform))

    assert response.status_code == 400
    assert response.json()["error"] == error
    assert response.json()["error_description"]
    assert "access_token" not in response.json()


def test_token_endpoint_refuses_a_replayed_jti(platform: FakePlatform, tool: ToolStub) -> None:
    form = token_form(assertion(tool, platform))
    assert HTTP.post(platform.auth_token_url, data=form).status_code == 200

    replay = HTTP.post(platform.auth_token_url, data=form)

    assert replay.status_code == 400
    assert "jti" in replay.json()["error_description"]
    assert platform.token_requests == 2


# --- scores and line items -------------------------------------------------------------------


def test_score_at_moodles_scores_url(platform: FakePlatform, tool: ToolStub) -> None:
    lineitem = launch_lineitem(platform, score_maximum=20)

    response = post_score(platform, access_token(tool, platform), lineitem, comment="Good")

    assert response.status_code == 200
    assert response.content == b""
    assert response.headers["Content-Type"].startswith(SCORE_TYPE)
    grade = platform.grade_for("2")
    assert grade is not None
    assert (grade["scoreGiven"], grade["grade"], grade["comment"]) == (7, 14, "Good")
    assert platform.scores[-1]["lineitem_n"] == 1
    assert platform.scores[-1]["comment"] == "Good"


def test_score_not_strictly_later_in_whole_seconds_is_refused(
    platform: FakePlatform, tool: ToolStub
) -> None:
    lineitem, token = launch_lineitem(platform), access_token(tool, platform)
    assert post_score(platform, token, lineitem, timestamp=stamp()).status_code == 200

    same_second = post_score(platform, token, lineitem, scoreGiven=8, timestamp=stamp(0.5))
    later = post_score(platform, token, lineitem, scoreGiven=9, timestamp=stamp(2))

    assert same_second.status_code == 409
    # Moodle's reason is in the status line only; the body is "[]".
    assert same_second.reason_phrase.startswith("Refusing score with an earlier timestamp")
    assert same_second.content == b"[]"
    assert later.status_code == 200
    assert platform.grade_for("2")["scoreGiven"] == 9


def test_any_score_not_fully_graded_clears_the_grade(
    platform: FakePlatform, tool: ToolStub
) -> None:
    lineitem, token = launch_lineitem(platform), access_token(tool, platform)
    post_score(platform, token, lineitem, timestamp=stamp())

    pending = post_score(
        platform, token, lineitem, scoreGiven=None, gradingProgress="Pending", timestamp=stamp(2)
    )
    assert pending.status_code == 200
    assert platform.grade_for("2")["grade"] is None

    post_score(platform, token, lineitem, timestamp=stamp(3))
    manual = post_score(
        platform, token, lineitem, gradingProgress="PendingManual", timestamp=stamp(4)
    )
    assert manual.status_code == 200
    cleared = platform.grade_for("2")
    assert (cleared["scoreGiven"], cleared["grade"], cleared["timemodified"]) == (None, None, None)
    # Nothing is held once cleared, so even an older timestamp is accepted.
    assert post_score(platform, token, lineitem, timestamp=stamp(-60)).status_code == 200


def test_held_timestamp_follows_moodle(platform: FakePlatform, tool: ToolStub) -> None:
    """The activity's own column holds the gradebook's clock; tool-made columns the score's."""
    token = access_token(tool, platform)
    coupled = launch_lineitem(platform)
    created = HTTP.post(
        platform.lineitems_url,
        json={"label": "Extra", "scoreMaximum": 10},
        headers=bearer(token, **{"Content-Type": LINEITEM_TYPE}),
    ).json()["id"]

    for lineitem, second_status in [(coupled, 409), (created, 200)]:
        assert post_score(platform, token, lineitem, timestamp=stamp(-100)).status_code == 200
        second = post_score(platform, token, lineitem, scoreGiven=8, timestamp=stamp(-50))
        assert second.status_code == second_status


def test_score_with_wrong_content_type_is_refused(platform: FakePlatform, tool: ToolStub) -> None:
    response = post_score(
        platform,
        access_token(tool, platform),
        launch_lineitem(platform),
        content_type="application/json",
    )

    assert response.status_code == 400
    assert "No handler found" in response.json()["reason"]
    assert platform.scores == []


@pytest.mark.parametrize(
    "fields",
    [
        {"scoreGiven": 11},
        {"scoreGiven": -1},
        {"scoreMaximum": None},
        {"scoreGiven": "7"},
        {"timestamp": "2024-05-01T10:00:00"},
        {"timestamp": "yesterday"},
        {"activityProgress": "Done"},
        {"gradingProgress": "Graded"},
        {"userId": "99"},
        {"userId": "3"},
    ],
)
def test_invalid_scores_are_refused(
    platform: FakePlatform, tool: ToolStub, fields: dict[str, Any]
) -> None:
    platform.make_id_token(nonce="n", user="3", roles=TEACHER)  # enrolled, but not gradable

    response = post_score(
        platform, access_token(tool, platform), launch_lineitem(platform), **fields
    )

    assert response.status_code == 400
    assert response.reason_phrase.startswith("Incorrect score received")
    assert response.json() == []


def test_deleted_lineitem_is_gone(platform: FakePlatform, tool: ToolStub) -> None:
    lineitem, token = launch_lineitem(platform), access_token(tool, platform)
    post_score(platform, token, lineitem)

    assert HTTP.delete(lineitem, headers=bearer(token)).status_code == 204

    assert post_score(platform, token, lineitem, timestamp=stamp(2)).status_code == 404
    assert HTTP.get(lineitem, headers=bearer(token)).status_code == 404
    assert platform.grade_for("2") is None
    claims = decode_id_token(platform, platform.make_id_token(nonce="n"))
    assert "lineitem" not in claims[AGS_CLAIM]


def test_services_require_a_token_with_the_scope(platform: FakePlatform, tool: ToolStub) -> None:
    lineitem = launch_lineitem(platform)
    readonly = access_token(tool, platform, [SCOPE_LINEITEM_READONLY])

    assert post_score(platform, "not-a-token", lineitem).status_code == 401
    assert post_score(platform, readonly, lineitem).status_code == 401
    assert HTTP.get(lineitem, headers=bearer(readonly)).status_code == 200
    wrong_type = lineitem.replace("type_id=1", "type_id=2")
    assert HTTP.get(wrong_type, headers=bearer(readonly)).status_code == 401
    platform.expire_tokens()
    expired = HTTP.get(lineitem, headers=bearer(readonly))
    assert expired.status_code == 401
    assert expired.json()["reason"] == "access token expired"


def test_lineitems_container(platform: FakePlatform, tool: ToolStub) -> None:
    launch_lineitem(platform)
    token = access_token(tool, platform)
    created = HTTP.post(
        platform.lineitems_url,
        json={"label": "Draft", "scoreMaximum": 5, "resourceLinkId": "rl-1", "tag": "draft"},
        headers=bearer(token, **{"Content-Type": LINEITEM_TYPE}),
    )
    assert created.status_code == 201
    assert created.json()["id"] == platform.lineitem_url(2)

    listing = HTTP.get(
        platform.lineitems_url + "&resource_link_id=rl-1&tag=draft",
        headers=bearer(token, Accept=LINEITEMS_TYPE),
    )
    assert listing.status_code == 200
    assert listing.headers["Content-Type"].startswith(LINEITEMS_TYPE)
    assert [item["label"] for item in listing.json()] == ["Draft"]

    everything = HTTP.get(platform.lineitems_url + "&limit=1", headers=bearer(token, Accept=""))
    assert [item["id"] for item in everything.json()] == [platform.lineitem_url(1)]
    assert "&amp;from=1>; rel=“next”" in everything.headers["Link"]  # sic, as Moodle sends it

    # Moodle answers 400 to the container unless Accept is its exact media type (or absent).
    assert HTTP.get(platform.lineitems_url, headers=bearer(token)).status_code == 400
    no_label = HTTP.post(
        platform.lineitems_url,
        json={"scoreMaximum": 5},
        headers=bearer(token, **{"Content-Type": LINEITEM_TYPE}),
    )
    assert no_label.status_code == 400
    unknown_link = HTTP.post(
        platform.lineitems_url,
        json={"label": "x", "scoreMaximum": 5, "resourceLinkId": "nope"},
        headers=bearer(token, **{"Content-Type": LINEITEM_TYPE}),
    )
    assert unknown_link.status_code == 403


def test_ungraded_activity_has_no_lineitem_until_the_tool_makes_one(
    platform: FakePlatform, tool: ToolStub
) -> None:
    token = platform.make_id_token(nonce="n", resource_link_id="rl-9", lineitem=False)
    assert "lineitem" not in decode_id_token(platform, token)[AGS_CLAIM]
    assert platform.lineitem_for_link("rl-9") is None

    created = HTTP.post(
        platform.lineitems_url,
        json={"label": "Essay", "scoreMaximum": 10, "resourceLinkId": "rl-9"},
        headers=bearer(access_token(tool, platform), **{"Content-Type": LINEITEM_TYPE}),
    )

    assert created.status_code == 201
    assert platform.lineitem_for_link("rl-9") == 1


def test_results_and_lineitem_update(platform: FakePlatform, tool: ToolStub) -> None:
    lineitem, token = launch_lineitem(platform), access_token(tool, platform)
    post_score(platform, token, lineitem, scoreGiven=5, comment="Half")
    put = HTTP.put(
        lineitem,
        json={"label": "Essay 1", "scoreMaximum": 20},
        headers=bearer(token, **{"Content-Type": LINEITEM_TYPE}),
    )
    assert put.status_code == 200

    results = HTTP.get(platform.results_url(1), headers=bearer(token, Accept=RESULTS_TYPE)).json()

    assert [(r["userId"], r["resultScore"], r["resultMaximum"], r["comment"]) for r in results] == [
        ("2", 10, 20, "Half")
    ]


def test_a_new_maximum_restamps_the_grades_it_rescales(
    platform: FakePlatform, tool: ToolStub
) -> None:
    """As Moodle's rescale does: a score dated before the change is then refused (409)."""
    platform.make_id_token(nonce="n", lineitem=False)  # a column the tool makes: dated by it
    token = access_token(tool, platform)
    created = HTTP.post(
        platform.lineitems_url,
        json={"label": "Essay", "scoreMaximum": 10, "resourceLinkId": "rl-1"},
        headers=bearer(token, **{"Content-Type": LINEITEM_TYPE}),
    ).json()["id"]
    assert post_score(platform, token, created, timestamp=stamp(-60)).status_code == 200
    same = {"label": "Essay", "scoreMaximum": 10}
    HTTP.put(created, json=same, headers=bearer(token, **{"Content-Type": LINEITEM_TYPE}))
    assert platform.grade_for("2")["timemodified"] < time.time() - 30  # unchanged maximum

    rescaled = HTTP.put(
        created,
        json={"label": "Essay", "scoreMaximum": 20},
        headers=bearer(token, **{"Content-Type": LINEITEM_TYPE}),
    )

    assert rescaled.status_code == 200
    assert platform.grade_for("2")["grade"] == 14
    refused = post_score(platform, token, created, scoreMaximum=20, timestamp=stamp(-30))
    assert refused.status_code == 409 and refused.content == b"[]"
    assert post_score(platform, token, created, timestamp=stamp(1)).status_code == 200


def test_memberships(platform: FakePlatform, tool: ToolStub) -> None:
    platform.make_id_token(nonce="n", user="3", roles=TEACHER)
    platform.enrol("4")
    token = access_token(tool, platform, [SCOPE_NRPS])

    response = HTTP.get(platform.memberships_url, headers=bearer(token, Accept=MEMBERSHIPS_TYPE))

    assert response.status_code == 200
    members = {m["user_id"]: m["roles"] for m in response.json()["members"]}
    assert members == {"3": TEACHER, "4": STUDENT}


# --- failure injection ---------------------------------------------------------------------------


def test_fail_next_injects_errors_then_recovers(platform: FakePlatform, tool: ToolStub) -> None:
    platform.fail_next("token", 500)
    assert (
        HTTP.post(platform.auth_token_url, data=token_form(assertion(tool, platform))).status_code
        == 500
    )
    token = access_token(tool, platform)
    lineitem = launch_lineitem(platform)

    platform.fail_next("scores", 503, times=2, headers={"Retry-After": "1"}, body="busy")
    first = post_score(platform, token, lineitem)
    second = post_score(platform, token, lineitem)
    third = post_score(platform, token, lineitem)

    assert (first.status_code, first.headers["Retry-After"], first.text) == (503, "1", "busy")
    assert second.status_code == 503
    assert third.status_code == 200
    assert platform.token_requests == 2
    assert [entry["status"] for entry in platform.request_log if entry["kind"] == "scores"] == [
        503,
        503,
        200,
    ]
    with pytest.raises(ValueError, match="unknown fault kind"):
        platform.fail_next("grades", 500)


def test_fail_next_delay_and_hang_up(platform: FakePlatform, tool: ToolStub) -> None:
    token, lineitem = access_token(tool, platform), launch_lineitem(platform)

    platform.fail_next("lineitem", None, delay=0.5)
    with pytest.raises(httpx.ReadTimeout):
        HTTP.get(lineitem, headers=bearer(token), timeout=0.1)

    platform.fail_next("lineitem", 0, delay=0.1)
    with pytest.raises(httpx.RemoteProtocolError):
        HTTP.get(lineitem, headers=bearer(token), timeout=2)

    assert HTTP.get(lineitem, headers=bearer(token)).status_code == 200
