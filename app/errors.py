"""The error hierarchy, and the one place that decides how an error reaches a person.

Every error a user can cause carries a ``user_message`` (plain language, no internals)
and an HTTP status. Browser routes get an accessible HTML page; JSON routes (``/…/status``,
``Accept: application/json``) get ``{"error": code, "message": ...}``; the REST API gets
``{"error": {"code": ..., "message": ...}}``. Nothing shows a stack trace.
"""

from __future__ import annotations

import logging
import math

from flask import Flask, current_app, jsonify, render_template, request
from flask_babel import force_locale
from flask_babel import lazy_gettext as _l
from werkzeug.exceptions import HTTPException, RequestEntityTooLarge

log = logging.getLogger(__name__)


class EvaluaitorError(Exception):
    """Base class: an error with a message fit for the person who caused it."""

    status_code = 400
    code = "error"
    user_message = _l("Something went wrong.")

    def __init__(self, user_message: str | None = None, *, detail: str | None = None) -> None:
        if user_message:
            self.user_message = user_message
        super().__init__(detail or self.user_message)

    def response_headers(self) -> dict[str, str]:
        """Headers the error response needs besides its body (a 429's ``Retry-After``)."""
        return {}


class IllegalTransition(EvaluaitorError):
    """A state change the workflow does not allow: a bug, never user input."""

    status_code = 500
    code = "illegal_transition"


class LaunchError(EvaluaitorError):
    """The LMS launch could not be trusted or understood."""

    code = "launch_error"
    user_message = _l("This launch from your course could not be verified.")


class UnknownPlatform(LaunchError):
    code = "unknown_platform"
    user_message = _l(
        "This LMS is not registered with Evaluaitor. Ask your LMS administrator to register "
        "the tool (issuer and client ID) before using it."
    )


class UnknownDeployment(LaunchError):
    code = "unknown_deployment"
    user_message = _l(
        "This deployment of the tool is not registered with Evaluaitor. Ask your LMS "
        "administrator to add its deployment ID."
    )


class ReplayedLaunch(LaunchError):
    code = "replayed_launch"
    user_message = _l(
        "This launch link was already used. Open the activity again from your course."
    )


class SessionExpired(EvaluaitorError):
    status_code = 401
    code = "session_expired"
    user_message = _l("Your session has expired. Open the activity again from your course.")


class Forbidden(EvaluaitorError):
    status_code = 403
    code = "forbidden"
    user_message = _l("You do not have access to this page.")


class SwitchedOff(Forbidden):
    """A valid page token whose platform, deployment or organization an admin switched off:
    access ends at once, however young the token."""

    code = "switched_off"
    user_message = _l(
        "This activity is switched off for your platform; ask your LMS administrator."
    )


class TooManyAttempts(EvaluaitorError):
    """Too many failed sign-ins from one address: refused, even with the right token, until
    the lockout ends; ``Retry-After`` says when."""

    status_code = 429
    code = "too_many_attempts"

    def __init__(self, retry_after: int, *, detail: str | None = None) -> None:
        self.retry_after = retry_after
        message = _l(
            "Too many failed attempts from your address. Try again in %(minutes)s min.",
            minutes=math.ceil(retry_after / 60),
        )
        super().__init__(message, detail=detail)

    def response_headers(self) -> dict[str, str]:
        return {"Retry-After": str(self.retry_after)}


class NotFound(EvaluaitorError):
    status_code = 404
    code = "not_found"
    user_message = _l("That item does not exist.")


class UploadError(EvaluaitorError):
    code = "upload_error"
    user_message = _l("The file could not be accepted.")


class FileTooLarge(UploadError):
    status_code = 413
    code = "file_too_large"

    def __init__(self, limit_mb: float) -> None:
        super().__init__(
            _l("The file is larger than the %(limit)s MB limit.", limit=f"{limit_mb:g}")
        )


class StorageFull(UploadError):
    """The disk (or the quota) is full: nothing of this upload is kept, nothing else is lost."""

    status_code = 507
    code = "storage_full"
    user_message = _l(
        "The server has no room to store your file right now. Nothing was lost: your earlier "
        "submissions are safe. Try again later."
    )


class QueueUnavailable(EvaluaitorError):
    """Redis could not take the job; the submission is kept and enqueued later."""

    status_code = 503
    code = "queue_unavailable"


#: What a person is told about the HTTP errors Flask raises itself (werkzeug's descriptions
#: are English, and the REST API keeps them).
HTTP_MESSAGES = {
    400: _l("The request could not be understood. Go back and try again."),
    403: _l("You do not have access to this page."),
    404: _l("This page does not exist."),
    405: _l("This page cannot be used that way."),
}


def is_rest_api() -> bool:
    """A path of the REST API (prefixes registered by :func:`app.api.init_app`), matched by
    path so that routing errors (404, 405) outside any view answer in the API's shape too."""
    prefixes = current_app.extensions.get("evaluaitor.api_prefixes", ())
    return any(request.path == p or request.path.startswith(p + "/") for p in prefixes)


def _wants_json() -> bool:
    if request.path.endswith("/status") or request.path.startswith("/api/"):
        return True
    best = request.accept_mimetypes.best_match(["text/html", "application/json"])
    return best == "application/json"


def _respond(status: int, code: str, message: str):
    message = str(message)  # a lazy translation, in the reader's language (English for the API)
    if is_rest_api():
        return jsonify(error={"code": code, "message": message}), status
    if _wants_json():
        return jsonify(error=code, message=message), status
    return render_template("error.html", status=status, message=message), status


def init_app(app: Flask) -> None:
    @app.errorhandler(EvaluaitorError)
    def handle_own(exc: EvaluaitorError):
        # The technical detail goes to the log, for the administrator; never to the page.
        level = logging.ERROR if exc.status_code >= 500 else logging.WARNING
        with force_locale("en"):  # the log reads the same whoever caused the error
            log.log(level, "%s on %s: %s", type(exc).__name__, request.path, exc)
        body, status = _respond(exc.status_code, exc.code, exc.user_message)
        return body, status, exc.response_headers()

    @app.errorhandler(RequestEntityTooLarge)
    def handle_too_large(exc: RequestEntityTooLarge):
        return handle_own(FileTooLarge(app.config["EVALUAITOR_MAX_UPLOAD_MB"]))

    @app.errorhandler(HTTPException)
    def handle_http(exc: HTTPException):
        status = exc.code or 500
        message = exc.description or ""
        if not is_rest_api() and exc.description == type(exc).description:
            # werkzeug's own English text; a description given on purpose (CSRF) stays
            message = HTTP_MESSAGES.get(
                status, _l("The request could not be completed (error %(status)s).", status=status)
            )
        body, status = _respond(status, exc.name.lower().replace(" ", "_"), message)
        allowed = getattr(exc, "valid_methods", None)  # a 405 says what is allowed
        return body, status, {"Allow": ", ".join(allowed)} if allowed else {}

    @app.errorhandler(Exception)
    def handle_unexpected(exc: Exception):
        log.exception("unhandled error on %s", request.path)
        return _respond(
            500, "internal_error", _l("An unexpected error occurred. Please try again.")
        )
