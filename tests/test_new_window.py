"""A browser that blocks the tool's cookie in the platform's frame, against the fake Moodle
whose ``lti_message_hint`` is single-use as in Moodle's auth.php: the "Open in a new window"
fallback must carry the launch already checked, not start a second login with the same hint
(which Moodle answers with its "Invalid request" page)."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.fakes.platform import browser_launch
from tests.fakes.platform.browser import parse_forms


@pytest.fixture
def framed(live_tool) -> Iterator[httpx.Client]:
    """The frame's browser: the tool's cookies never come back (third-party, blocked)."""
    with httpx.Client(base_url=live_tool, timeout=10) as client:
        client.event_hooks["response"] = [lambda response: client.cookies.clear()]
        yield client


def test_the_new_window_opens_the_tool_once(framed, browser, platform, live_tool):
    frame = browser_launch(framed, platform, live_tool, title="Framed essay")
    assert frame.status_code == 200 and "Open Evaluaitor in a new window" in frame.text
    (handoff,) = parse_forms(frame.text, str(frame.url))

    # The new window is first-party: its cookies work. It follows wherever the form leads.
    window = browser.post(handoff.action, data=handoff.fields, follow_redirects=True)
    assert window.status_code == 200, window.text[:500]
    assert "Framed essay" in window.text and "/l/" in str(window.url)
    again = browser.post(handoff.action, data=handoff.fields, follow_redirects=True)
    assert again.status_code == 400  # the handoff works once
