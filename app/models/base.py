"""Column helpers shared by every model."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import DateTime, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column


def utcnow() -> datetime:
    return datetime.now(UTC)


def as_utc(value: datetime) -> datetime:
    """SQLite hands back naive datetimes; every datetime we store is UTC."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value


class Timestamped:
    """Adds ``created_at``/``updated_at`` (timezone-aware UTC)."""

    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), default=utcnow, onupdate=utcnow
    )


class StoredUpload:
    """A file someone uploaded for grading, its extracted text, and the grading's progress.

    Shared by LTI submissions and REST API evaluations, which are graded the same way.
    """

    progress_step: Mapped[int] = mapped_column(Integer, default=0)
    progress_total: Mapped[int] = mapped_column(Integer, default=0)
    progress_message: Mapped[str] = mapped_column(String(300), default="")

    original_filename: Mapped[str] = mapped_column(String(255))
    kind: Mapped[str] = mapped_column(String(20))
    size_bytes: Mapped[int] = mapped_column(Integer)
    sha256: Mapped[str] = mapped_column(String(64))
    #: Relative to the data directory, under a folder of the tenant's.
    storage_path: Mapped[str] = mapped_column(String(1000))
    extracted_text: Mapped[str | None] = mapped_column(Text)

    def set_progress(self, step: int, total: int, message: str) -> None:
        self.progress_step, self.progress_total = step, total
        self.progress_message = message[:300]
