"""The ``evaluaitor`` command group, invoked as an admin would."""

from __future__ import annotations

import subprocess
import sys

import pytest
from click.testing import CliRunner
from flask.cli import ScriptInfo

from app.cli import cli
from app.extensions import db
from app.models import JobStatus, Platform, Submission
from tests.documents import ESSAY
from tests.test_core_loop import open_activity, status, upload

ADD = [
    "platform", "add",
    "--issuer", "https://moodle.example.edu",
    "--client-id", "abc123",
    "--auth-login-url", "https://moodle.example.edu/mod/lti/auth.php",
    "--auth-token-url", "https://moodle.example.edu/mod/lti/token.php",
    "--key-set-url", "https://moodle.example.edu/mod/lti/certs.php",
    "--deployment-id", "1",
    "--deployment-id", "2",
    "--name", "Example Moodle",
]  # fmt: skip


@pytest.fixture
def invoke(app):
    runner = CliRunner()

    def run(*args: str, input: str | None = None):
        return runner.invoke(cli, list(args), obj=ScriptInfo(create_app=lambda: app), input=input)

    return run


def test_platform_add_list_update_remove(invoke):
    added = invoke(*ADD)
    assert added.exit_code == 0, added.output
    assert "deployments 1, 2" in added.output

    again = invoke(*ADD[:-4], "--deployment-id", "7")
    assert again.exit_code == 0
    assert "deployments 1, 2, 7" in again.output
    assert db.session.query(Platform).count() == 1

    listing = invoke("platform", "list")
    assert "https://moodle.example.edu" in listing.output and "client_id=abc123" in listing.output

    platform_id = str(db.session.query(Platform).one().id)
    removed = invoke("platform", "remove", platform_id, "--yes")
    assert removed.exit_code == 0
    assert "No platforms registered" in invoke("platform", "list").output


def test_platform_add_refuses_a_url_that_is_not_http(invoke):
    bad = [*ADD]
    bad[bad.index("--key-set-url") + 1] = "certs.php"
    result = invoke(*bad)
    assert result.exit_code == 2
    assert "must be an http(s) URL" in result.output


def test_platform_remove_unknown_id(invoke):
    result = invoke("platform", "remove", "999", "--yes")
    assert result.exit_code == 1
    assert "No platform with id 999" in result.output


def test_console_script_lists_the_commands():
    result = subprocess.run(
        [sys.executable, "-m", "app.cli", "--help"], capture_output=True, text=True, check=True
    )
    for command in ("run", "worker", "db", "platform", "requeue"):
        assert f"  {command}" in result.stdout


def test_requeue_and_a_real_forking_worker_grade_a_stranded_submission(
    app, invoke, browser, platform, llm, live_tool
):
    llm.set_default("Final score: 6/10")
    page = open_activity(browser, platform, live_tool)
    healthy = app.extensions["evaluaitor.redis"]
    from redis import Redis

    app.extensions["evaluaitor.redis"] = Redis(port=9, socket_connect_timeout=0.2)
    try:
        upload(browser, page, "essay.txt", ESSAY.encode())
    finally:
        app.extensions["evaluaitor.redis"] = healthy
    assert status(browser, page)["status"] == "pending"

    requeued = invoke("requeue")
    assert requeued.exit_code == 0 and "Queued 2 item(s)." in requeued.output
    worked = invoke("worker", "--burst")
    assert worked.exit_code == 0, worked.output
    db.session.expire_all()
    assert db.session.query(Submission).one().status == JobStatus.COMPLETED
    assert platform.grade_for("2")["scoreGiven"] == 6


def test_activity_configure_validates_before_storing(
    invoke, browser, platform, live_tool, tmp_path
):
    from app.models import Activity

    open_activity(browser, platform, live_tool)
    activity_id = str(db.session.query(Activity).one().id)
    assert "rubric_eval" in invoke("activity", "list").output

    rubric = tmp_path / "rubric.yaml"
    rubric.write_text(
        "criteria:\n  - {name: Accuracy, requirement: Is correct., weight: 10}\n"
        "  - {name: Copying, requirement: Copies text., weight: -3}\n"
    )
    done = invoke(
        "activity", "configure", activity_id, "--plugin", "criteria",
        "--params", '{"mode": "one_shot"}', "--rubric", str(rubric),
    )  # fmt: skip
    assert done.exit_code == 0, done.output
    db.session.expire_all()
    activity = db.session.query(Activity).one()
    assert activity.plugin_name == "criteria" and activity.plugin_params == {"mode": "one_shot"}
    assert [c["weight"] for c in activity.rubric["criteria"]] == [10, -3]

    refused = invoke("activity", "configure", activity_id, "--params", '{"mode": "guess"}')
    assert refused.exit_code == 1 and "mode" in refused.output
    unknown = invoke("activity", "configure", activity_id, "--plugin", "magic")
    assert unknown.exit_code == 1 and "no grading strategy named 'magic'" in unknown.output
    db.session.expire_all()
    assert db.session.query(Activity).one().plugin_params == {"mode": "one_shot"}


def test_keys_rotate_publishes_the_new_key_and_keeps_the_old_one(
    app, invoke, browser, platform, llm, live_tool, tmp_path
):
    app.config["EVALUAITOR_KEY_DIR"] = str(tmp_path / "keys")  # not the session's shared key
    first = browser.get("/lti/jwks").json()["keys"]
    rotated = invoke("keys", "rotate")
    assert rotated.exit_code == 0 and "New signing key" in rotated.output
    published = browser.get("/lti/jwks").json()["keys"]
    assert len(published) == 2 and first[0]["kid"] in {k["kid"] for k in published}
    listing = invoke("keys", "list").output.splitlines()
    assert listing[-1].endswith("signing") and listing[0].endswith("published")

    # The platform verifies our token request against the new key.
    llm.set_default("Final score: 7/10")
    page = open_activity(browser, platform, live_tool)
    upload(browser, page, "essay.txt", ESSAY.encode())
    from tests.conftest import run_jobs

    run_jobs()
    assert platform.grade_for("2")["scoreGiven"] == 7

    # A later rotation with no grace removes the key replaced before it.
    again = invoke("keys", "rotate", "--grace-hours", "0")
    assert f"Removed: {first[0]['kid']}" in again.output
    assert first[0]["kid"] not in {k["kid"] for k in browser.get("/lti/jwks").json()["keys"]}
