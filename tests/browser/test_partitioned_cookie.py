"""Over HTTPS the state cookie is ``SameSite=None; Secure; Partitioned``: Chromium keeps it
in the LMS frame even with third-party cookies blocked, so the launch needs neither platform
storage nor a new window."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from playwright.sync_api import expect
from werkzeug.serving import make_server

from app import practice
from app.practice import PracticeSettings
from tests.test_practice import _free_port


@pytest.fixture
def https_practice(app, tmp_path) -> Iterator[PracticeSettings]:
    """The tool over HTTPS (a throwaway certificate) and the practice platform beside it."""
    tool = make_server("127.0.0.1", 0, app, threaded=True, ssl_context="adhoc")
    threading.Thread(target=tool.serve_forever, daemon=True).start()
    settings = PracticeSettings(
        base_url=f"http://localhost:{_free_port()}",
        tool_url=f"https://127.0.0.1:{tool.server_port}",
        data_dir=tmp_path / "practice",
    )
    practice.register(settings)
    platform = practice.serve_in_background(settings)
    yield settings
    platform.shutdown()
    tool.shutdown()


def test_partitioned_state_cookie_survives_blocked_third_party_cookies(chromium, https_practice):
    context = chromium.new_context(ignore_https_errors=True)
    context.set_default_timeout(10_000)
    page = context.new_page()
    launches = []
    page.on("response", lambda r: launches.append(r.status) if "/lti/launch" in r.url else None)

    page.goto(https_practice.base_url + "/")
    page.get_by_label("Offer no platform storage").check()
    page.get_by_test_id("student-practice-link-1").click()
    tool = page.frame_locator("iframe[name=tool-frame]")
    expect(tool.get_by_role("heading", level=1)).to_have_text("Practice essay")

    assert launches == [303]  # the cookie came back: straight to the page
    (cookie,) = [c for c in context.cookies() if c["name"].startswith("lti1p3-state")]
    assert cookie["sameSite"] == "None" and cookie["secure"]
    assert cookie.get("partitionKey")  # kept in the platform's partition

    # Control: in this frame an unpartitioned third-party cookie is refused (the blocking is
    # on), a partitioned one is kept.
    frame = page.frame(name="tool-frame")
    frame.evaluate("document.cookie = 'plain=1; SameSite=None; Secure'")
    frame.evaluate("document.cookie = 'parted=1; SameSite=None; Secure; Partitioned'")
    jar = frame.evaluate("document.cookie")
    assert "parted=1" in jar and "plain=1" not in jar
    context.close()
