"""LTI Asset Processor: notices, assets and their reports

- ``activity.placement`` (``link`` for every existing activity, ``asset_processor`` for one
  attached to an assignment of the LMS's own), ``lms_activity_id`` (that assignment) and
  ``notice_service_url`` (where its notice handler was registered);
- ``submission.lms_submission_id`` (the notice's submission id: one per attempt, unique in
  an activity) and ``report_url``;
- ``lti_notice`` (each notice, stored before the LMS is answered), ``lti_asset`` (what a
  submission's notice named) and ``asset_report`` (each report, delivered and retried like a
  score push).

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-27 09:00:00

"""

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def _timestamps() -> list[sa.Column]:
    return [
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    ]


def _delivery() -> list[sa.Column]:
    return [
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("job_id", sa.String(length=100), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_attempt_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("http_status", sa.Integer(), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
    ]


def upgrade() -> None:
    with op.batch_alter_table("activity", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("placement", sa.String(length=20), nullable=False, server_default="link")
        )
        batch_op.add_column(sa.Column("lms_activity_id", sa.String(length=255), nullable=True))
        batch_op.add_column(sa.Column("notice_service_url", sa.String(length=1000), nullable=True))
    with op.batch_alter_table("submission", schema=None) as batch_op:
        batch_op.add_column(sa.Column("lms_submission_id", sa.String(length=255), nullable=True))
        batch_op.add_column(sa.Column("report_url", sa.String(length=1000), nullable=True))
        batch_op.create_unique_constraint(
            "uq_submission_lms_id", ["activity_id", "lms_submission_id"]
        )
    op.create_table(
        "lti_notice",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("platform_id", sa.Integer(), nullable=False),
        sa.Column("deployment_id", sa.Integer(), nullable=False),
        sa.Column("notice_id", sa.String(length=255), nullable=False),
        sa.Column("notice_type", sa.String(length=100), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("claims", sa.JSON(), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("processed_at", sa.DateTime(timezone=True), nullable=True),
        *_timestamps(),
        sa.ForeignKeyConstraint(["platform_id"], ["platform.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["deployment_id"], ["deployment.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("platform_id", "notice_id", name="uq_notice_platform_id"),
    )
    op.create_index("ix_lti_notice_status", "lti_notice", ["status"])
    op.create_table(
        "lti_asset",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("submission_id", sa.Integer(), nullable=False),
        sa.Column("asset_id", sa.String(length=255), nullable=False),
        sa.Column("url", sa.String(length=2000), nullable=False),
        sa.Column("sha256", sa.String(length=100), nullable=True),
        sa.Column("size", sa.Integer(), nullable=True),
        sa.Column("content_type", sa.String(length=255), nullable=False),
        sa.Column("title", sa.String(length=500), nullable=False),
        sa.Column("filename", sa.String(length=500), nullable=True),
        *_timestamps(),
        sa.ForeignKeyConstraint(["submission_id"], ["submission.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("submission_id", "asset_id", name="uq_asset_submission"),
    )
    op.create_index("ix_lti_asset_submission_id", "lti_asset", ["submission_id"])
    op.create_table(
        "asset_report",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("asset_id", sa.Integer(), nullable=False),
        sa.Column("progress", sa.String(length=20), nullable=False),
        sa.Column("body", sa.JSON(), nullable=False),
        *_delivery(),
        *_timestamps(),
        sa.ForeignKeyConstraint(["asset_id"], ["lti_asset.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_asset_report_asset_id", "asset_report", ["asset_id"])


def downgrade() -> None:
    op.drop_index("ix_asset_report_asset_id", table_name="asset_report")
    op.drop_table("asset_report")
    op.drop_index("ix_lti_asset_submission_id", table_name="lti_asset")
    op.drop_table("lti_asset")
    op.drop_index("ix_lti_notice_status", table_name="lti_notice")
    op.drop_table("lti_notice")
    with op.batch_alter_table("submission", schema=None) as batch_op:
        batch_op.drop_constraint("uq_submission_lms_id", type_="unique")
        batch_op.drop_column("report_url")
        batch_op.drop_column("lms_submission_id")
    with op.batch_alter_table("activity", schema=None) as batch_op:
        batch_op.drop_column("notice_service_url")
        batch_op.drop_column("lms_activity_id")
        batch_op.drop_column("placement")
