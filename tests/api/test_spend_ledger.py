"""An API evaluation's model spend goes to its organization's ledger (app.spend)."""

from __future__ import annotations

from app.extensions import db
from app.models import Evaluation
from app.models.jobs import ModelUsage
from tests.api.conftest import submit
from tests.conftest import run_jobs
from tests.test_core_loop import GOOD_REPLY


def test_an_evaluations_spend_is_its_organizations(tenant, llm, app):
    app.config["EVALUAITOR_LLM_PRICES"] = {"fake-model": (1.0, 1.0)}
    llm.reply(GOOD_REPLY, usage={"prompt_tokens": 40, "completion_tokens": 10, "total_tokens": 50})
    response = submit(tenant.client, organization_external_id="school-a", client_reference="r1")
    assert response.status_code == 202, response.text
    run_jobs()
    evaluation = db.session.query(Evaluation).one()
    (row,) = db.session.query(ModelUsage).all()
    assert (row.organization_id, row.activity_id) == (tenant.org.id, None)
    assert row.job_id == evaluation.job.id and row.calls == 1
    assert (row.prompt_tokens, row.completion_tokens, row.cost) == (40, 10, 0.05)
    assert evaluation.job.prompts and evaluation.job.prompts[0]["messages"][0]["role"] == "system"
