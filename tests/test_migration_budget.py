"""Revision 0010: the spend ledger names the organization of LMS gradings too, so that an
organization's monthly limit reads one column; API rows keep theirs."""

from __future__ import annotations

from flask_migrate import downgrade, upgrade
from sqlalchemy import text

from tests.test_migrations import filled_0004_upgraded


def test_0010_gives_old_ledger_rows_their_platforms_organization(
    tmp_path, redis_server, key_dir
) -> None:
    with filled_0004_upgraded(tmp_path, redis_server, "0009") as engine:
        with engine.begin() as connection:
            connection.execute(
                text(
                    "INSERT INTO organization (id, external_id, name, is_active, config,"
                    " created_at, updated_at) VALUES (2, 'api', 'Api', true, '{}', :now, :now)"
                ),
                {"now": "2026-11-01 00:00:00"},
            )
            for row, activity, organization in ((1, 1, None), (2, None, 2)):
                connection.execute(
                    text(
                        "INSERT INTO model_usage (id, activity_id, organization_id, model,"
                        " calls, prompt_tokens, completion_tokens, created_at) VALUES (:id,"
                        " :activity, :organization, 'm', 1, 10, 5, :now)"
                    ),
                    {
                        "id": row,
                        "activity": activity,
                        "organization": organization,
                        "now": "2026-11-01 00:00:00",
                    },
                )
        upgrade(revision="0010")
        with engine.connect() as connection:
            owners = connection.execute(
                text("SELECT id, organization_id FROM model_usage ORDER BY id")
            ).all()
            assert [tuple(r) for r in owners] == [(1, 1), (2, 2)]  # platform 1 is org 1's
            limits = connection.execute(
                text("SELECT monthly_cost_limit, monthly_token_limit FROM organization")
            ).all()
            assert {tuple(r) for r in limits} == {(None, None)}
        downgrade(revision="0009")
        with engine.connect() as connection:
            assert connection.execute(text("SELECT count(*) FROM model_usage")).scalar() == 2
