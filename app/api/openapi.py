"""The OpenAPI 3.1 document of the REST API, served at ``/openapi.json``.

Schemas come from the pydantic models in :mod:`app.api.schemas` (the same ones that
validate requests and shape answers); only the paths, their parameters and their status
codes are written here. ``info.version`` is the API's version (app.api.version), not the
application's.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from app.api import schemas
from app.api.version import API_VERSION, HEADER

REF = "#/components/schemas/{model}"
_INPUT: tuple[type[BaseModel], ...] = (
    schemas.OrganizationIn,
    schemas.SubmissionForm,
    schemas.PrivacyScopeIn,
)
_OUTPUT: tuple[type[BaseModel], ...] = (
    schemas.ErrorBody,
    schemas.DatabaseStatus,
    schemas.OrganizationOut,
    schemas.Accepted,
    schemas.StatusOut,
    schemas.ResultOut,
    schemas.EvaluationList,
    schemas.Cancelled,
    schemas.PluginList,
    schemas.ErasureOut,
)

_ERRORS = {
    "400": "The request could not be read.",
    "401": "The token is missing, unknown or revoked, or its organization is inactive.",
    "403": "This token may not use this endpoint.",
    "404": "No such item for this organization.",
    "409": "The evaluation (or, for an erasure, some of the work) is not in a state that "
    "allows this.",
    "413": "The file is larger than the upload limit.",
    "415": "The body or the file is not of an accepted type.",
    "422": "A field is invalid; the message names it.",
    "429": "Too many failed authentications from this address; wait Retry-After seconds.",
    "503": "Not available (admin token not configured, or the database is unreachable).",
}


def _ref(model: type[BaseModel]) -> dict[str, str]:
    return {"$ref": REF.format(model=model.__name__)}


def _content(schema: dict[str, Any]) -> dict[str, Any]:
    return {"application/json": {"schema": schema}}


def _answer(description: str, model: type[BaseModel]) -> dict[str, Any]:
    return {
        "description": description,
        "headers": {HEADER: {"$ref": f"#/components/headers/{HEADER}"}},
        "content": _content(_ref(model)),
    }


def _operation(
    summary: str,
    ok: dict[str, type[BaseModel]],
    errors: str,
    *,
    security: str = "bearer",
    **extra: Any,
) -> dict[str, Any]:
    responses: dict[str, Any] = {
        status: _answer(model.__doc__ or summary, model) for status, model in ok.items()
    }
    for status in (*errors.split(), "429"):  # any token may meet the lockout (app.api.auth)
        responses.setdefault(status, {"$ref": f"#/components/responses/E{status}"})
    return {"summary": summary, "security": [{security: []}], "responses": responses, **extra}


def _query_parameters(model: type[BaseModel]) -> list[dict[str, Any]]:
    """Query-string parameters from a model's fields (optional, nulls left out)."""
    schema = model.model_json_schema(ref_template=REF)
    parameters = []
    for name, prop in schema["properties"].items():
        options = [o for o in prop.get("anyOf", [prop]) if o.get("type") != "null"]
        value = dict(options[0])
        for key in ("default", "description"):
            if key in prop:
                value[key] = prop[key]
        parameters.append({"name": name, "in": "query", "required": False, "schema": value})
    return parameters


def _code_parameter() -> dict[str, Any]:
    return {"name": "code", "in": "path", "required": True, "schema": {"type": "string"}}


def _export_operation() -> dict[str, Any]:
    """An export answers with a zip, not JSON."""
    operation = _operation(
        "Everything held about a student, course, activity or organization, as a zip: "
        "data.json and files/ (admin)",
        {},
        "400 401 403 404 415 422 503",
        requestBody={"required": True, "content": _content(_ref(schemas.PrivacyScopeIn))},
    )
    operation["responses"]["200"] = {
        "description": "The archive (a subject access request's answer).",
        "headers": {HEADER: {"$ref": f"#/components/headers/{HEADER}"}},
        "content": {"application/zip": {"schema": {"type": "string", "format": "binary"}}},
    }
    return operation


