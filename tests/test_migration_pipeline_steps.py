"""Revision 0006: pipelines set up while summary and analysis were on by default keep them."""

from __future__ import annotations

import json

from flask_migrate import downgrade, upgrade
from sqlalchemy import text

from tests.test_migrations import filled_0004_upgraded

#: (table, id, column) → the stored settings before 0006, and after it.
CASES = {
    ("activity", 1, "plugin_params"): (
        {"retrieval_top_k": 2},
        {"retrieval_top_k": 2, "summary": True, "analysis": True},
    ),
    ("activity", 2, "plugin_params"): (
        {"summary": False},
        {"summary": False, "analysis": True},
    ),
    ("activity", 3, "plugin_params"): ({"max_chars": 2000}, {"max_chars": 2000}),  # rubric_eval
    ("evaluation", 1, "plugin_params"): ({}, {"summary": True, "analysis": True}),
    ("submission", 2, "grading_override"): (
        {"plugin": "pipeline", "params": {}, "model": "m"},
        {"plugin": "pipeline", "params": {"summary": True, "analysis": True}, "model": "m"},
    ),
    ("submission", 3, "grading_override"): ({"model": "m"}, {"model": "m"}),
}


def _stored(connection, table: str, row: int, column: str) -> dict:
    value = connection.execute(text(f"SELECT {column} FROM {table} WHERE id = {row}")).scalar()
    return json.loads(value) if isinstance(value, str) else value


def test_0006_keeps_the_steps_of_existing_pipelines(tmp_path, redis_server, key_dir) -> None:
    with filled_0004_upgraded(tmp_path, redis_server, "0005") as engine:
        with engine.begin() as connection:
            for number in (2, 3):
                connection.execute(
                    text(
                        "INSERT INTO activity (id, public_id, platform_id, deployment_id,"
                        " resource_link_id, title, instructions, plugin_name, plugin_params,"
                        " ags_scopes, reference_text, release_policy, accepted_kinds,"
                        " created_at, updated_at) VALUES (:id, :public, 1, 1, :link, 'T', '',"
                        " 'rubric_eval', '{}', '[]', '', 'auto', '[]', :now, :now)"
                    ),
                    {
                        "id": number,
                        "public": f"a{number}",
                        "link": f"rl{number}",
                        "now": "2026-11-01 00:00:00",
                    },
                )
            connection.execute(text("UPDATE activity SET plugin_name = 'pipeline' WHERE id < 3"))
            connection.execute(text("UPDATE evaluation SET plugin_name = 'pipeline' WHERE id = 1"))
            for (table, row, column), (before, _) in CASES.items():
                connection.execute(
                    text(f"UPDATE {table} SET {column} = :value WHERE id = {row}"),
                    {"value": json.dumps(before)},
                )

        upgrade(revision="0006")
        with engine.connect() as connection:
            assert {key: _stored(connection, *key) for key in CASES} == {
                key: after for key, (_, after) in CASES.items()
            }

        downgrade(revision="0005")
        with engine.connect() as connection:
            restored = {key: _stored(connection, *key) for key in CASES}
        assert restored[("activity", 1, "plugin_params")] == {"retrieval_top_k": 2}
        assert restored[("activity", 2, "plugin_params")] == {"summary": False}
        assert restored[("evaluation", 1, "plugin_params")] == {}
        assert restored[("submission", 2, "grading_override")]["params"] == {}
