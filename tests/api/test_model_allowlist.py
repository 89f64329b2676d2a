"""An organization's allowlist of model servers through the REST API, the worker and the CLI:
the administrator sets it, an evaluation that would go elsewhere is refused when it is sent,
and one accepted before the list changed fails in the worker naming why, with nothing sent to
the forbidden server (a second real server on 127.0.0.1)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from click.testing import CliRunner
from flask.cli import ScriptInfo

from app.cli import cli
from app.extensions import db
from app.llm.endpoints import normalize
from app.models import Organization
from tests.api.conftest import submit
from tests.api.test_evaluations import GOOD_REPLY, TREE
from tests.conftest import run_jobs
from tests.fakes.llm_server import FakeLLM


@pytest.fixture
def forbidden() -> Iterator[FakeLLM]:
    with FakeLLM() as fake:
        fake.set_default(GOOD_REPLY)
        yield fake


def _allow(admin, external_id: str, urls: list[str]):
    return admin.post("/organizations", json={"external_id": external_id, "model_base_urls": urls})


def test_the_administrator_sets_reads_and_lifts_the_list(admin, tenant, llm):
    response = _allow(admin, "school-a", [llm.url + "/", llm.url])
    assert response.status_code == 200, response.text
    assert response.json()["model_base_urls"] == [normalize(llm.url)]
    assert admin.get("/organizations/school-a").json()["model_base_urls"] == [normalize(llm.url)]

    renamed = admin.post("/organizations", json={"external_id": "school-a", "name": "A"})
    assert renamed.json()["model_base_urls"] == [normalize(llm.url)]  # omitted: unchanged

    assert _allow(admin, "school-a", []).json()["model_base_urls"] == []


@pytest.mark.parametrize("bad", [["llm.school.edu"], ["ftp://x.edu"], "https://x.edu", [1]])
def test_a_list_with_something_else_than_base_urls_is_refused(admin, tenant, bad):
    response = _allow(admin, "school-a", bad)
    assert response.status_code == 422
    assert "model_base_urls" in response.json()["error"]["message"]
    db.session.expire_all()
    assert (
        not db.session.query(Organization).filter_by(external_id="school-a").one().model_base_urls
    )


def test_only_the_allowed_server_receives_the_work(app, admin, tenant, llm, forbidden):
    """The school allows ``llm``: it grades. The site then points at ``forbidden``: an
    evaluation accepted before fails in the worker naming the allowed servers, a new one is
    refused when sent, and ``forbidden`` never receives a request."""
    _allow(admin, "school-a", [llm.url])
    llm.reply(GOOD_REPLY)
    graded = submit(tenant.client).json()["job_code"]
    run_jobs()
    assert tenant.client.get(f"/evaluations/{graded}/status").json()["status"] == "completed"
    assert len(llm.requests) == 1
    waiting = submit(tenant.client).json()["job_code"]

    app.config["EVALUAITOR_LLM_BASE_URL"] = forbidden.url
    run_jobs()
    status = tenant.client.get(f"/evaluations/{waiting}/status").json()
    assert status["status"] == "failed"
    assert status["error_message"].startswith("This organization only allows models at")
    assert normalize(llm.url) in status["error_message"]

    refused = submit(tenant.client)
    assert refused.status_code == 403, refused.text
    error = refused.json()["error"]
    assert error["code"] == "model_not_allowed" and normalize(llm.url) in error["message"]
    tree = submit(tenant.client, plugin_name="criteria_tree", plugin_params={"tree": TREE})
    assert tree.status_code == 202  # program tests send nothing to a model
    run_jobs()
    assert forbidden.requests == [] and len(llm.requests) == 1


def test_the_cli_shows_sets_and_lifts_the_list(app, tenant):
    runner = CliRunner()

    def invoke(*args: str):
        return runner.invoke(cli, list(args), obj=ScriptInfo(create_app=lambda: app))

    assert "any the site allows" in invoke("org", "models", "school-a").output
    done = invoke("org", "models", "school-a", "https://llm.school.edu/v1")
    assert done.exit_code == 0 and "https://llm.school.edu:443/v1" in done.output
    db.session.expire_all()
    assert db.session.get(Organization, tenant.org.id).model_base_urls == [
        "https://llm.school.edu:443/v1"
    ]
    assert invoke("org", "models", "school-a", "not a url").exit_code != 0
    assert invoke("org", "models", "school-a", "--any").exit_code == 0
    db.session.expire_all()
    assert db.session.get(Organization, tenant.org.id).model_base_urls == []
