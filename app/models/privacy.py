"""The log of erasures, exports and retention runs (app.privacy)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, DateTime, String
from sqlalchemy.orm import Mapped, mapped_column

from app.extensions import db
from app.models.base import utcnow


class PrivacyEvent(db.Model):
    """One erasure, export or retention run: who, what, when and how much. It outlives the
    rows it counts (an erased activity takes its audit events with it), so it names the scope
    by internal ids only (``student #12 of platform 3``), never by a name or an LMS id."""

    __tablename__ = "privacy_event"

    id: Mapped[int] = mapped_column(primary_key=True)
    #: ``erase``, ``export`` or ``retain``.
    action: Mapped[str] = mapped_column(String(20))
    scope: Mapped[str] = mapped_column(String(200))
    #: ``admin page``, ``api``, ``cli`` or ``sweeper``.
    actor: Mapped[str] = mapped_column(String(200))
    #: What was removed or exported: table → rows, ``files``, ``cache_entries``, ``redis_keys``.
    counts: Mapped[dict] = mapped_column(JSON, default=dict)
    created_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), default=utcnow, index=True
    )
