"""An ensemble needs two different grader models, and each way in says so: the deep-linking
setup form, the REST API, and the worker for an activity stored before the rule."""

from __future__ import annotations

import pytest

from app.extensions import db
from app.models import Activity, Evaluation, JobStatus
from tests.api.conftest import make_tenant, submit
from tests.conftest import run_jobs
from tests.test_core_loop import latest_submission, open_activity, upload
from tests.test_deep_linking import only_activity, post_form, start_setup, valid_form

NOT_TWO = "at least two different grader models"


@pytest.mark.parametrize(
    ("models", "message"),
    [("", "Field required"), ('["fake-model", "fake-model"]', NOT_TWO), ('["one"]', NOT_TWO)],
    ids=["unset", "same-twice", "one"],
)
def test_the_setup_form_refuses_fewer_than_two_models(
    browser, platform, live_tool, models, message
):
    page = start_setup(browser, platform, live_tool)
    assert "Two or more different grader models" in browser.get(page).text
    response = post_form(
        browser, page, valid_form(plugin="ensemble", **{"p.ensemble.models": models})
    )
    assert response.status_code == 400
    error = response.text.split('id="p-ensemble-models-error">', 1)
    assert len(error) == 2, response.text
    assert message in error[1].split("</p>", 1)[0]
    assert only_activity().plugin_name != "ensemble"


def test_the_setup_form_stores_two_models(browser, platform, live_tool):
    page = start_setup(browser, platform, live_tool)
    form = valid_form(plugin="ensemble", **{"p.ensemble.models": '["model-a", "model-b"]'})
    assert post_form(browser, page, form).status_code == 200
    assert only_activity().plugin_params["models"] == ["model-a", "model-b"]


@pytest.mark.parametrize("params", [{}, {"models": ["m", "m"]}], ids=["unset", "same-twice"])
def test_the_api_refuses_fewer_than_two_models(live_tool, params):
    tenant = make_tenant(live_tool, "school-a")
    with tenant.client:
        response = submit(
            tenant.client,
            "Sum.java",
            b"class Sum {}\n",
            plugin_name="ensemble",
            plugin_params=params,
        )
    assert response.status_code == 422, response.text
    assert "models" in response.json()["error"]["message"]
    assert db.session.query(Evaluation).count() == 0


def test_an_activity_stored_with_one_model_fails_with_the_setting_named(
    browser, platform, llm, live_tool
):
    """Settings saved before the rule (no models: the activity's model asked twice) must not
    grade with one model; the job stops and says which setting to fix."""
    page = open_activity(browser, platform, live_tool)
    activity = db.session.query(Activity).one()
    activity.plugin_name, activity.plugin_params = "ensemble", {}
    db.session.commit()
    upload(browser, page, "Sum.java", b"class Sum {}\n")
    run_jobs()
    submission = latest_submission()
    assert submission.status == JobStatus.FAILED
    assert "models" in submission.error_message and submission.grade is None
    assert llm.requests == []
