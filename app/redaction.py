"""Credentials that travel in URLs never reach a log.

Page tokens sit in the path (``/l/<token>/…``) so pages work in an LMS iframe without cookies,
and Dynamic Registration's one-time ``registration_token`` comes in a query string. Both are
bearer credentials: anyone who reads an access log line could open a teacher's page with it.
The web server's access log and Flask's "Exception on <path>" lines name the URL, so their
loggers get a filter that blanks those parts before any handler sees the record.
"""

from __future__ import annotations

import logging
import re

REDACTED = "[redacted]"

#: ``/l/<token>`` in a path, token-bearing query parameters, and bearer tokens or whole
#: Authorization header values (an httpx or a requests error may quote the headers it sent).
_CREDENTIALS = re.compile(
    r"(/l/)[^/\s?#\"']+"
    r"|((?:registration_token|token|api_key|access_token)=)[^&\s#\"']+"
    r"|((?-i:Bearer|Basic)\s+)[^\s\"',}]+"
    r"|((?:Authorization|X-Api-Key)[\"']?\s*[:=]\s*[\"']?(?:(?:Bearer|Basic)\s+)?)[^\s\"',}]+",
    re.IGNORECASE,
)

#: Loggers that write request URLs: Werkzeug's and gunicorn's access logs, Flask's error log.
_URL_LOGGERS = ("werkzeug", "gunicorn.access", "gunicorn.error", "app")


def redact(text: str) -> str:
    """``text`` with every credential it carries (in a URL, a header) replaced by
    ``[redacted]``."""
    return _CREDENTIALS.sub(lambda m: next(filter(None, m.groups())) + REDACTED, text)


class RedactCredentials(logging.Filter):
    """Rewrites a record's message when it carries a credential; never drops a record."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        cleaned = redact(message)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        return True


_FILTER = RedactCredentials()


def init_app() -> None:
    """Install the filter on the URL-writing loggers (once, whatever the number of apps)."""
    for name in _URL_LOGGERS:
        logger = logging.getLogger(name)
        if _FILTER not in logger.filters:
            logger.addFilter(_FILTER)
