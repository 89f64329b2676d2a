"""registration links: Dynamic Registration starts only from a link an admin made

Adds ``registration_link``: the SHA-256 of a one-time token, the LMS origin it is tied to,
when it expires, when it was used and the platform it registered. No existing rows change.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01 01:00:00

"""

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "registration_link",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("lms_origin", sa.String(length=300), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("used_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("platform_id", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["platform_id"], ["platform.id"], ondelete="SET NULL"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("token_hash"),
    )
    with op.batch_alter_table("registration_link", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_registration_link_platform_id"), ["platform_id"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("registration_link", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_registration_link_platform_id"))
    op.drop_table("registration_link")
