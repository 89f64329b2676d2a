"""The practice platform over real HTTP: its launches into the tool (with and without the
state cookie), and every service it answers, including what it refuses."""

from __future__ import annotations

import base64
import html
import json
import os
import re
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from sqlalchemy import select

from app import practice
from app.extensions import db
from app.lti import claims, keys
from app.models import Activity, Grade, Platform
from app.practice import CLIENT_ID, DEPLOYMENT_ID, PracticeSettings, exercise
from app.practice.messages import CONTENT_ITEMS, CUSTOM, DL_DATA, SCOPE_RESULT
from app.practice.state import PracticeState
from tests import processes
from tests.conftest import run_jobs
from tests.fakes.platform.browser import parse_forms


@pytest.fixture
def practice_platform(app, live_tool, tmp_path) -> Iterator[PracticeSettings]:
    """The practice platform on localhost (another site than the tool), registered with it."""
    port = _free_port()
    settings = PracticeSettings(
        base_url=f"http://localhost:{port}", tool_url=live_tool, data_dir=tmp_path / "practice"
    )
    practice.register(settings)
    server = practice.serve_in_background(settings)
    yield settings
    server.shutdown()
    server.server_close()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def http() -> Iterator[httpx.Client]:
    """A browser whose cookies never come back: the tool inside a cross-site frame."""
    with httpx.Client(timeout=10) as client:
        client.event_hooks["response"] = [lambda response: client.cookies.clear()]
        yield client


def _data(page: str, name: str) -> str:
    match = re.search(rf'data-{name}="([^"]*)"', page)
    assert match, f"no data-{name} in the page"
    return html.unescape(match.group(1))


def _submit(http: httpx.Client, page: httpx.Response) -> httpx.Response:
    """Submit the page's single form, as its script (or the Continue button) would."""
    (form,) = parse_forms(page.text, str(page.url))
    if form.method.lower() == "get":
        return http.get(form.action, params=form.fields)
    return http.post(form.action, data=form.fields)


def _id_token_form(http: httpx.Client, settings: PracticeSettings, launch: str):
    """Platform page → tool login (storage page) → platform auth: the id_token form."""
    start = http.get(settings.base_url + "/launch", params={"launch": launch})
    login = _submit(http, start)
    auth = http.get(_data(login.text, "next"))
    (form,) = parse_forms(auth.text, str(auth.url))
    return form


def test_a_launch_without_cookies_goes_through_platform_storage(http, practice_platform):
    start = http.get(
        practice_platform.base_url + "/launch", params={"launch": "student practice-link-1"}
    )
    (login_form,) = parse_forms(start.text, str(start.url))
    assert login_form.action == practice_platform.tool_login_url
    assert login_form.fields["lti_storage_target"] == "lti-storage"

    login = http.post(login_form.action, data=login_form.fields)
    assert login.status_code == 200 and _data(login.text, "mode") == "put"
    assert _data(login.text, "origin") == practice_platform.base_url
    state = _data(login.text, "state")

    auth = http.get(_data(login.text, "next"))
    (post,) = parse_forms(auth.text, str(auth.url))
    assert post.action == practice_platform.tool_launch_url and post.fields["state"] == state
    body = jwt.decode(post.fields["id_token"], options={"verify_signature": False})
    assert body[claims.RESOURCE_LINK]["id"] == "practice-link-1"
    assert body[claims.AGS_ENDPOINT]["lineitem"].endswith("/ags/lineitems/1")
    assert body[claims.NRPS]["context_memberships_url"].endswith("/nrps/memberships")
    assert body[claims.LAUNCH_PRESENTATION]["document_target"] == "iframe"

    launch = http.post(post.action, data=post.fields)
    # No cookie came back: the page reads the state and nonce from the platform first.
    assert launch.status_code == 200
    assert _data(launch.text, "mode") == "get"
    assert _data(launch.text, "state") == state
    assert _data(launch.text, "nonce") == body["nonce"]
    page = http.get(practice_platform.tool_url + _data(launch.text, "next"))
    assert page.status_code == 200 and "Practice essay" in page.text

    # The same id_token again is a replay, storage or not.
    assert http.post(post.action, data=post.fields).status_code == 400


