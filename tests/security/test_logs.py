"""Access logs never hold the bearer credentials that travel in URLs."""

from __future__ import annotations

import io
import logging

from app.redaction import REDACTED, redact
from tests.test_core_loop import open_activity


def test_a_page_token_never_reaches_the_access_log(browser, platform, live_tool, caplog) -> None:
    """A real launch, then the student's pages: the log names the pages, not the token."""
    caplog.set_level(logging.INFO, logger="werkzeug")
    page = open_activity(browser, platform, live_tool)
    token = page.rstrip("/").rsplit("/", 1)[-1]
    assert browser.get(page + "status").status_code == 200
    assert browser.get(page + "no-such-page").status_code == 404

    lines = [r.getMessage() for r in caplog.records if r.name == "werkzeug"]
    assert any(f"/l/{REDACTED}/status" in line for line in lines)
    assert token not in caplog.text


def test_a_registration_token_never_reaches_the_access_log(browser, caplog) -> None:
    caplog.set_level(logging.INFO, logger="werkzeug")
    browser.get("/lti/register", params={"openid_configuration": "", "registration_token": "s3"})
    assert "registration_token=s3" not in caplog.text
    assert f"registration_token={REDACTED}" in caplog.text


def test_redaction_keeps_the_rest_of_the_line() -> None:
    line = '127.0.0.1 - - "GET /l/abc.DEF-1_x/submissions/3?token=zz&page=2 HTTP/1.1" 200 -'
    assert redact(line) == (
        f'127.0.0.1 - - "GET /l/{REDACTED}/submissions/3?token={REDACTED}&page=2 HTTP/1.1" 200 -'
    )


def test_bearer_tokens_and_authorization_values_are_redacted() -> None:
    assert redact("Authorization: Bearer sk-live.123") == f"Authorization: Bearer {REDACTED}"
    assert (
        redact("{'authorization': 'Basic dXNlcjpw'}") == f"{{'authorization': 'Basic {REDACTED}'}}"
    )
    assert redact("X-Api-Key=abc123 sent") == f"X-Api-Key={REDACTED} sent"
    assert redact("a bearer token is needed") == "a bearer token is needed"  # prose stays


def test_every_logger_is_redacted_not_only_the_url_loggers() -> None:
    """A record of any logger (a child of ``app``, a library's) passes the filter on the root
    handlers: a logger's own filters do not see its children's records."""
    from app import logs

    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        logs.configure("text")
        logging.getLogger("app.lti.views").warning("GET /l/s3cret-page/status")
        logging.getLogger("httpx").warning("headers: Authorization: Bearer s3cret-key")
    finally:
        root.removeHandler(handler)
    assert "s3cret" not in stream.getvalue()
    assert stream.getvalue().count(REDACTED) == 2
