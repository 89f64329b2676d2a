"""an organization's allowlist of model servers

``organization.model_base_urls``: the base URLs of the model servers that may receive the
organization's students' work (app.llm.endpoints); empty (every existing organization) allows
any server the site allows, as before.

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-27 06:00:00

"""

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("organization", schema=None) as batch_op:
        batch_op.add_column(sa.Column("model_base_urls", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("organization", schema=None) as batch_op:
        batch_op.drop_column("model_base_urls")