def test_without_storage_or_cookie_the_launch_offers_a_new_window(http, practice_platform):
    start = http.get(
        practice_platform.base_url + "/launch",
        params={"launch": "student practice-link-1", "no_storage": "1"},
    )
    login = _submit(http, start)
    assert login.status_code == 302  # a plain redirect: nowhere to keep the state but a cookie
    auth = http.get(login.headers["Location"])
    launch = _submit(http, auth)
    assert launch.status_code == 200
    assert "Open Evaluaitor in a new window" in launch.text
    (handoff,) = parse_forms(launch.text, str(launch.url))
    assert handoff.action == practice_platform.tool_url + "/lti/resume"
    assert set(handoff.fields) == {"handoff"}  # the checked launch, not a second login
    assert 'target="_blank"' in launch.text
    assert "/l/" not in launch.text  # no session was handed out in the frame
    window = http.post(handoff.action, data=handoff.fields)
    assert window.status_code == 303 and "/l/" in window.headers["Location"]
    assert http.post(handoff.action, data=handoff.fields).status_code == 400  # works once


def test_with_the_cookie_the_launch_redirects_at_once(practice_platform):
    with httpx.Client(timeout=10) as browser:  # keeps cookies: a first-party window
        start = browser.get(
            practice_platform.base_url + "/launch",
            params={"launch": "teacher practice-link-1", "window": "1"},
        )
        login = _submit(browser, start)
        auth = browser.get(login.headers["Location"])
        launch = _submit(browser, auth)
    assert launch.status_code == 303 and "/l/" in launch.headers["Location"]


def test_an_unknown_state_without_cookie_is_refused(http, practice_platform):
    post = _id_token_form(http, practice_platform, "student practice-link-1")
    forged = {**post.fields, "state": "state-" + str(uuid.uuid4())}
    response = http.post(post.action, data=forged)
    assert response.status_code == 400 and "data-mode" not in response.text


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"redirect_uri": "https://evil.example/lti/launch"}, "redirect_uri"),
        ({"client_id": "someone-else"}, "client_id"),
        ({"response_mode": "query"}, "response_mode"),
        ({"nonce": ""}, "nonce"),
        ({"lti_message_hint": "forged"}, "hint"),
        ({"login_hint": "practice-student-2"}, "login hint"),
    ],
)
def test_the_auth_endpoint_refuses_bad_requests(http, practice_platform, change, why):
    start = http.get(
        practice_platform.base_url + "/launch", params={"launch": "student practice-link-1"}
    )
    login = _submit(http, start)
    next_url = httpx.URL(_data(login.text, "next"))
    params = {**dict(next_url.params), **change}
    response = http.get(str(next_url.copy_with(query=None)), params=params)
    assert response.status_code == 400, why
    assert "id_token" not in response.text


@pytest.mark.parametrize("target", ["x'><script>", "a" * 65, "frame name"])
def test_an_odd_storage_target_is_ignored(http, practice_platform, target):
    start = http.get(
        practice_platform.base_url + "/launch", params={"launch": "student practice-link-1"}
    )
    (form,) = parse_forms(start.text, str(start.url))
    login = http.post(form.action, data={**form.fields, "lti_storage_target": target})
    assert login.status_code == 302  # the plain redirect: no page built around the name


def test_launch_page_refuses_unknown_links_and_roles(http, practice_platform):
    for launch in ("student nope", "visitor practice-link-1", "student"):
        response = http.get(practice_platform.base_url + "/launch", params={"launch": launch})
        assert response.status_code == 400, launch


# -- services ------------------------------------------------------------------------------


