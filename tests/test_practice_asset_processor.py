"""The practice platform's native assignment, its side of the LTI Asset Processor over real
HTTP: the attach request, its PNS endpoint, the signed notices it sends to a handler (a
test double on 127.0.0.1), its Asset Service and Asset Report Service, and the Canvas rules
of its pages ("View report", "Resubmit all files", what a student sees).

The end-to-end test at the bottom goes through the tool's side too: attach, submit, notice,
download, grading and the report the student then sees.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

import httpx
import jwt
import pytest
from werkzeug.wrappers import Request, Response

from app.lti import claims
from app.practice import CLIENT_ID, DEPLOYMENT_ID, PracticeSettings
from app.practice.assignment import TITLE, AssignmentState, Report
from app.practice.messages import CUSTOM, DL_DATA, PLACEMENT, TARGET_LINK_URI
from tests import test_practice
from tests.conftest import run_jobs
from tests.fakes.http import BackgroundServer
from tests.fakes.platform.browser import parse_forms
from tests.test_practice import _bearer, _data, _response_jwt

# The practice platform's fixtures, shared with its other tests.
practice_platform = test_practice.practice_platform
http = test_practice.http

DL_SETTINGS = "https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings"
PROCESSOR_ITEM = {
    "type": "ltiAssetProcessor",
    "title": "Evaluaitor",
    "text": "Grades the essay with its rubric.",
    "custom": {"activity": "abc123"},
    "report": {"custom": {"report": "yes"}},
}


# -- helpers -------------------------------------------------------------------------------


def _platform_claims(settings: PracticeSettings, token: str) -> dict:
    """Verify a JWT the practice signed with its own published key set."""
    keys = httpx.get(settings.base_url + "/jwks").json()
    key = jwt.PyJWKSet.from_dict(keys)[jwt.get_unverified_header(token)["kid"]].key
    return jwt.decode(token, key, algorithms=["RS256"], audience=CLIENT_ID, issuer=settings.issuer)


def _launch(http: httpx.Client, settings: PracticeSettings, **params) -> dict:
    """/assignment/launch → the tool's login → the platform's auth: the signed id_token's claims."""
    start = http.get(settings.base_url + "/assignment/launch", params=params)
    assert start.status_code == 200, start.text
    (login,) = parse_forms(start.text, str(start.url))
    assert login.fields["lti_storage_target"] == "lti-storage"
    login_page = http.post(login.action, data=login.fields)
    auth = http.get(_data(login_page.text, "next"))
    (post,) = parse_forms(auth.text, str(auth.url))
    assert post.action == settings.tool_launch_url
    return _platform_claims(settings, post.fields["id_token"]) | {
        "_target_link_uri": login.fields["target_link_uri"]
    }


def _attach(http, app, settings, items: list | None = None, live_tool: str = "") -> dict:
    """Attach processors the way the tool's deep linking answer does; the request's claims."""
    request = _launch(http, settings, action="attach")
    item = {**PROCESSOR_ITEM, "report": {**PROCESSOR_ITEM["report"]}}
    item["report"]["url"] = f"{live_tool or settings.tool_url}/lti/launch?report=1"
    token = _response_jwt(app, settings, request, items if items is not None else [item])
    returned = http.post(settings.base_url + "/deep-link-return", data={"JWT": token})
    assert returned.status_code == 200, returned.text
    return request


def _state(settings: PracticeSettings) -> AssignmentState:
    """The assignment as the platform stored it (read from its file, as after a restart)."""
    return AssignmentState(settings.data_dir / "assignment.json", settings.data_dir / "submitted")


@dataclass
class Handler:
    """A notice handler double: records each POST body and answers ``status``."""

    status: int = 204
    bodies: list[dict] = field(default_factory=list)

    def __call__(self, environ, start_response):
        request = Request(environ)
        self.bodies.append(json.loads(request.get_data()))
        return Response(status=self.status)(environ, start_response)

    def notices(self, settings: PracticeSettings) -> list[dict]:
        """Every notice received so far, verified with the platform's keys."""
        found = []
        for body in self.bodies:
            assert set(body) == {"notices"}
            found += [_platform_claims(settings, n["jwt"]) for n in body["notices"]]
        return found


