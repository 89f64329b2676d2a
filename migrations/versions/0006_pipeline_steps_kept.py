"""pipeline settings keep the steps they were set up with

The ``pipeline`` strategy's summary and analysis steps are now off unless configured, as in
the grading pipeline seed (one model call where there were three). Settings are stored without
their defaults, so a pipeline set up before this revision holds no ``summary``/``analysis``
key and would lose both steps in the middle of its course. This revision writes them in as
``true`` wherever a pipeline's settings are stored: activities, a teacher's regrade choice on
a submission, and API evaluations. Downgrading removes keys that are ``true``, which was the
default before this revision, so the settings mean the same again.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-24 23:00:00

"""

from collections.abc import Callable
from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

STEPS = ("summary", "analysis")

activity = sa.table(
    "activity", sa.column("id"), sa.column("plugin_name"), sa.column("plugin_params", sa.JSON)
)
evaluation = sa.table(
    "evaluation", sa.column("id"), sa.column("plugin_name"), sa.column("plugin_params", sa.JSON)
)
submission = sa.table("submission", sa.column("id"), sa.column("grading_override", sa.JSON))


def _kept(params: dict[str, Any]) -> dict[str, Any]:
    return {step: True for step in STEPS} | params


def _unkept(params: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in params.items() if key not in STEPS or value is not True}


def _rewrite(change: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
    bind = op.get_bind()
    for table in (activity, evaluation):
        rows = bind.execute(
            sa.select(table.c.id, table.c.plugin_params).where(table.c.plugin_name == "pipeline")
        )
        for row_id, params in rows.all():
            new = change(params or {})
            if new != (params or {}):
                bind.execute(table.update().where(table.c.id == row_id).values(plugin_params=new))
    rows = bind.execute(
        sa.select(submission.c.id, submission.c.grading_override).where(
            submission.c.grading_override.isnot(None)
        )
    )
    for row_id, override in rows.all():
        if not isinstance(override, dict) or override.get("plugin") != "pipeline":
            continue
        if not isinstance(override.get("params"), dict):
            continue
        new = override | {"params": change(override["params"])}
        if new != override:
            bind.execute(
                submission.update().where(submission.c.id == row_id).values(grading_override=new)
            )


def upgrade() -> None:
    _rewrite(_kept)


def downgrade() -> None:
    _rewrite(_unkept)
