"""Log lines: text by default, or one JSON object per line (EVALUAITOR_LOG_FORMAT=json) for a
log collector, with the request's id or the RQ job's.

Each request has an id: the one the proxy or the client sent in ``X-Request-ID`` when it is a
short plain token, else a new one; the answer carries it back in the same header, and every
line logged while serving the request names it. In a work horse, lines name the RQ job.

Whatever the format, every line passes :class:`app.redaction.RedactCredentials` on its way out
(a filter on the root handlers, which every propagated record meets): bearer tokens,
Authorization values and URL-borne tokens are blanked. Nothing here logs a body.

The standard library's logging does it in a few dozen lines; python-json-logger would save
little of that and add a dependency.
"""

from __future__ import annotations

import json
import logging
import re
import uuid
from datetime import UTC, datetime

from flask import Flask, Response, g, has_request_context, request
from rq import get_current_job

from app.redaction import RedactCredentials, redact

HEADER = "X-Request-ID"
_ACCEPTED_ID = re.compile(r"[A-Za-z0-9._:-]{1,64}")
_TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
_REDACT = RedactCredentials()


class JsonFormatter(logging.Formatter):
    """One JSON object per record: time, level, logger, message, request_id or job_id, and
    the exception's traceback if any (all redacted)."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, object] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": redact(record.getMessage()),
        }
        if has_request_context() and "request_id" in g:
            entry["request_id"] = g.request_id
        job = get_current_job()
        if job is not None:
            entry["job_id"] = job.id
        if record.exc_info:
            entry["exception"] = redact(self.formatException(record.exc_info))
        return json.dumps(entry, ensure_ascii=False)


def configure(log_format: str) -> None:
    """Log to stderr in ``log_format`` unless logging is set up already (as basicConfig
    would: gunicorn's and pytest's own handlers stay as they are), and redact on every root
    handler."""
    root = logging.getLogger()
    if not root.handlers:
        root.addHandler(logging.StreamHandler())
        root.setLevel(logging.INFO)
        root.handlers[0].setFormatter(
            JsonFormatter() if log_format == "json" else logging.Formatter(_TEXT_FORMAT)
        )
    for handler in root.handlers:
        if _REDACT not in handler.filters:
            handler.addFilter(_REDACT)


def init_app(app: Flask) -> None:
    configure(app.config["EVALUAITOR_LOG_FORMAT"])

    @app.before_request
    def _request_id() -> None:
        offered = request.headers.get(HEADER, "")
        g.request_id = offered if _ACCEPTED_ID.fullmatch(offered) else uuid.uuid4().hex

    @app.after_request
    def _send_request_id(response: Response) -> Response:
        if "request_id" in g:
            response.headers[HEADER] = g.request_id
        return response