def document() -> dict[str, Any]:
    _, definitions = models_json_schema(
        [(m, "validation") for m in _INPUT] + [(m, "serialization") for m in _OUTPUT],
        ref_template=REF,
    )
    components: dict[str, Any] = definitions["$defs"]
    form = dict(components[schemas.SubmissionForm.__name__])
    form["properties"] = {"file": {"type": "string", "format": "binary"}, **form["properties"]}
    form["required"] = ["file"]
    code = [_code_parameter()]
    paths = {
        "/database/status": {
            "get": _operation(
                "Schema state, counts, and the database's reachability and revision (admin)",
                {"200": schemas.DatabaseStatus},
                "401 403 503",
            )
        },
        "/privacy/erasures": {
            "post": _operation(
                "Erase a student, course, activity or organization with everything of theirs "
                "(admin; 409 while some of its work is in progress)",
                {"200": schemas.ErasureOut},
                "400 401 403 404 409 415 422 503",
                requestBody={"required": True, "content": _content(_ref(schemas.PrivacyScopeIn))},
            )
        },
        "/privacy/exports": {"post": _export_operation()},
        "/organizations": {
            "post": _operation(
                "Create (201) or update (200) an organization by external id (admin)",
                {"200": schemas.OrganizationOut, "201": schemas.OrganizationOut},
                "400 401 403 415 422 503",
                requestBody={"required": True, "content": _content(_ref(schemas.OrganizationIn))},
            )
        },
        "/organizations/{external_id}": {
            "get": _operation(
                "One organization with its job counts (admin)",
                {"200": schemas.OrganizationOut},
                "401 403 404 503",
                parameters=[
                    {
                        "name": "external_id",
                        "in": "path",
                        "required": True,
                        "schema": {"type": "string"},
                    },
                ],  # fmt: skip
            )
        },
        "/evaluations": {
            "post": _operation(
                "Submit a file for grading (202: queued)",
                {"202": schemas.Accepted},
                "400 401 403 413 415 422",
                requestBody={
                    "required": True,
                    "content": {"multipart/form-data": {"schema": form}},
                },
            ),
            "get": _operation(
                "The organization's evaluation jobs: filtered, sorted, one page",
                {"200": schemas.EvaluationList},
                "401 403 422",
                parameters=_query_parameters(schemas.ListQuery),
            ),
        },
        "/evaluations/{code}/status": {
            "get": _operation(
                "Status and progress", {"200": schemas.StatusOut}, "401 403 404", parameters=code
            )
        },
        "/evaluations/{code}/result": {
            "get": _operation(
                "The result (null, with a message, until there is one)",
                {"200": schemas.ResultOut},
                "401 403 404",
                parameters=code,
            )
        },
        "/evaluations/{code}/cancel": {
            "post": _operation(
                "Cancel a queued or running evaluation (409 once finished)",
                {"200": schemas.Cancelled},
                "401 403 404 409",
                parameters=code,
            )
        },
        "/plugins": {
            "get": _operation(
                "The grading strategies and their settings' JSON Schema",
                {"200": schemas.PluginList},
                "401",
            )
        },
    }
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Evaluaitor REST API",
            "version": API_VERSION,
            "description": "The Evaluaitor proposal's API (section 5) with extra fields. Fields "
            "marked deprecated are the names before API version 1, kept for their clients.",
        },
        "paths": paths,
        "components": {
            "schemas": components,
            "responses": {
                f"E{status}": _answer(text, schemas.ErrorBody) for status, text in _ERRORS.items()
            },
            "headers": {
                HEADER: {
                    "description": "The API version this answer follows.",
                    "required": True,
                    "schema": {"type": "string", "const": API_VERSION},
                }
            },
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
    }
