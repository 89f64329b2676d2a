"""An organization's monthly limit over the REST API: set by the admin API, shown with the
organization, and an evaluation that would pass it is ``processing`` with ``waiting_for:
budget`` (no new status word), graded once the limit is lifted."""

from __future__ import annotations

from datetime import timedelta

from app import spend
from app.evaluation import sweeper
from tests.api.conftest import submit
from tests.api.test_proposal_contract import moment, status_of
from tests.conftest import run_jobs
from tests.test_budget import fixed_usage


def test_an_evaluation_waits_for_its_organizations_budget(app, admin, tenant, llm):
    llm.set_default(fixed_usage)
    limited = admin.post(
        "/organizations", json={"external_id": "school-a", "monthly_token_limit": 0}
    )
    assert limited.status_code == 200, limited.text
    assert limited.json()["budget"]["token_limit"] == 0
    code = submit(tenant.client, organization_external_id="school-a").json()["job_code"]
    run_jobs()

    waiting = status_of(tenant, code)
    assert (waiting["status"], waiting["waiting_for"]) == ("processing", "budget")
    assert moment(waiting["retry_at"]) == spend.next_month()
    assert "spending limit is reached" in waiting["progress"]["message"]
    shown = admin.get("/organizations/school-a").json()["budget"]
    assert (shown["tokens_left"], shown["waiting"], shown["cost_left"]) == (0, 1, None)

    # a name change leaves the limit alone; null lifts it
    renamed = admin.post("/organizations", json={"external_id": "school-a", "name": "A"})
    assert renamed.json()["budget"]["token_limit"] == 0
    lifted = admin.post(
        "/organizations", json={"external_id": "school-a", "monthly_token_limit": None}
    )
    assert lifted.json()["budget"]["token_limit"] is None
    assert sweeper.sweep(timedelta(seconds=60)) == 1
    run_jobs()
    done = status_of(tenant, code)
    assert (done["status"], done["waiting_for"], done["retry_at"]) == ("completed", None, None)
    used = admin.get("/organizations/school-a").json()["budget"]
    assert used["tokens_used"] > 0 and used["waiting"] == 0


def test_a_negative_limit_is_refused(admin, tenant):
    refused = admin.post(
        "/organizations", json={"external_id": "school-a", "monthly_cost_limit": -1}
    )
    assert refused.status_code in (400, 422), refused.text


def test_a_token_limit_is_any_json_integer(admin, tenant):
    """5e3 is the integer 5000 to JSON Schema (the OpenAPI fuzzer sent one): taken as such;
    a fraction or a numeric string is still no token count."""
    written = admin.post(
        "/organizations",
        content=b'{"external_id": "school-a", "monthly_token_limit": 5e3}',
        headers={"Content-Type": "application/json"},
    )
    assert written.status_code == 200, written.text
    assert written.json()["budget"]["token_limit"] == 5000
    for wrong in (1.5, "5000", True):
        refused = admin.post(
            "/organizations", json={"external_id": "school-a", "monthly_token_limit": wrong}
        )
        assert refused.status_code in (400, 422), (wrong, refused.text)