@pytest.fixture
def handler(app, practice_platform) -> Iterator[tuple[Handler, str]]:
    """The double on 127.0.0.1 (the tool's host, as the PNS demands), registered by PUT."""
    double = Handler()
    server = BackgroundServer(double, "notice-handler")
    url = f"http://127.0.0.1:{server.start()}/lti/notices"
    auth = _bearer(app, practice_platform, claims.SCOPE_NOTICE_HANDLERS)
    put = httpx.put(
        practice_platform.base_url + "/pns/notice-handlers",
        json={"notice_type": claims.SUBMISSION_NOTICE, "handler": url},
        headers=auth,
    )
    assert put.status_code == 200, put.text
    yield double, url
    server.stop()


def _submit_work(settings, *, text: str = "", files=None, student: str = "practice-student-1"):
    files = [("file", f) for f in (files or [])] or [("file", ("", b""))]
    return httpx.post(
        settings.base_url + "/assignment/submit",
        data={"student": student, "text": text},
        files=files,
        timeout=30,
    )


def _report(asset_id: str, **fields) -> dict:
    return {
        "assetId": asset_id,
        "type": "evaluaitor",
        "timestamp": "2026-01-01T10:00:00.000001+00:00",
        "title": "Evaluaitor",
        "result": "8.5/10",
        "processingProgress": "Processed",
        "priority": 0,
        "visibleToOwner": True,
        "comment": "Clear and well argued.",
        **fields,
    }


def _post_report(app, settings, body: dict, processor: int = 1, headers=None) -> httpx.Response:
    headers = headers if headers is not None else _bearer(app, settings, claims.SCOPE_REPORT)
    return httpx.post(f"{settings.base_url}/ap/{processor}/reports", json=body, headers=headers)


def _page(settings, path: str, **params) -> str:
    return httpx.get(settings.base_url + path, params=params, timeout=10).text


# -- attaching a processor -----------------------------------------------------------------


def test_the_course_page_offers_the_native_assignment(practice_platform):
    course = _page(practice_platform, "/")
    assert TITLE in course and "/assignment/teacher" in course and "/assignment/student" in course
    teacher = _page(practice_platform, "/assignment/teacher")
    assert "Add document processing app" in teacher and 'id="no-processors"' in teacher
    assert 'name="lti-storage"' in teacher and 'name="tool-frame"' in teacher


def test_add_document_processing_app_is_a_processor_deep_linking_request(http, practice_platform):
    body = _launch(http, practice_platform, action="attach")
    assert body[claims.MESSAGE_TYPE] == "LtiDeepLinkingRequest"
    assert body[claims.DEPLOYMENT_ID] == DEPLOYMENT_ID and body["sub"] == "practice-teacher"
    dl = body[DL_SETTINGS]
    assert dl["accept_types"] == [claims.ASSET_PROCESSOR_ITEM]
    assert dl["deep_link_return_url"] == practice_platform.base_url + "/deep-link-return"
    assert body[PLACEMENT] == claims.ASSET_PROCESSOR_PLACEMENT
    assert claims.RESOURCE_LINK not in body
    assert body[claims.PNS] == {
        "platform_notification_service_url": practice_platform.base_url + "/pns/notice-handlers",
        "service_versions": ["1.0"],
        "scope": [claims.SCOPE_NOTICE_HANDLERS],
        "notice_types_supported": [claims.SUBMISSION_NOTICE],
    }
    # The activity id is the assignment's: the same on every launch and after a restart.
    activity = body[claims.ACTIVITY]["id"]
    assert re.fullmatch(r"[0-9a-f-]{36}", activity)
    assert _launch(http, practice_platform, action="attach")[claims.ACTIVITY]["id"] == activity
    assert _state(practice_platform).activity_id == activity


def test_the_answer_attaches_the_processor_items(http, app, practice_platform):
    _attach(http, app, practice_platform)
    (processor,) = _state(practice_platform).processors.values()
    assert processor.title == "Evaluaitor" and processor.text.startswith("Grades the essay")
    assert processor.custom == {"activity": "abc123"}
    assert processor.report_custom == {"report": "yes"}
    assert processor.report_url == practice_platform.tool_url + "/lti/launch?report=1"
    teacher = _page(practice_platform, "/assignment/teacher")
    assert "Grades the essay" in teacher and "Modify" in teacher
    assert 'id="no-handler"' in teacher  # attached, but no notice handler registered yet


