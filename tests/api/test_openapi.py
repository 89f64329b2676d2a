"""The running app against its own OpenAPI document (schemathesis over real HTTP): every
answer has a documented status and matches its schema, and no input makes it fail with 500.

Bounded for the suite: a few derandomized examples per operation and generation mode, each
with a deadline (schemathesis's pytest plugin is not used: its fixture loader does not
work with the pytest this project runs).
"""

from __future__ import annotations

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import positive_data_acceptance

from tests.api.conftest import ADMIN_TOKEN, submit

ADMIN_PATHS = (
    "/database/status",
    "/organizations",
    "/organizations/{external_id}",
    "/privacy/erasures",
    "/privacy/exports",
)
EXAMPLES = 15


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
def test_the_api_answers_as_its_document_says(app, live_tool, tenant, mode):
    # Schemathesis also sends wrong tokens, all from one address: without this, the sign-in
    # lockout (app.api.auth) would answer most of its requests with 429.
    app.config["EVALUAITOR_SIGN_IN_MAX_FAILURES"] = 10**6
    submit(tenant.client)  # something to list, so list pages are not all empty
    schema = schemathesis.openapi.from_url(live_tool + "/openapi.json")
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) == 11
    for operation in operations:
        token = ADMIN_TOKEN if operation.path in ADMIN_PATHS else tenant.token
        try:
            check(operation, mode, live_tool, {"Authorization": f"Bearer {token}"})
        except Unsatisfiable:
            # Nothing to make invalid besides the token (e.g. GET /plugins): the auth tests
            # cover that.
            assert mode is GenerationMode.NEGATIVE


def check(operation, mode: GenerationMode, base_url: str, headers: dict[str, str]) -> None:
    """Generated requests for one operation, each answer validated against the document."""
    # A schema-valid upload can still be refused: a file's content, a strategy's own
    # settings and a rubric are checked beyond what the document can express.
    skip = [positive_data_acceptance] if operation.path == "/evaluations" else []

    @given(case=operation.as_strategy(generation_mode=mode, headers=headers))
    @settings(
        max_examples=EXAMPLES,
        deadline=3000,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    def conforms(case) -> None:
        case.call_and_validate(base_url=base_url, excluded_checks=skip)

    conforms()


def test_the_document_is_openapi_3_and_lists_every_route(live_tool):
    document = httpx.get(live_tool + "/openapi.json").json()
    assert document["openapi"].startswith("3.")
    assert set(document["paths"]) == {
        "/database/status",
        "/organizations",
        "/organizations/{external_id}",
        "/privacy/erasures",
        "/privacy/exports",
        "/evaluations",
        "/evaluations/{code}/status",
        "/evaluations/{code}/result",
        "/evaluations/{code}/cancel",
        "/plugins",
    }
    form = document["paths"]["/evaluations"]["post"]["requestBody"]["content"]
    assert form["multipart/form-data"]["schema"]["required"] == ["file"]


def test_the_document_has_the_api_version_and_marks_the_old_names(live_tool):
    document = httpx.get(live_tool + "/openapi.json").json()
    assert document["info"]["version"] == "1"
    schemas = document["components"]["schemas"]
    old = {
        "StatusOut": ("started_at", "finished_at", "duration_seconds"),
        "Progress": ("step",),
        "EvaluationSummary": ("finished_at",),
        "OrganizationOut": ("evaluations_count", "pending_evaluations"),
        "DatabaseStatus": ("evaluations_count", "pending_evaluations"),
    }
    for model, names in old.items():
        for name in names:
            assert schemas[model]["properties"][name]["deprecated"] is True, (model, name)
    assert schemas["EvaluationStatus"]["enum"] == [
        "pending", "processing", "completed", "failed", "cancelled",
    ]  # fmt: skip


def test_every_bound_in_the_document_is_json_schema(live_tool):
    """pydantic writes a bound it cannot place as its own keyword (``ge``, ``le``), which no
    client reads: the fuzzer then sent a negative token limit as valid. Every schema object
    of the document uses JSON Schema's names."""
    document = httpx.get(live_tool + "/openapi.json").json()
    stack, found = [document], []
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            found += [key for key in ("ge", "le", "gt", "lt") if key in node and "type" in node]
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    assert not found
