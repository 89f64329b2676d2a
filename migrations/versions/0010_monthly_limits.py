"""monthly spend limits per organization and per activity, and gradings that wait for budget

An organization and an activity may each limit what their gradings spend per calendar month
(UTC), in money and in tokens. A grading job keeps what it waits for (``waiting_for``:
``budget``) and, while it runs under a limit, the estimate it reserved. The spend ledger gets
the organization of LMS gradings too (it had it for API evaluations only): a limit reads one
column, and the old rows are filled in from the activity's platform.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-27 06:00:00

"""

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

model_usage = sa.table(
    "model_usage",
    sa.column("activity_id", sa.Integer),
    sa.column("organization_id", sa.Integer),
)
activity = sa.table("activity", sa.column("id", sa.Integer), sa.column("platform_id", sa.Integer))
platform = sa.table(
    "platform", sa.column("id", sa.Integer), sa.column("organization_id", sa.Integer)
)


def upgrade() -> None:
    for table in ("organization", "activity"):
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.add_column(sa.Column("monthly_cost_limit", sa.Float(), nullable=True))
            batch_op.add_column(sa.Column("monthly_token_limit", sa.Integer(), nullable=True))
    with op.batch_alter_table("grading_job", schema=None) as batch_op:
        batch_op.add_column(sa.Column("waiting_for", sa.String(length=20), nullable=True))
        batch_op.add_column(sa.Column("reserved_cost", sa.Float(), nullable=True))
        batch_op.add_column(sa.Column("reserved_tokens", sa.Integer(), nullable=True))
    organization_of_activity = (
        sa.select(platform.c.organization_id)
        .select_from(activity.join(platform, platform.c.id == activity.c.platform_id))
        .where(activity.c.id == model_usage.c.activity_id)
        .scalar_subquery()
    )
    op.execute(
        model_usage.update()
        .where(model_usage.c.organization_id.is_(None), model_usage.c.activity_id.isnot(None))
        .values(organization_id=organization_of_activity)
    )


def downgrade() -> None:
    # The ledger keeps the organizations it was given: they are true either way.
    with op.batch_alter_table("grading_job", schema=None) as batch_op:
        batch_op.drop_column("reserved_tokens")
        batch_op.drop_column("reserved_cost")
        batch_op.drop_column("waiting_for")
    for table in ("activity", "organization"):
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.drop_column("monthly_token_limit")
            batch_op.drop_column("monthly_cost_limit")