def _assertion(app, settings: PracticeSettings, *, signing=None, **overrides) -> str:
    """A client assertion as the tool makes it; ``signing`` = (pem, kid) to sign otherwise."""
    key = keys.active_key(app.config["EVALUAITOR_KEY_DIR"])
    pem, kid = signing or (key.private_pem, key.kid)
    now = int(time.time())
    body = {
        "iss": CLIENT_ID,
        "sub": CLIENT_ID,
        "aud": settings.base_url + "/token",
        "iat": now,
        "exp": now + 60,
        "jti": str(uuid.uuid4()),
        **overrides,
    }
    return jwt.encode(body, pem, algorithm="RS256", headers={"kid": kid})


def _token_form(assertion: str, scope: str) -> dict[str, str]:
    return {
        "grant_type": "client_credentials",
        "client_assertion_type": claims.CLIENT_ASSERTION_TYPE,
        "client_assertion": assertion,
        "scope": scope,
    }


def _token(app, settings, scope: str, **overrides) -> httpx.Response:
    form = _token_form(_assertion(app, settings, **overrides), scope)
    return httpx.post(settings.base_url + "/token", data=form)


def _bearer(app, settings, scope: str) -> dict[str, str]:
    response = _token(app, settings, scope)
    assert response.status_code == 200, response.text
    return {"Authorization": "Bearer " + response.json()["access_token"]}


def test_token_endpoint_checks_the_client_assertion(app, practice_platform):
    ok = _token(app, practice_platform, claims.SCOPE_SCORE + " https://example/unknown")
    assert ok.status_code == 200 and ok.json()["scope"] == claims.SCOPE_SCORE

    assert _token(app, practice_platform, claims.SCOPE_SCORE, aud="https://x/").status_code == 401
    assert _token(app, practice_platform, claims.SCOPE_SCORE, iss="other").status_code == 401
    assert _token(app, practice_platform, claims.SCOPE_SCORE, exp=1).status_code == 401
    assert _token(app, practice_platform, "https://example/unknown").status_code == 400
    form = _token_form(_assertion(app, practice_platform), claims.SCOPE_SCORE)
    assert httpx.post(practice_platform.base_url + "/token", data=form).status_code == 200
    again = httpx.post(practice_platform.base_url + "/token", data=form)
    assert again.status_code == 401 and "already used" in again.json()["message"]
    wrong_grant = httpx.post(
        practice_platform.base_url + "/token", data={**form, "grant_type": "password"}
    )
    assert wrong_grant.status_code == 400


def test_token_endpoint_refuses_a_key_the_tool_does_not_publish(app, practice_platform):
    stranger = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = stranger.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    own_kid = keys.active_key(app.config["EVALUAITOR_KEY_DIR"]).kid
    for kid in (own_kid, "not-published"):  # a forged signature, and an unknown key
        assertion = _assertion(app, practice_platform, signing=(pem, kid))
        form = _token_form(assertion, claims.SCOPE_SCORE)
        response = httpx.post(practice_platform.base_url + "/token", data=form)
        assert response.status_code == 401, kid


