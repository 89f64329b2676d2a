"""guidelines, calibration examples, confidence, appeals, exact prompts and model spend

Adds what grading "ahead of the best AI graders" keeps: an activity's guidelines for the
grader (teachers only), its number of calibration examples, its confidence threshold and its
appeal limits; a grade's use as an example (``auto``/``pinned``/``excluded``); a job's
confidence and the prompts it sent; the students' appeals; and a ledger of model spend per
run. Existing rows get the defaults: no guidelines, three examples, no confidence hold, one
appeal within 14 days.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-25 01:00:00

"""

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("activity", schema=None) as batch_op:
        batch_op.add_column(sa.Column("guidelines", sa.Text(), server_default="", nullable=False))
        batch_op.add_column(
            sa.Column("example_count", sa.Integer(), server_default="3", nullable=False)
        )
        batch_op.add_column(sa.Column("min_confidence", sa.Float(), nullable=True))
        batch_op.add_column(
            sa.Column("appeal_limit", sa.Integer(), server_default="1", nullable=False)
        )
        batch_op.add_column(
            sa.Column("appeal_days", sa.Integer(), server_default="14", nullable=True)
        )
    with op.batch_alter_table("grade", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("example", sa.String(length=10), server_default="auto", nullable=False)
        )
    with op.batch_alter_table("grading_job", schema=None) as batch_op:
        batch_op.add_column(sa.Column("confidence", sa.Float(), nullable=True))
        batch_op.add_column(
            sa.Column("prompts", sa.JSON(), server_default=sa.text("'[]'"), nullable=False)
        )
    op.create_table(
        "appeal",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("activity_id", sa.Integer(), nullable=False),
        sa.Column("submission_id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("answer", sa.Text(), nullable=True),
        sa.Column("score_before", sa.Float(), nullable=True),
        sa.Column("score_after", sa.Float(), nullable=True),
        sa.Column("answered_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("answered_by_id", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["activity_id"], ["activity.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["answered_by_id"], ["lti_user.id"], ondelete="SET NULL"),
        sa.ForeignKeyConstraint(["submission_id"], ["submission.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["user_id"], ["lti_user.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("appeal", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_appeal_activity_id"), ["activity_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_appeal_status"), ["status"], unique=False)
        batch_op.create_index(
            batch_op.f("ix_appeal_submission_id"), ["submission_id"], unique=False
        )
        batch_op.create_index(
            "uq_appeal_one_open",
            ["submission_id"],
            unique=True,
            sqlite_where=sa.text("status = 'open'"),
            postgresql_where=sa.text("status = 'open'"),
        )
    op.create_table(
        "model_usage",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("job_id", sa.Integer(), nullable=True),
        sa.Column("activity_id", sa.Integer(), nullable=True),
        sa.Column("organization_id", sa.Integer(), nullable=True),
        sa.Column("model", sa.String(length=200), nullable=False),
        sa.Column("calls", sa.Integer(), nullable=False),
        sa.Column("prompt_tokens", sa.Integer(), nullable=False),
        sa.Column("completion_tokens", sa.Integer(), nullable=False),
        sa.Column("cost", sa.Float(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["activity_id"], ["activity.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["job_id"], ["grading_job.id"], ondelete="SET NULL"),
        sa.ForeignKeyConstraint(["organization_id"], ["organization.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("model_usage", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_model_usage_activity_id"), ["activity_id"], unique=False
        )
        batch_op.create_index(batch_op.f("ix_model_usage_job_id"), ["job_id"], unique=False)
        batch_op.create_index(
            batch_op.f("ix_model_usage_organization_id"), ["organization_id"], unique=False
        )


def downgrade() -> None:
    op.drop_table("model_usage")
    op.drop_table("appeal")
    with op.batch_alter_table("grading_job", schema=None) as batch_op:
        batch_op.drop_column("prompts")
        batch_op.drop_column("confidence")
    with op.batch_alter_table("grade", schema=None) as batch_op:
        batch_op.drop_column("example")
    with op.batch_alter_table("activity", schema=None) as batch_op:
        batch_op.drop_column("appeal_days")
        batch_op.drop_column("appeal_limit")
        batch_op.drop_column("min_confidence")
        batch_op.drop_column("example_count")
        batch_op.drop_column("guidelines")