@pytest.mark.parametrize(
    ("launch", "item"),
    [
        ("processor", {"type": "ltiResourceLink", "title": "A link", "custom": {}}),
        ("processor", {**PROCESSOR_ITEM, "custom": {"n": 5}}),
        ("processor", {**PROCESSOR_ITEM, "report": {"url": "javascript:alert(1)"}}),
        ("link", {**PROCESSOR_ITEM}),
    ],
    ids=["link-for-processor", "custom", "report-url", "processor-for-link"],
)
def test_each_request_takes_only_the_item_type_it_offered(
    http, app, practice_platform, launch, item
):
    if launch == "processor":
        request = _launch(http, practice_platform, action="attach")
    else:
        start = http.get(practice_platform.base_url + "/launch", params={"launch": "teacher"})
        login = _post_form(http, start)
        auth = http.get(_data(login.text, "next"))
        request = jwt.decode(_form(auth)[1]["id_token"], options={"verify_signature": False})
    token = _response_jwt(app, practice_platform, request, [item])
    response = http.post(practice_platform.base_url + "/deep-link-return", data={"JWT": token})
    assert response.status_code == 400
    assert not _state(practice_platform).processors
    assert len(json.loads((practice_platform.data_dir / "state.json").read_text())["links"]) == 2


def _form(page: httpx.Response) -> tuple[str, dict]:
    (form,) = parse_forms(page.text, str(page.url))
    return form.action, form.fields


def _post_form(client: httpx.Client, page: httpx.Response) -> httpx.Response:
    """Post the page's one form, as its script would."""
    action, fields = _form(page)
    return client.post(action, data=fields)


def test_a_processor_answer_must_carry_the_processor_requests_data(http, app, practice_platform):
    request = _launch(http, practice_platform, action="attach")
    token = _response_jwt(app, practice_platform, request, [PROCESSOR_ITEM], **{DL_DATA: "x"})
    response = http.post(practice_platform.base_url + "/deep-link-return", data={"JWT": token})
    assert response.status_code == 400 and not _state(practice_platform).processors


# -- the Platform Notification Service -----------------------------------------------------


def test_the_pns_endpoint_keeps_one_handler_per_notice_type(app, practice_platform, live_tool):
    url = practice_platform.base_url + "/pns/notice-handlers"
    auth = _bearer(app, practice_platform, claims.SCOPE_NOTICE_HANDLERS)
    empty = httpx.get(url, headers=auth).json()
    assert empty == {
        "client_id": CLIENT_ID,
        "deployment_id": DEPLOYMENT_ID,
        "notice_handlers": [{"notice_type": claims.SUBMISSION_NOTICE, "handler": ""}],
    }
    for handler in (f"{live_tool}/lti/notices", f"{live_tool}/lti/notices?v=2"):
        put = httpx.put(
            url, json={"notice_type": claims.SUBMISSION_NOTICE, "handler": handler}, headers=auth
        )
        assert put.status_code == 200
        assert put.json()["notice_handlers"][0]["handler"] == handler  # the newer one wins
    assert _state(practice_platform).handlers == {claims.SUBMISSION_NOTICE: handler}
    removed = httpx.put(
        url, json={"notice_type": claims.SUBMISSION_NOTICE, "handler": ""}, headers=auth
    )
    assert removed.json()["notice_handlers"][0]["handler"] == ""
    assert _state(practice_platform).handlers == {}


@pytest.mark.parametrize(
    ("body", "status"),
    [
        ({"handler": "http://127.0.0.1/x"}, 400),
        ({"notice_type": "LtiHelloWorldNotice", "handler": "http://127.0.0.1/x"}, 400),
        ({"notice_type": claims.SUBMISSION_NOTICE}, 400),
        ({"notice_type": claims.SUBMISSION_NOTICE, "handler": "https://evil.example/n"}, 400),
        ({"notice_type": claims.SUBMISSION_NOTICE, "handler": "ftp://127.0.0.1/n"}, 400),
    ],
    ids=["no-type", "unsupported-type", "no-handler", "other-domain", "not-http"],
)
def test_the_pns_endpoint_refuses_bad_registrations(app, practice_platform, body, status):
    auth = _bearer(app, practice_platform, claims.SCOPE_NOTICE_HANDLERS)
    put = httpx.put(practice_platform.base_url + "/pns/notice-handlers", json=body, headers=auth)
    assert put.status_code == status, put.text
    assert _state(practice_platform).handlers == {}


def test_the_pns_endpoint_needs_a_noticehandlers_token(app, practice_platform):
    url = practice_platform.base_url + "/pns/notice-handlers"
    body = {"notice_type": claims.SUBMISSION_NOTICE, "handler": ""}
    assert httpx.get(url).status_code == 401
    assert httpx.put(url, json=body, headers={"Authorization": "Bearer made-up"}).status_code == 401
    narrow = _bearer(app, practice_platform, claims.SCOPE_REPORT)
    assert httpx.get(url, headers=narrow).status_code == 403
    assert httpx.put(url, json=body, headers=narrow).status_code == 403
    ok = _bearer(app, practice_platform, claims.SCOPE_NOTICE_HANDLERS)
    assert httpx.put(url, content=b"notice_type=x", headers=ok).status_code == 415
    wrong_method = httpx.delete(url, headers=ok)  # a service's errors are JSON, not a page
    assert wrong_method.status_code == 405 and wrong_method.json()["error"]