def test_ags_scores_results_and_line_items(app, practice_platform):
    base = practice_platform.base_url + "/ags/lineitems"
    every = " ".join(
        [claims.SCOPE_LINEITEM, claims.SCOPE_SCORE, SCOPE_RESULT, claims.SCOPE_LINEITEM_READONLY]
    )
    auth = _bearer(app, practice_platform, every)
    score = {
        "userId": "practice-student-1",
        "scoreGiven": 7.5,
        "scoreMaximum": 10,
        "activityProgress": "Completed",
        "gradingProgress": "FullyGraded",
        "timestamp": "2026-01-01T10:00:00+00:00",
        "comment": "Good",
    }
    score_type = {"Content-Type": claims.SCORE_CONTENT_TYPE}
    posted = httpx.post(f"{base}/1/scores", json=score, headers={**auth, **score_type})
    assert posted.status_code == 204
    results = httpx.get(f"{base}/1/results", headers=auth).json()
    assert results[0]["resultScore"] == 7.5 and results[0]["userId"] == "practice-student-1"

    created = httpx.post(
        base,
        json={"label": "Extra", "scoreMaximum": 5, "resourceLinkId": "practice-link-1"},
        headers={**auth, "Content-Type": claims.LINEITEM_CONTENT_TYPE},
    )
    assert created.status_code == 201 and created.json()["id"] == f"{base}/3"
    listed = httpx.get(base, params={"resource_link_id": "practice-link-1"}, headers=auth)
    assert [item["label"] for item in listed.json()] == ["Practice essay", "Extra"]
    assert httpx.get(f"{base}/3", headers=auth).json()["scoreMaximum"] == 5
    lineitem_type = {**auth, "Content-Type": claims.LINEITEM_CONTENT_TYPE}
    updated = httpx.put(
        f"{base}/3", json={"label": "Extra+", "scoreMaximum": 8}, headers=lineitem_type
    )
    assert updated.status_code == 200 and updated.json()["scoreMaximum"] == 8
    assert httpx.get(f"{base}/3", headers=auth).json()["label"] == "Extra+"
    assert (
        httpx.put(
            f"{base}/3", json={"label": "x", "scoreMaximum": 0}, headers=lineitem_type
        ).status_code
        == 400
    )
    assert (
        httpx.put(
            f"{base}/9", json={"label": "x", "scoreMaximum": 1}, headers=lineitem_type
        ).status_code
        == 404
    )

    # Refusals: bodies, content types, unknown items, missing or narrow tokens.
    def post(body: dict, headers: dict, lineitem: int = 1) -> int:
        return httpx.post(f"{base}/{lineitem}/scores", json=body, headers=headers).status_code

    for bad in (
        {**score, "userId": "stranger"},
        {**score, "gradingProgress": "Great"},
        {**score, "scoreGiven": -1},
        {**score, "scoreMaximum": None},
        {**score, "timestamp": "yesterday"},
    ):
        assert post(bad, {**auth, **score_type}) == 400, bad
    assert post(score, auth) == 415
    assert post(score, {**auth, **score_type}, lineitem=99) == 404
    assert post(score, score_type) == 401
    narrow = _bearer(app, practice_platform, SCOPE_RESULT)
    assert post(score, {**narrow, **score_type}) == 403
    assert httpx.get(base, headers={"Authorization": "Bearer made-up"}).status_code == 401


def test_nrps_lists_the_made_up_class(app, practice_platform):
    auth = _bearer(app, practice_platform, claims.SCOPE_NRPS)
    response = httpx.get(practice_platform.base_url + "/nrps/memberships", headers=auth)
    assert response.headers["Content-Type"].startswith(claims.MEMBERSHIPS_CONTENT_TYPE)
    members = response.json()["members"]
    assert len(members) == 5 and {m["status"] for m in members} == {"Active"}
    assert (
        httpx.get(
            practice_platform.base_url + "/nrps/memberships",
            headers=_bearer(app, practice_platform, claims.SCOPE_SCORE),
        ).status_code
        == 403
    )


# -- deep linking return -------------------------------------------------------------------


def _deep_link_request(http, settings) -> dict:
    """Start 'add an activity' and return the LtiDeepLinkingRequest the platform signed."""
    post = _id_token_form(http, settings, "teacher")
    return jwt.decode(post.fields["id_token"], options={"verify_signature": False})


