"""a regrade remembers when it was asked for

``grading_job.fresh`` (ask the model afresh) becomes ``fresh_since``, the time a person asked
for the regrade: replies cached before it are not replayed, those received since are, so a
regrade cut short by one failed model call keeps the answers it already got when it is tried
again. A job that was fresh gets its last update's time; downgrading keeps only the flag.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-27 00:30:00

"""

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

grading_job = sa.table(
    "grading_job",
    sa.column("fresh", sa.Boolean),
    sa.column("fresh_since", sa.DateTime(timezone=True)),
    sa.column("updated_at", sa.DateTime(timezone=True)),
)


def upgrade() -> None:
    with op.batch_alter_table("grading_job", schema=None) as batch_op:
        batch_op.add_column(sa.Column("fresh_since", sa.DateTime(timezone=True), nullable=True))
    op.execute(
        grading_job.update()
        .where(grading_job.c.fresh.is_(True))
        .values(fresh_since=grading_job.c.updated_at)
    )
    with op.batch_alter_table("grading_job", schema=None) as batch_op:
        batch_op.drop_column("fresh")


def downgrade() -> None:
    with op.batch_alter_table("grading_job", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("fresh", sa.Boolean(), server_default=sa.false(), nullable=False)
        )
    op.execute(
        grading_job.update().where(grading_job.c.fresh_since.isnot(None)).values(fresh=sa.true())
    )
    with op.batch_alter_table("grading_job", schema=None) as batch_op:
        batch_op.drop_column("fresh_since")