# -- the notice a submission sends ---------------------------------------------------------


def test_a_submission_sends_a_signed_notice_whose_assets_download(
    http, app, practice_platform, handler
):
    double, _url = handler
    request = _attach(http, app, practice_platform)
    essay = b"%PDF-1.4 pretend essay"
    sent = _submit_work(
        practice_platform, text="First line\n\nSecond <b>para</b>", files=[("essay.pdf", essay)]
    )
    assert sent.status_code == 303 and "/assignment/student" in sent.headers["Location"]

    (notice,) = double.notices(practice_platform)  # verified with the platform's JWKS
    assert notice["aud"] == notice["azp"] == CLIENT_ID
    assert notice[claims.DEPLOYMENT_ID] == DEPLOYMENT_ID
    assert notice["exp"] - notice["iat"] == 3600 and notice["nonce"]
    assert notice["https://purl.imsglobal.org/spec/lti/claim/version"] == "1.3.0"
    assert notice[claims.NOTICE]["type"] == claims.SUBMISSION_NOTICE
    assert notice[claims.NOTICE]["id"] and notice[claims.NOTICE]["timestamp"].endswith("Z")
    assert notice[CUSTOM] == {"activity": "abc123"}
    assert notice[claims.FOR_USER] == {"user_id": "practice-student-1"}
    assert notice[claims.ACTIVITY] == {"id": request[claims.ACTIVITY]["id"]}
    assert re.fullmatch(r"[0-9a-f-]{36}:1", notice[claims.SUBMISSION]["id"])
    report = notice[claims.ASSET_REPORT]
    assert report == {
        "report_url": practice_platform.base_url + "/ap/1/reports",
        "scope": [claims.SCOPE_REPORT],
    }
    service = notice[claims.ASSET_SERVICE]
    assert service["scope"] == [claims.SCOPE_ASSET_READONLY]
    text, pdf = service["assets"]
    assert text["content_type"] == "text/html" and "filename" not in text
    assert text["title"] == TITLE
    assert pdf["filename"] == pdf["title"] == "essay.pdf"
    assert pdf["content_type"] == "application/pdf" and pdf["size"] == len(essay)

    # The Asset Service answers with a redirect to the bytes (like Canvas): follow it.
    auth = _bearer(app, practice_platform, claims.SCOPE_ASSET_READONLY)
    for asset in (text, pdf):
        assert asset["url"] == f"{practice_platform.base_url}/ap/1/assets/{asset['asset_id']}"
        first = httpx.get(asset["url"], headers=auth)
        assert first.status_code == 302
        got = httpx.get(asset["url"], headers=auth, follow_redirects=True)
        assert got.status_code == 200 and len(got.content) == asset["size"]
        digest = base64.b64encode(hashlib.sha256(got.content).digest()).decode()
        assert digest == asset["sha256_checksum"]
        assert got.headers["Content-Type"].startswith(asset["content_type"])
    assert httpx.get(pdf["url"], headers=auth, follow_redirects=True).content == essay
    page = httpx.get(text["url"], headers=auth, follow_redirects=True).text
    assert page == "<p>First line</p><p>Second &lt;b&gt;para&lt;/b&gt;</p>"

    # The student's next attempt is a new submission id (same student part, attempt 2).
    _submit_work(practice_platform, text="Better")
    first_id, second_id = (n[claims.SUBMISSION]["id"] for n in double.notices(practice_platform))
    assert second_id.split(":") == [first_id.split(":")[0], "2"]
    teacher = _page(practice_platform, "/assignment/teacher")
    assert teacher.count("HTTP 204") == 2


def test_every_attached_processor_gets_its_own_notice(http, app, practice_platform, handler):
    double, _url = handler
    second = {**PROCESSOR_ITEM, "title": "Second", "custom": {"activity": "def456"}}
    _attach(http, app, practice_platform, items=[PROCESSOR_ITEM, second])
    _submit_work(practice_platform, text="An essay")
    notices = double.notices(practice_platform)
    assert [n[CUSTOM]["activity"] for n in notices] == ["abc123", "def456"]
    assert [n[claims.ASSET_REPORT]["report_url"].split("/")[-2] for n in notices] == ["1", "2"]
    assert len({n[claims.NOTICE]["id"] for n in notices}) == 2
    assert len({n[claims.SUBMISSION]["id"] for n in notices}) == 1


