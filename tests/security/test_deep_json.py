"""JSON from outside that nests too deeply (issue 21, item 4.1): every parser refuses it with
its ordinary "not valid JSON" answer, never RecursionError and HTTP 500.

Other entry points have their deep case beside their other malformed answers: NRPS
(tests/test_nrps.py), the model's completion (tests/llm/test_client.py), Dynamic
Registration (tests/test_registration.py), the REST API (tests/api/test_organizations.py)
and the practice platform's deep-linking return (tests/test_practice.py).
"""

from __future__ import annotations

import base64
import json
from urllib.parse import parse_qsl, urlsplit

import pytest
from werkzeug.datastructures import MultiDict

from app import safe_json
from app.extensions import db
from app.grading import registry
from app.grading.scores import read_score
from app.llm.jsonreply import parse_json_reply
from app.models import PushStatus, ScorePush
from app.web.setup_form import read_params, schema_fields
from tests.conftest import run_jobs
from tests.documents import ESSAY
from tests.fakes.platform import FakePlatform
from tests.test_core_loop import GOOD_REPLY, open_activity, upload

#: A 130 kB document of nothing but brackets: the size of the token in the issue.
DEEP = "[" * 65_000 + "]" * 65_000
JUST_DEEP_ENOUGH = "[" * safe_json.MAX_DEPTH + "]" * safe_json.MAX_DEPTH


def segment(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).rstrip(b"=").decode()


# --- the bound itself -----------------------------------------------------------------------


@pytest.mark.parametrize("document", [DEEP, DEEP.encode(), '{"a": ' * 70 + "1" + "}" * 70])
def test_too_deep_documents_are_refused_as_invalid_json(document):
    with pytest.raises(safe_json.JSONTooDeep):
        safe_json.loads(document)
    assert issubclass(safe_json.JSONTooDeep, ValueError)  # every "not JSON" handler takes it


def test_the_bound_counts_structure_only():
    assert safe_json.loads(JUST_DEEP_ENOUGH)  # 64 levels are fine
    brackets_in_strings = json.dumps({"essay": "[" * 10_000, "quote": 'say "{{{"'})
    assert safe_json.loads(brackets_in_strings)["essay"] == "[" * 10_000
    assert safe_json.loads('"[[["'.encode("utf-16")) == "[[["  # bytes decoded as json does


def test_a_broken_document_that_only_opens_is_refused_too():
    """An unclosed string or a missing bracket still counts what the decoder would open."""
    with pytest.raises(ValueError):
        safe_json.loads('"unclosed' + "[" * 10_000)
    with pytest.raises(safe_json.JSONTooDeep):
        safe_json.loads("[" * 10_000 + '"unclosed')


# --- the launch -----------------------------------------------------------------------------


@pytest.mark.parametrize("part", ["payload", "header"])
def test_a_deeply_nested_id_token_gets_the_invalid_launch_page(browser, platform, part):
    header, payload = segment('{"alg": "RS256"}'), segment('{"iss": "x"}')
    if part == "payload":
        payload = segment('{"iss": ' + DEEP + "}")
    else:
        header = segment('{"alg": ' + DEEP + "}")
    token = f"{header}.{payload}.c2lnbmF0dXJl"
    assert len(token) > 130_000
    response = browser.post("/lti/launch", data={"id_token": token, "state": "x"})
    assert response.status_code == 400
    assert "could not be verified" in response.text


def test_a_login_with_a_deep_message_hint_passes_it_on_unread(browser, platform, live_tool):
    """The tool never parses lti_message_hint: it goes back to the platform as it came."""
    params = platform.login_params(target_link_uri=live_tool + "/lti/launch")
    params["lti_message_hint"] = DEEP[:2000]
    response = browser.post("/lti/login", data=params)
    assert response.status_code == 302
    hint = dict(parse_qsl(urlsplit(response.headers["Location"]).query))["lti_message_hint"]
    assert hint == DEEP[:2000]


def test_a_deeply_nested_key_set_fails_the_launch_cleanly(browser, platform, live_tool):
    platform.fail_next("jwks", 200, body='{"keys": ' + DEEP + "}")
    platform.set_launch("2")
    params = platform.login_params(target_link_uri=live_tool + "/lti/launch")
    login = browser.post("/lti/login", data=params)
    _, fields = platform.authorize(dict(parse_qsl(urlsplit(login.headers["Location"]).query)))
    response = browser.post("/lti/launch", data=fields)
    assert response.status_code == 400
    assert "could not be verified" in response.text


# --- AGS ------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["token", "scores"])
def test_a_deeply_nested_grade_service_answer_is_a_recorded_failure(
    browser, platform: FakePlatform, llm, live_tool, kind
):
    llm.reply(GOOD_REPLY)
    page = open_activity(browser, platform, live_tool)
    platform.fail_next(kind, 200, times=10, body=DEEP)
    upload(browser, page, "essay.txt", ESSAY.encode())
    run_jobs()
    db.session.expire_all()
    push = db.session.query(ScorePush).filter_by(kind="graded").one()
    if kind == "token":  # the access token is JSON: unreadable, the push fails
        assert push.status == PushStatus.FAILED
    else:  # a score push's answer body is not read at all
        assert push.status == PushStatus.SENT


# --- model replies and form fields ------------------------------------------------------------


def test_a_deeply_nested_model_reply_is_no_json_and_no_score():
    reply = "Here is my grading: " + DEEP + ' {"score": 8}'
    assert parse_json_reply(reply) == {"score": 8}
    with pytest.raises(ValueError):
        parse_json_reply(DEEP)
    reading = read_score('{"score": ' + DEEP + "}")
    assert reading is None or reading.marker != "json"


def test_a_deeply_nested_setting_in_the_setup_form_is_a_form_error():
    plugin, name = next(
        (plugin, f)
        for plugin in registry.all_plugins()
        for f in schema_fields(plugin)
        if f.widget == "json"
    )
    form = MultiDict({name.input_name(plugin.name): DEEP})
    _, problems = read_params(plugin, form)
    assert f"params.{name.name}" in problems
