"""The REST API's errors: each a stable ``code`` a client can branch on, and a message.

They are :class:`app.errors.EvaluaitorError` subclasses, so the one error handler in
:mod:`app.errors` renders them (as ``{"error": {"code", "message"}}`` on API paths).
"""

from __future__ import annotations

from app.errors import EvaluaitorError


class Unauthorized(EvaluaitorError):
    status_code = 401
    code = "unauthorized"
    user_message = "Send a valid token as 'Authorization: Bearer <token>'."


class AdminNotConfigured(EvaluaitorError):
    status_code = 503
    code = "admin_token_not_configured"
    user_message = (
        "The admin endpoints are disabled: no admin token is configured on the server "
        "(EVALUAITOR_ADMIN_TOKEN)."
    )


class ApiForbidden(EvaluaitorError):
    status_code = 403
    code = "forbidden"
    user_message = "This token may not use this endpoint."


class ModelNotAllowed(EvaluaitorError):
    """The organization's (or the site's) allowlist forbids the configured model server
    (app.llm.endpoints): a grading would send the work where the school said it may not go."""

    status_code = 403
    code = "model_not_allowed"


class ApiNotFound(EvaluaitorError):
    status_code = 404
    code = "not_found"


class InvalidRequest(EvaluaitorError):
    """The request is well-formed HTTP but its content is not acceptable."""

    status_code = 422
    code = "invalid_request"


class UnsupportedMediaType(EvaluaitorError):
    status_code = 415
    code = "unsupported_media_type"


class Conflict(EvaluaitorError):
    """The evaluation is not in a state that allows this request."""

    status_code = 409

    def __init__(self, code: str, message: str) -> None:
        self.code = code
        super().__init__(message)