def test_a_handler_that_fails_is_shown_and_not_retried(http, app, practice_platform, handler):
    double, _url = handler
    double.status = 503
    _attach(http, app, practice_platform)
    assert _submit_work(practice_platform, text="An essay").status_code == 303
    assert len(double.bodies) == 1  # sent once, as Canvas does
    assert "HTTP 503" in _page(practice_platform, "/assignment/teacher")


def test_with_no_handler_the_submission_is_kept_and_the_teacher_told(http, app, practice_platform):
    _attach(http, app, practice_platform)
    assert _submit_work(practice_platform, text="An essay").status_code == 303
    assert len(_state(practice_platform).submissions) == 1
    assert "no handler registered" in _page(practice_platform, "/assignment/teacher")


@pytest.mark.parametrize(
    ("form", "files"),
    [
        ({"student": "practice-student-1", "text": "  "}, None),
        ({"student": "practice-teacher", "text": "essay"}, None),
        ({"student": "stranger", "text": "essay"}, None),
        ({"student": "practice-student-1", "text": ""}, [("big.txt", b"x" * (10 * 2**20 + 1))]),
    ],
    ids=["empty", "teacher", "stranger", "too-large"],
)
def test_the_submission_form_refuses_what_it_cannot_take(practice_platform, form, files):
    files = [("file", f) for f in files] if files else [("file", ("", b""))]
    response = httpx.post(
        practice_platform.base_url + "/assignment/submit", data=form, files=files, timeout=30
    )
    assert response.status_code == 400
    assert not _state(practice_platform).submissions


# -- the Asset Service ---------------------------------------------------------------------


def test_the_asset_service_checks_token_scope_and_asset(http, app, practice_platform, handler):
    double, _url = handler
    _attach(http, app, practice_platform)
    _submit_work(practice_platform, files=[("a.txt", b"hello")])
    (asset,) = double.notices(practice_platform)[0][claims.ASSET_SERVICE]["assets"]
    url = asset["url"]
    assert httpx.get(url).status_code == 401
    assert httpx.get(url, headers={"Authorization": "Bearer made-up"}).status_code == 401
    assert (
        httpx.get(url, headers=_bearer(app, practice_platform, claims.SCOPE_REPORT)).status_code
        == 403
    )
    auth = _bearer(app, practice_platform, claims.SCOPE_ASSET_READONLY)
    assert httpx.get(url.replace(asset["asset_id"], "nope"), headers=auth).status_code == 404
    assert httpx.get(url.replace("/ap/1/", "/ap/9/"), headers=auth).status_code == 404
    location = httpx.get(url, headers=auth).headers["Location"]
    # The redirect's link is signed for that asset only, and needs its verifier.
    assert httpx.get(location.split("?")[0]).status_code == 403
    other = _submit_work(practice_platform, files=[("b.txt", b"other")])
    assert other.status_code == 303
    (second,) = double.notices(practice_platform)[1][claims.ASSET_SERVICE]["assets"]
    forged = location.replace(asset["asset_id"], second["asset_id"])
    assert httpx.get(forged).status_code == 403
    assert httpx.get(location).content == b"hello"


# -- the Asset Report Service --------------------------------------------------------------


@pytest.fixture
def submitted(http, app, practice_platform, handler) -> str:
    """One student's submission with one file; its asset id."""
    double, _url = handler
    _attach(http, app, practice_platform)
    _submit_work(practice_platform, files=[("essay.txt", b"An essay.")])
    return double.notices(practice_platform)[0][claims.ASSET_SERVICE]["assets"][0]["asset_id"]


def test_a_report_is_stored_and_echoed(app, practice_platform, submitted):
    body = _report(submitted, indicationColor="#00aa00", indicationAlt="Good")
    body["https://example.com/extra"] = {"x": 1}
    body["unnamespaced"] = "dropped"
    created = _post_report(app, practice_platform, body)
    assert created.status_code == 201, created.text
    echoed = created.json()
    assert echoed["assetId"] == submitted and echoed["result"] == "8.5/10"
    assert echoed["https://example.com/extra"] == {"x": 1} and "unnamespaced" not in echoed
    (report,) = _state(practice_platform).reports.values()
    assert report.progress == "Processed" and report.body == echoed


