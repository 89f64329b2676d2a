"""The REST API's version, apart from the application's.

:data:`API_VERSION` changes only when an answer changes in a way a client could break on (a
field removed or renamed, a status word or an HTTP status changed); new fields and values
do not change it. Every API answer, errors included, and ``/health`` say it in the
``API-Version`` header, and the OpenAPI document in ``info.version``.
"""

from __future__ import annotations

from flask import Flask, Response, request

API_VERSION = "1"
HEADER = "API-Version"


def init_app(app: Flask) -> None:
    from app.errors import is_rest_api

    @app.after_request
    def _api_version(response: Response) -> Response:
        # App-wide, not the blueprint's: routing errors and /health have no blueprint.
        if request.path == "/health" or is_rest_api():
            response.headers[HEADER] = API_VERSION
        return response
