"""LTI Asset Processor: the notices an LMS sends about submissions to its own assignments,
the assets (files, text entries) they name, and the reports sent back for each asset.

A notice is stored before the LMS is answered (app.lti.notices): Canvas never sends one
again, so once answered it must survive a crash, a Redis restart or a worker's death; the
sweeper hands on any notice still ``received``. A notice's claims are kept only until it is
processed (they name the student); the assets and the submission keep what is needed after.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, DateTime, ForeignKey, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column, relationship

from app.extensions import db
from app.models.base import Timestamped
from app.models.jobs import Delivery
from app.models.lti import Deployment, Platform
from app.models.submissions import Submission

#: :attr:`LtiNotice.status` values.
RECEIVED = "received"  # stored and answered; not yet turned into a submission
PROCESSED = "processed"  # its submission exists (or it needed none)
FAILED = "failed"  # could not be processed; its reports say why


class LtiNotice(Timestamped, db.Model):
    """One Platform Notification Service notice, as verified (app.lti.notices)."""

    __tablename__ = "lti_notice"
    __table_args__ = (UniqueConstraint("platform_id", "notice_id", name="uq_notice_platform_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    platform_id: Mapped[int] = mapped_column(ForeignKey("platform.id", ondelete="CASCADE"))
    deployment_id: Mapped[int] = mapped_column(ForeignKey("deployment.id", ondelete="CASCADE"))
    #: The notice claim's ``id`` and ``type``.
    notice_id: Mapped[str] = mapped_column(String(255))
    notice_type: Mapped[str] = mapped_column(String(100))
    status: Mapped[str] = mapped_column(String(20), default=RECEIVED, index=True)
    #: The verified claims, until processed (then emptied: they name the student).
    claims: Mapped[dict] = mapped_column(JSON, default=dict)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    last_error: Mapped[str | None] = mapped_column(Text)
    processed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))

    platform: Mapped[Platform] = relationship()
    deployment: Mapped[Deployment] = relationship()


class LtiAsset(Timestamped, db.Model):
    """One asset of a submission made in the LMS: where the Asset Service serves it and what
    the notice promised about it (checked on download)."""

    __tablename__ = "lti_asset"
    __table_args__ = (UniqueConstraint("submission_id", "asset_id", name="uq_asset_submission"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    submission_id: Mapped[int] = mapped_column(
        ForeignKey("submission.id", ondelete="CASCADE"), index=True
    )
    asset_id: Mapped[str] = mapped_column(String(255))
    url: Mapped[str] = mapped_column(String(2000))
    #: As the notice gave it: base64 of the SHA-256 digest (Canvas), or None.
    sha256: Mapped[str | None] = mapped_column(String(100))
    size: Mapped[int | None] = mapped_column(Integer)
    content_type: Mapped[str] = mapped_column(String(255), default="")
    title: Mapped[str] = mapped_column(String(500), default="")
    filename: Mapped[str | None] = mapped_column(String(500))

    submission: Mapped[Submission] = relationship()


class AssetReport(Delivery, db.Model):
    """One report for one asset, and what became of it (app.lti.asset_reports)."""

    __tablename__ = "asset_report"

    id: Mapped[int] = mapped_column(primary_key=True)
    asset_id: Mapped[int] = mapped_column(
        ForeignKey("lti_asset.id", ondelete="CASCADE"), index=True
    )
    #: ``processingProgress``: Processing, Processed, PendingManual or Failed.
    progress: Mapped[str] = mapped_column(String(20))
    #: The report's body as last sent (its ``timestamp`` strictly later than the last one's).
    body: Mapped[dict] = mapped_column(JSON, default=dict)

    asset: Mapped[LtiAsset] = relationship()