@pytest.mark.parametrize(
    "change",
    [
        {"assetId": None},
        {"assetId": "not-an-asset"},
        {"type": ""},
        {"type": "t" * 1025},
        {"timestamp": None},
        {"timestamp": "yesterday"},
        {"timestamp": "2026-01-01"},
        {"processingProgress": None},
        {"priority": 6},
        {"priority": -1},
        {"priority": 1.5},
        {"priority": True},
        {"indicationColor": "red"},
        {"indicationColor": "#12345"},
        {"title": ""},
        {"title": "t" * 1025},
        {"result": "r" * 256},
        {"comment": ""},
        {"comment": "c" * (64 * 1024 + 1)},
        {"indicationAlt": ""},
        {"errorCode": ""},
        {"visibleToOwner": "yes"},
    ],
    ids=lambda change: "-".join(f"{k}={str(v)[:12]}" for k, v in change.items()),
)
def test_the_report_service_refuses_what_canvas_refuses(app, practice_platform, submitted, change):
    body = {k: v for k, v in (_report(submitted) | change).items() if v is not None}
    response = _post_report(app, practice_platform, body)
    assert response.status_code == 400, response.text
    assert not _state(practice_platform).reports


def test_a_report_older_than_the_stored_one_is_a_conflict(app, practice_platform, submitted):
    later = _report(submitted, timestamp="2026-01-01T10:00:00.000002Z", result="9/10")
    assert _post_report(app, practice_platform, later).status_code == 201
    older = _report(submitted, timestamp="2026-01-01T10:00:00.000001Z", result="1/10")
    conflict = _post_report(app, practice_platform, older)
    assert conflict.status_code == 409
    (kept,) = _state(practice_platform).reports.values()
    assert kept.body["result"] == "9/10"
    # The same timestamp replaces it (Canvas supersedes older or equal); another type is apart.
    same = _report(submitted, timestamp="2026-01-01T10:00:00.000002Z", result="7/10")
    assert _post_report(app, practice_platform, same).status_code == 201
    assert _post_report(app, practice_platform, {**older, "type": "other"}).status_code == 201
    reports = _state(practice_platform).reports
    assert sorted(r.body["result"] for r in reports.values()) == ["1/10", "7/10"]


def test_the_report_service_checks_token_scope_and_processor(app, practice_platform, submitted):
    body = _report(submitted)
    assert _post_report(app, practice_platform, body, headers={}).status_code == 401
    narrow = _bearer(app, practice_platform, claims.SCOPE_ASSET_READONLY)
    assert _post_report(app, practice_platform, body, headers=narrow).status_code == 403
    assert _post_report(app, practice_platform, body, processor=9).status_code == 404
    auth = _bearer(app, practice_platform, claims.SCOPE_REPORT)
    form = httpx.post(
        practice_platform.base_url + "/ap/1/reports", data={"assetId": submitted}, headers=auth
    )
    assert form.status_code == 415
    assert not _state(practice_platform).reports


def test_unknown_progress_is_kept_but_read_as_not_ready(app, practice_platform, submitted):
    body = _report(submitted, processingProgress="Thinking")
    assert _post_report(app, practice_platform, body).status_code == 201
    (report,) = _state(practice_platform).reports.values()
    assert report.body["processingProgress"] == "Thinking" and report.progress == "NotReady"
    teacher = _page(practice_platform, "/assignment/teacher")
    assert "NotReady" in teacher and "View report" not in teacher


# -- the grader: View report, Resubmit all files, what a student sees ---------------------


def _resubmit(settings, submission_id: str, processor: int = 1) -> httpx.Response:
    return httpx.post(
        settings.base_url + "/assignment/resubmit",
        data={"submission": submission_id, "processor": str(processor)},
        timeout=30,
    )


@pytest.mark.parametrize(
    ("fields", "offered"),
    [
        (None, True),  # no report at all
        ({"processingProgress": "PendingManual", "result": None}, True),
        ({"processingProgress": "Failed", "errorCode": "DOWNLOAD_FAILED"}, True),
        ({"processingProgress": "Failed", "errorCode": "EULA_NOT_ACCEPTED"}, True),
        ({"processingProgress": "Failed", "errorCode": "GRADING_FAILED"}, False),
        ({"processingProgress": "Failed", "errorCode": "UNSUPPORTED_ASSET_TYPE"}, False),
        ({"processingProgress": "Processing", "result": None}, False),
        ({}, False),  # Processed
    ],
    ids=[
        "none",
        "pending-manual",
        "download",
        "eula",
        "grading",
        "unsupported",
        "processing",
        "processed",
    ],
)
def test_resubmit_all_files_follows_canvas_rule(
    app, practice_platform, handler, submitted, fields, offered
):
    double, _url = handler
    if fields is not None:
        body = {k: v for k, v in (_report(submitted) | fields).items() if v is not None}
        assert _post_report(app, practice_platform, body).status_code == 201
    teacher = _page(practice_platform, "/assignment/teacher")
    assert ("Resubmit all files" in teacher) is offered
    (first,) = double.notices(practice_platform)
    response = _resubmit(practice_platform, first[claims.SUBMISSION]["id"])
    if not offered:
        assert response.status_code == 400 and len(double.bodies) == 1
        return
    assert response.status_code == 303
    first, again = double.notices(practice_platform)
    assert again[claims.NOTICE]["id"] != first[claims.NOTICE]["id"]  # a new notice ...
    assert again[claims.SUBMISSION] == first[claims.SUBMISSION]  # ... of the same submission
    assert again[claims.ASSET_SERVICE] == first[claims.ASSET_SERVICE]  # with all its assets