def _response_jwt(app, settings, request: dict, items: list, **overrides) -> str:
    key = keys.active_key(app.config["EVALUAITOR_KEY_DIR"])
    now = int(time.time())
    body = {
        "iss": CLIENT_ID,
        "aud": settings.issuer,
        "iat": now,
        "exp": now + 300,
        "nonce": uuid.uuid4().hex,
        claims.MESSAGE_TYPE: "LtiDeepLinkingResponse",
        "https://purl.imsglobal.org/spec/lti/claim/version": "1.3.0",
        claims.DEPLOYMENT_ID: DEPLOYMENT_ID,
        DL_DATA: request["https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings"][
            "data"
        ],
        CONTENT_ITEMS: items,
        **overrides,
    }
    return jwt.encode(body, key.private_pem, algorithm="RS256", headers={"kid": key.kid})


ITEM = {
    "type": "ltiResourceLink",
    "title": "Lab report",
    "custom": {"activity": "abc123"},
    "lineItem": {"scoreMaximum": 20, "label": "Lab report", "resourceId": "abc123"},
}


def test_deep_linking_return_adds_a_link_whose_launches_carry_it(http, app, practice_platform):
    request = _deep_link_request(http, practice_platform)
    assert request[claims.MESSAGE_TYPE] == "LtiDeepLinkingRequest"
    assert claims.RESOURCE_LINK not in request
    token = _response_jwt(app, practice_platform, request, [ITEM])
    returned = http.post(practice_platform.base_url + "/deep-link-return", data={"JWT": token})
    assert returned.status_code == 200 and "Lab report" in returned.text

    post = _id_token_form(http, practice_platform, "student practice-link-2")
    body = jwt.decode(post.fields["id_token"], options={"verify_signature": False})
    assert body[CUSTOM] == {"activity": "abc123"}
    assert body[claims.RESOURCE_LINK]["title"] == "Lab report"
    lineitem = body[claims.AGS_ENDPOINT]["lineitem"]
    auth_header = _bearer(app, practice_platform, claims.SCOPE_LINEITEM_READONLY)
    assert httpx.get(lineitem, headers=auth_header).json()["scoreMaximum"] == 20


@pytest.mark.parametrize(
    ("items", "overrides"),
    [
        ([ITEM], {"aud": "https://someone-else.example"}),
        ([ITEM], {claims.MESSAGE_TYPE: "LtiResourceLinkRequest"}),
        ([ITEM], {claims.DEPLOYMENT_ID: "other"}),
        ([ITEM], {DL_DATA: "forged"}),
        ([ITEM], {"exp": 1}),
        ([ITEM, ITEM], {}),
        ([{**ITEM, "type": "html"}], {}),
        ([{**ITEM, "lineItem": {"scoreMaximum": -3}}], {}),
        ([{**ITEM, "custom": {"activity": 5}}], {}),
    ],
    ids=["aud", "type", "deployment", "data", "expired", "two", "html", "max", "custom"],
)
def test_deep_linking_return_refuses_bad_responses(http, app, practice_platform, items, overrides):
    request = _deep_link_request(http, practice_platform)
    token = _response_jwt(app, practice_platform, request, items, **overrides)
    response = http.post(practice_platform.base_url + "/deep-link-return", data={"JWT": token})
    assert response.status_code in (400, 401)
    links = PracticeState(practice_platform.data_dir / "state.json").links
    assert set(links) == {"practice-link-1", exercise.LINK_ID}


@pytest.mark.parametrize("part", [0, 1])
def test_deep_linking_return_refuses_a_deeply_nested_jwt(http, practice_platform, part):
    """130 kB of brackets in the header or the payload: 401 before PyJWT reads either."""
    segments = [b'{"alg": "RS256", "kid": "k"}', b'{"iss": "x"}']
    segments[part] = b'{"x": ' + b"[" * 65_000 + b"]" * 65_000 + b"}"
    token = ".".join(base64.urlsafe_b64encode(s).rstrip(b"=").decode() for s in segments)
    response = http.post(
        practice_platform.base_url + "/deep-link-return", data={"JWT": token + ".c2ln"}
    )
    assert response.status_code == 401


# -- the programming activity: graded with no model -----------------------------------------

