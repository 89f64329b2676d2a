"""The fake platform's Platform Notification Service behaves as Canvas's notice handlers
controller does (doc/api/pns.md): a bearer token with the noticehandlers scope, one handler per
notice type and deployment, ``""`` to remove one, a handler only on the tool's domain, and the
deployment's handler list as every answer. A tool that passes here does not meet a laxer PNS
only in the tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakes.platform import FakePlatform
from tests.fakes.platform.vocab import SCOPE_NOTICE_HANDLERS, SCOPE_NRPS
from tests.test_fake_platform import HTTP, ToolStub, access_token, bearer

NOTICE = "LtiAssetProcessorSubmissionNotice"


@pytest.fixture
def canvas() -> Iterator[tuple[FakePlatform, ToolStub]]:
    with ToolStub() as tool, FakePlatform() as fake:
        fake.tool_jwks_url = tool.url + "/lti/jwks"
        fake.tool_redirect_uris = [tool.url + "/lti/launch"]
        tool.platform = fake
        yield fake, tool


def put(platform: FakePlatform, token: str, body: dict, deployment: str | None = None):
    url = platform.processors.notice_service_url(deployment)
    return HTTP.put(url, json=body, headers=bearer(token))


def held(answer) -> dict[str, str]:
    return {h["notice_type"]: h["handler"] for h in answer.json()["notice_handlers"]}


def test_one_handler_per_type_and_an_empty_one_removes_it(canvas) -> None:
    platform, tool = canvas
    token = access_token(tool, platform, [SCOPE_NOTICE_HANDLERS])

    first = put(platform, token, {"notice_type": NOTICE, "handler": tool.url + "/a"})
    assert first.status_code == 200
    assert first.json()["deployment_id"] == platform.deployment_id
    assert held(first)[NOTICE] == tool.url + "/a"
    second = put(platform, token, {"notice_type": NOTICE, "handler": tool.url + "/b"})
    assert held(second)[NOTICE] == tool.url + "/b"  # replaced, not added
    listed = HTTP.get(platform.processors.notice_service_url(), headers=bearer(token))
    assert held(listed) == held(second)
    removed = put(platform, token, {"notice_type": NOTICE, "handler": ""})
    assert held(removed)[NOTICE] == "" and not platform.processors.handlers["1"]


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ({"handler": "x"}, "notice_type"),
        ({"notice_type": "LtiMadeUpNotice", "handler": ""}, "unsupported notice type"),
        ({"notice_type": NOTICE}, "valid URL or an empty string"),
        ({"notice_type": NOTICE, "handler": "https://elsewhere.example/h"}, "tool's domain"),
    ],
)
def test_bad_registrations_are_refused(canvas, body, reason) -> None:
    platform, tool = canvas
    token = access_token(tool, platform, [SCOPE_NOTICE_HANDLERS])
    refused = put(platform, token, body)
    assert refused.status_code == 400
    assert reason in refused.json()["errors"][0]["message"]
    assert not platform.processors.handlers.get("1")


def test_the_service_needs_a_token_with_its_scope_for_its_deployment(canvas) -> None:
    platform, tool = canvas
    body = {"notice_type": NOTICE, "handler": tool.url + "/a"}
    assert put(platform, "not-a-token", body).status_code == 401
    roster_only = access_token(tool, platform, [SCOPE_NRPS])
    assert put(platform, roster_only, body).status_code == 401
    token = access_token(tool, platform, [SCOPE_NOTICE_HANDLERS])
    assert put(platform, token, body, deployment="another").status_code == 404
    assert not platform.processors.handlers