def test_the_report_rules_hold_for_every_progress():
    def report(**body) -> Report:
        return Report(1, "a", "t", "2026-01-01T00:00:00Z", body)

    assert report(processingProgress="Processed", visibleToOwner=True).visible_to_student
    assert not report(processingProgress="Processed", visibleToOwner=False).visible_to_student
    assert not report(processingProgress="Processed").visible_to_student
    assert not report(processingProgress="PendingManual", visibleToOwner=True).visible_to_student
    assert not report(processingProgress="Failed", visibleToOwner=True).visible_to_student
    assert report(processingProgress="Processed").is_reviewable
    assert not report(processingProgress="Processing").is_reviewable
    assert report(result="x" * 16).result_shown == "x" * 16
    assert report(result="x" * 17).result_shown == "x" * 15 + "…"


def test_students_see_only_processed_reports_visible_to_them(http, app, practice_platform, handler):
    double, _url = handler
    _attach(http, app, practice_platform)
    _submit_work(practice_platform, files=[("a.txt", b"one"), ("b.txt", b"two")])
    _submit_work(practice_platform, files=[("c.txt", b"three")], student="practice-student-2")
    a, b = double.notices(practice_platform)[0][claims.ASSET_SERVICE]["assets"]
    (c,) = double.notices(practice_platform)[1][claims.ASSET_SERVICE]["assets"]
    for body in (
        _report(a["asset_id"], result="9/10", comment="Shown to Ada"),
        _report(b["asset_id"], result="3/10", comment="Held back", visibleToOwner=False),
        _report(c["asset_id"], processingProgress="PendingManual", comment="Waiting"),
    ):
        assert _post_report(app, practice_platform, body).status_code == 201

    ada = _page(practice_platform, "/assignment/student", student="practice-student-1")
    assert "Shown to Ada" in ada and "9/10" in ada
    assert "Held back" not in ada and "3/10" not in ada and "Waiting" not in ada
    boris = _page(practice_platform, "/assignment/student", student="practice-student-2")
    assert "Waiting" not in boris and "Shown to Ada" not in boris and "c.txt" in boris
    assert "a.txt" not in boris  # another student's work
    teacher = _page(practice_platform, "/assignment/teacher")
    for shown in ("Shown to Ada", "Held back", "Waiting", "PendingManual", "Ada Student"):
        assert shown in teacher
    assert teacher.count('data-testid="view-report"') == 2  # the two Processed ones

    # A student's "View report" opens only a report they may see.
    submission = double.notices(practice_platform)[0][claims.SUBMISSION]["id"]
    hidden = http.get(
        practice_platform.base_url + "/assignment/launch",
        params={
            "action": "report",
            "as": "student",
            "processor": 1,
            "submission": submission,
            "asset": b["asset_id"],
            "type": "evaluaitor",
        },
    )
    assert hidden.status_code == 400
    shown = _launch(
        http,
        practice_platform,
        action="report",
        processor=1,
        submission=submission,
        asset=a["asset_id"],
        type="evaluaitor",
        **{"as": "student"},
    )
    assert shown["sub"] == "practice-student-1"
    assert shown[claims.MESSAGE_TYPE] == claims.REPORT_REVIEW_REQUEST


