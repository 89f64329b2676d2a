"""The REST API for clients that are not an LMS: organizations, evaluations, strategies.

JSON in and out, bearer tokens (:mod:`app.api.auth`), errors as
``{"error": {"code", "message"}}`` (rendered by :mod:`app.errors`), described by the
OpenAPI document at ``/openapi.json``, versioned by :mod:`app.api.version`.
"""

from __future__ import annotations

from flask import Flask

#: Paths whose errors (also 404/405 from routing) are answered in the API's JSON shape.
PREFIXES = (
    "/database",
    "/organizations",
    "/privacy",
    "/evaluations",
    "/plugins",
    "/openapi.json",
)


def init_app(app: Flask) -> None:
    from app.api import version
    from app.api.views import bp

    app.register_blueprint(bp)
    app.extensions["evaluaitor.api_prefixes"] = PREFIXES
    version.init_app(app)
