"""The platform's key set on the launch path (issue item 6): forged tokens with random kids
cannot make every launch fetch it, a slow key set endpoint cannot hold a launch, an oversized
one is refused, and a private one is not called."""

from __future__ import annotations

import secrets
import time
from urllib.parse import parse_qsl, urlsplit

import pytest

from app.extensions import db
from app.lti import launch
from app.models import Platform
from tests.fakes import sockets
from tests.fakes.platform import FakePlatform, browser_launch

DEADLINE = 1.0


def key_set_fetches(platform: FakePlatform) -> int:
    return sum(1 for entry in platform.request_log if entry["kind"] == "jwks")


def launch_with(browser, platform: FakePlatform, live_tool: str, **settings):
    """Login and authentication as a browser would, then the launch with the token the
    platform signed (with ``settings``, e.g. a kid of the attacker's choosing)."""
    platform.set_launch("2", **settings)
    params = platform.login_params(target_link_uri=live_tool + "/lti/launch")
    login = browser.post("/lti/login", data=params)
    _, fields = platform.authorize(dict(parse_qsl(urlsplit(login.headers["Location"]).query)))
    return browser.post("/lti/launch", data=fields)


def point_key_set_at(url: str) -> None:
    stored = db.session.scalars(db.select(Platform)).one()
    stored.key_set_url = url
    db.session.commit()


def test_forged_kids_cause_at_most_one_refetch(browser, platform, live_tool):
    for _ in range(20):
        forged = launch_with(
            browser, platform, live_tool, kid=secrets.token_hex(8), sign_with_other_key=True
        )
        assert forged.status_code == 400
    assert key_set_fetches(platform) <= 2  # the first fetch and one refetch for a new kid


def test_a_rotated_key_is_still_picked_up(browser, platform, live_tool):
    assert browser_launch(browser, platform, live_tool).status_code == 303
    platform.rotate_key()
    assert browser_launch(browser, platform, live_tool).status_code == 303
    assert key_set_fetches(platform) == 2


@pytest.mark.parametrize("handler", [sockets.DRIP_HEADERS, sockets.DRIP_BODY], ids=["head", "body"])
def test_a_dripping_key_set_does_not_hold_the_launch(app, browser, platform, live_tool, handler):
    app.config["EVALUAITOR_JWKS_TIMEOUT"] = DEADLINE
    with sockets.RawServer(handler) as server:
        point_key_set_at(server.url + "/certs")
        started = time.monotonic()
        response = launch_with(browser, platform, live_tool)
        elapsed = time.monotonic() - started
        assert server.connections == 1
    assert response.status_code == 400
    assert "could not be verified" in response.text
    assert elapsed < DEADLINE + 2


def test_a_hanging_key_set_does_not_hold_the_launch(app, browser, platform, live_tool):
    app.config["EVALUAITOR_JWKS_TIMEOUT"] = DEADLINE
    platform.fail_next("jwks", None, delay=sockets.MAX_HOLD_SECONDS)
    started = time.monotonic()
    response = launch_with(browser, platform, live_tool)
    assert time.monotonic() - started < DEADLINE + 2
    assert response.status_code == 400
    # A failure is remembered briefly: the next launches fail at once, without a fetch.
    again = launch_with(browser, platform, live_tool)
    assert again.status_code == 400
    assert key_set_fetches(platform) == 1


def test_an_oversized_key_set_is_refused(browser, platform, live_tool):
    padding = "x" * (launch.MAX_KEY_SET_BYTES + 1)
    platform.fail_next("jwks", 200, body={"keys": [], "padding": padding})
    response = launch_with(browser, platform, live_tool)
    assert response.status_code == 400
    assert key_set_fetches(platform) == 1


def test_a_private_key_set_url_is_not_called(app, browser, platform, live_tool):
    app.config["EVALUAITOR_ALLOW_PRIVATE_URLS"] = 0
    with sockets.RawServer(sockets.http_answer(200, b'{"keys": []}')) as server:
        point_key_set_at(server.url + "/certs")
        response = launch_with(browser, platform, live_tool)
        assert server.connections == 0
    assert response.status_code == 400