def test_view_report_launches_a_report_review_request(http, app, practice_platform, submitted):
    assert _post_report(app, practice_platform, _report(submitted)).status_code == 201
    state = _state(practice_platform)
    (submission,) = state.submissions
    body = _launch(
        http,
        practice_platform,
        action="report",
        processor=1,
        submission=submission.id,
        asset=submitted,
        type="evaluaitor",
    )
    assert body[claims.MESSAGE_TYPE] == claims.REPORT_REVIEW_REQUEST
    assert body["sub"] == "practice-teacher"
    assert body[claims.ACTIVITY] == {"id": state.activity_id, "title": TITLE}
    assert body[claims.SUBMISSION] == {"id": submission.id}
    assert body[claims.FOR_USER] == {"user_id": "practice-student-1"}
    assert body[claims.ASSET] == {"id": submitted}
    assert body[claims.ASSET_REPORT_TYPE] == "evaluaitor"
    assert body[CUSTOM] == {"activity": "abc123", "report": "yes"}
    report_url = practice_platform.tool_url + "/lti/launch?report=1"
    assert body[TARGET_LINK_URI] == body["_target_link_uri"] == report_url
    assert claims.RESOURCE_LINK not in body

    settings = _launch(http, practice_platform, action="settings", processor=1)
    assert settings[claims.MESSAGE_TYPE] == claims.ASSET_PROCESSOR_SETTINGS_REQUEST
    assert settings[claims.ACTIVITY] == {"id": state.activity_id, "title": TITLE}
    assert settings[CUSTOM] == {"activity": "abc123"}


def test_view_report_is_refused_for_reports_not_processed(http, app, practice_platform, submitted):
    body = _report(submitted, processingProgress="Processing", result=None)
    body = {k: v for k, v in body.items() if v is not None}
    assert _post_report(app, practice_platform, body).status_code == 201
    (submission,) = _state(practice_platform).submissions
    params = {"processor": 1, "submission": submission.id, "asset": submitted, "type": "evaluaitor"}
    url = practice_platform.base_url + "/assignment/launch"
    assert http.get(url, params={"action": "report", **params}).status_code == 400
    assert http.get(url, params={"action": "report", **params, "type": "x"}).status_code == 400
    assert http.get(url, params={"action": "settings", "processor": 9}).status_code == 400


def test_the_assignment_survives_a_restart(http, app, practice_platform, submitted):
    assert _post_report(app, practice_platform, _report(submitted)).status_code == 201
    again = _state(practice_platform)
    assert len(again.processors) == 1 and len(again.submissions) == 1
    assert again.handlers[claims.SUBMISSION_NOTICE].endswith("/lti/notices")
    (report,) = again.reports.values()
    assert report.asset_id == submitted
    (asset,) = again.submissions[0].assets
    assert again.asset_bytes(asset) == b"An essay."
    # The next attempt keeps the student's part of the id and counts on.
    state = AssignmentState(again._path, again._files)
    assert state.submit("practice-student-1", [("t", None, "text/html", b"x")]).id.endswith(":2")


# -- end to end, with the tool's side ------------------------------------------------------


def test_a_native_submission_gets_the_tools_report(app, live_tool, llm, practice_platform):
    """Attach Evaluaitor in the practice, submit as a student, and the report comes back."""
    from tests.test_deep_linking import valid_form

    with httpx.Client(timeout=30) as browser:  # keeps cookies: the teacher's window
        start = browser.get(
            practice_platform.base_url + "/assignment/launch",
            params={"action": "attach", "window": "1"},
        )
        login = _post_form(browser, start)
        opened = _post_form(browser, browser.get(login.headers["Location"]))
        assert opened.status_code == 303, opened.text
        setup = live_tool + opened.headers["Location"]
        answer = browser.post(setup, data=valid_form(max_score="10"), files={"none": ("", b"")})
        assert answer.status_code == 200, answer.text
        returned = _post_form(browser, answer)
        assert returned.status_code == 200, returned.text
    state = _state(practice_platform)
    (processor,) = state.processors.values()
    assert processor.title == "Photosynthesis essay" and processor.custom["activity"]
    assert state.handlers[claims.SUBMISSION_NOTICE] == live_tool + "/lti/notices"

    llm.reply("Clear and well argued.\n\nFinal score: 8/10")
    sent = _submit_work(practice_platform, text="Photosynthesis turns light into sugar.")
    assert sent.status_code == 303
    assert "HTTP 2" in _page(practice_platform, "/assignment/teacher")
    run_jobs()
    (report,) = _state(practice_platform).reports.values()
    assert report.progress == "Processed" and report.body["result"] == "8/10"
    assert report.body["visibleToOwner"] is True  # the activity releases at once ("auto")
    teacher = _page(practice_platform, "/assignment/teacher")
    assert "8/10" in teacher and 'data-testid="view-report"' in teacher
    assert "Resubmit all files" not in teacher
    student = _page(practice_platform, "/assignment/student")
    assert "8/10" in student and "Clear and well argued." in student
