"""a log of erasures, exports and retention runs

``privacy_event`` records each erasure, export and retention run (who, what, when, how many
rows and files): the audit trail that outlives the rows it counts (app.privacy). It names a
scope by internal ids only, never by a person's name or LMS id.

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-27 06:00:00

"""

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "privacy_event",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("action", sa.String(length=20), nullable=False),
        sa.Column("scope", sa.String(length=200), nullable=False),
        sa.Column("actor", sa.String(length=200), nullable=False),
        sa.Column("counts", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_privacy_event_created_at", "privacy_event", ["created_at"])


def downgrade() -> None:
    op.drop_index("ix_privacy_event_created_at", table_name="privacy_event")
    op.drop_table("privacy_event")
