"""``evaluaitor token`` and ``evaluaitor org``: tokens that work over HTTP once created and
stop working once revoked; callback secrets that sign what the client receives."""

from __future__ import annotations

import httpx
import pytest
from click.testing import CliRunner
from flask.cli import ScriptInfo

from app.api.auth import hash_token
from app.cli import cli
from app.extensions import db
from app.models import ApiToken, Organization


@pytest.fixture
def invoke(app):
    runner = CliRunner()

    def run(*args: str):
        return runner.invoke(cli, list(args), obj=ScriptInfo(create_app=lambda: app))

    return run


def test_create_list_and_revoke_a_token(invoke, live_tool):
    assert invoke("org", "add", "acme", "--name", "Acme").exit_code == 0
    created = invoke("token", "create", "--org", "acme", "--name", "lamba")
    assert created.exit_code == 0, created.output
    plain = created.output.strip()
    assert plain.startswith("evk_") and len(plain) > 40
    stored = db.session.query(ApiToken).one()
    assert stored.token_hash == hash_token(plain) and plain not in stored.token_hash

    headers = {"Authorization": f"Bearer {plain}"}
    assert httpx.get(live_tool + "/evaluations", headers=headers).status_code == 200

    listed = invoke("token", "list", "--org", "acme")
    assert listed.exit_code == 0
    assert f"{stored.id}\t{plain[:12]}…\tlamba" in listed.output and "active" in listed.output
    assert plain not in listed.output

    revoked = invoke("token", "revoke", str(stored.id))
    assert revoked.exit_code == 0 and "revoked" in revoked.output
    assert httpx.get(live_tool + "/evaluations", headers=headers).status_code == 401
    assert "revoked 20" in invoke("token", "list", "--org", "acme").output


def test_token_commands_name_what_is_missing(invoke):
    missing_org = invoke("token", "create", "--org", "nobody")
    assert missing_org.exit_code != 0 and "No organization 'nobody'" in missing_org.output
    assert invoke("token", "list", "--org", "nobody").exit_code != 0
    missing_token = invoke("token", "revoke", "999")
    assert missing_token.exit_code != 0 and "No token with id 999" in missing_token.output


def test_a_new_callback_secret_replaces_the_old_one(invoke):
    invoke("org", "add", "acme")
    first = invoke("org", "callback-secret", "acme").output.strip()
    second = invoke("org", "callback-secret", "acme").output.strip()
    assert len(first) == len(second) == 64 and first != second
    db.session.expire_all()
    assert db.session.query(Organization).one().callback_secret == second


def test_org_limits_sets_and_shows_the_monthly_limits(invoke):
    invoke("org", "add", "acme")
    shown = invoke("org", "limits", "acme", "--tokens", "5000", "--cost", "2.5")
    assert shown.exit_code == 0, shown.output
    assert "tokens 0 used of 5000, spending 0.00 of 2.5 this month (UTC)" in shown.output
    db.session.expire_all()
    org = db.session.query(Organization).one()
    assert (org.monthly_token_limit, org.monthly_cost_limit) == (5000, 2.5)
    assert invoke("org", "limits", "acme", "--tokens", "").exit_code == 0
    db.session.expire_all()
    assert (org.monthly_token_limit, org.monthly_cost_limit) == (None, 2.5)
    refused = invoke("org", "limits", "acme", "--cost", "-1")
    assert refused.exit_code != 0 and "not a number from 0" in refused.output