SAMPLES = Path(practice.__file__).parent / "static"


def _tool_page(settings: PracticeSettings, browser: httpx.Client, launch: str) -> str:
    """Launch (e.g. ``student practice-program``) in a window, so the cookie comes back;
    returns the tool page's URL."""
    start = browser.get(settings.base_url + "/launch", params={"launch": launch, "window": "1"})
    login = _submit(browser, start)
    opened = _submit(browser, browser.get(login.headers["Location"]))
    assert opened.status_code == 303, opened.text
    return settings.tool_url + opened.headers["Location"]


def _gradebook_row(settings: PracticeSettings) -> str:
    """The practice page's gradebook row of the programming activity (the newest score)."""
    page = httpx.get(settings.base_url + "/", timeout=10).text
    rows = re.findall(r"<tr>(.*?)</tr>", page, re.S)
    row = next(r for r in rows if exercise.TITLE in r)
    return " ".join(re.sub(r"<[^>]+>", " ", row).split())


@pytest.mark.parametrize(
    ("sample", "score", "passed"),
    [(exercise.SAMPLES[0], "10 / 10", "5 of 5"), (exercise.SAMPLES[1], "6 / 10", "3 of 5")],
    ids=["correct", "buggy"],
)
def test_the_programming_activity_is_graded_with_no_model(
    app, practice_platform, sample, score, passed
):
    assert app.config["EVALUAITOR_LLM_BASE_URL"] is None
    page = httpx.get(practice_platform.base_url + "/", timeout=10).text
    assert exercise.TITLE in page and f"/static/{sample}" in page
    source = (SAMPLES / sample).read_bytes()
    assert httpx.get(f"{practice_platform.base_url}/static/{sample}").content == source

    with httpx.Client(timeout=30) as browser:
        tool_page = _tool_page(practice_platform, browser, f"student {exercise.LINK_ID}")
        assert "the largest number" in browser.get(tool_page).text
        uploaded = browser.post(
            tool_page + "submissions", files={"file": (Path(sample).name, source)}
        )
        assert uploaded.status_code in (200, 303), uploaded.text
        run_jobs()  # the worker's path: the grading queue, then the score's passback
        submission = browser.get(tool_page + "status").json()["submission"]

    assert submission["status"] == "completed", submission
    grade = db.session.scalars(select(Grade)).one()
    assert grade.result.provenance["plugin"] == "code_judge"
    assert passed in grade.result.feedback
    assert _gradebook_row(practice_platform).split(" Ada Student ")[1].startswith(score)


NO_MODEL_ALERT = "No language model is configured"


def test_only_the_essay_tells_its_teacher_that_grading_waits_for_a_model(practice_platform):
    with httpx.Client(timeout=30) as browser:
        essay = browser.get(_tool_page(practice_platform, browser, "teacher practice-link-1"))
        program = browser.get(_tool_page(practice_platform, browser, f"teacher {exercise.LINK_ID}"))
    assert essay.status_code == program.status_code == 200
    assert NO_MODEL_ALERT in essay.text
    assert exercise.TITLE in program.text and NO_MODEL_ALERT not in program.text


def test_an_old_course_gets_the_programming_activity_once(tmp_path):
    path = tmp_path / "state.json"
    path.write_text(json.dumps({"links": [{"id": "practice-link-1", "title": "Practice essay"}]}))
    state = PracticeState(path)
    assert list(state.links) == ["practice-link-1", exercise.LINK_ID]
    assert state.add_link("Lab").id == "practice-link-2"  # the fixed id shifts no number
    assert list(PracticeState(path).links) == [
        "practice-link-1",
        exercise.LINK_ID,
        "practice-link-2",
    ]


# -- registration and persistence ----------------------------------------------------------


def test_registration_is_idempotent_and_gets_an_organization(app, tmp_path):
    settings = PracticeSettings("http://localhost:6123", "http://127.0.0.1:6000", tmp_path)
    practice.register(settings)
    practice.register(settings)
    platforms = db.session.scalars(select(Platform).where(Platform.issuer == settings.issuer)).all()
    assert len(platforms) == 1
    platform = platforms[0]
    assert [d.deployment_id for d in platform.deployments] == [DEPLOYMENT_ID]
    assert platform.organization is not None and platform.is_active
    assert platform.key_set_url == "http://localhost:6123/jwks"
    (activity,) = db.session.scalars(select(Activity).where(Activity.platform_id == platform.id))
    assert activity.resource_link_id == exercise.LINK_ID and activity.plugin_name == "code_judge"
    assert activity.accepted_kinds == ["code"] and len(activity.plugin_params["tests"]) == 5


def test_state_survives_a_restart(tmp_path):
    path = tmp_path / "state.json"
    first = PracticeState(path)
    link = first.add_link("Essay 2", custom={"activity": "x"}, score_maximum=4)
    first.add_score(
        link.lineitem_id,
        {
            "userId": "practice-student-2",
            "activityProgress": "Completed",
            "gradingProgress": "FullyGraded",
            "timestamp": "2026-01-01T00:00:00Z",
            "scoreGiven": 3,
            "scoreMaximum": 4,
        },
    )
    again = PracticeState(path)
    assert again.links[link.id].custom == {"activity": "x"}
    assert again.latest_scores(link.lineitem_id)[0].score_given == 3


def test_run_starts_the_practice_platform_when_asked(tmp_path):
    ports = [_free_port(), _free_port()]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EVALUAITOR_", "REDIS_URL"))}
    env.update(
        EVALUAITOR_INSTANCE_DIR=str(tmp_path / "instance"),
        EVALUAITOR_PRACTICE="1",
        EVALUAITOR_PRACTICE_PORT=str(ports[1]),
    )
    with processes.reaped(tmp_path):
        process = subprocess.Popen(
            [sys.executable, "-m", "app.cli", "run", "--port", str(ports[0]), "--no-worker"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        wanted = f"Practice platform (try it without an LMS) on http://localhost:{ports[1]}/"
        for line in process.stdout:
            if wanted in line:
                break
        else:
            pytest.fail("run never printed the practice platform's address")
        page = _get_when_up(f"http://localhost:{ports[1]}/")
        assert "Practice course" in page.text
        jwks = _get_when_up(f"http://127.0.0.1:{ports[0]}/lti/jwks")
        assert jwks.json()["keys"]
        process.terminate()
        assert process.wait(timeout=30) == 0


def test_the_practice_command_serves_the_platform_alone(app, live_tool, tmp_path):
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EVALUAITOR_", "REDIS_URL"))}
    env.update(
        EVALUAITOR_INSTANCE_DIR=str(tmp_path / "alone"), DATABASE_URL=app.config["DATABASE_URL"]
    )
    args = ["practice", "--tool-url", live_tool, "--port", str(port)]
    with processes.reaped(tmp_path):
        process = subprocess.Popen(
            [sys.executable, "-m", "app.cli", *args],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        page = _get_when_up(f"http://localhost:{port}/")
        assert "Practice course" in page.text
        db.session.expire_all()
        registered = db.session.scalar(
            select(Platform).where(Platform.issuer == f"http://localhost:{port}")
        )
        assert registered is not None and registered.auth_login_url.endswith("/auth")
    process.wait(timeout=10)  # ended by reaped()


def _get_when_up(url: str, timeout: float = 20.0) -> httpx.Response:
    deadline = time.monotonic() + timeout
    while True:
        try:
            return httpx.get(url, timeout=5)
        except httpx.TransportError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def test_practice_is_off_unless_asked(monkeypatch, tmp_path):
    from app import config

    monkeypatch.delenv("EVALUAITOR_PRACTICE", raising=False)
    assert config.load(str(tmp_path))["EVALUAITOR_PRACTICE"] == 0
