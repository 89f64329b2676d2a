"""Organizations (tenants) and the API tokens that reach them.

Every registered LMS platform belongs to one organization, and so do the REST API's
evaluations. An organization's data is never visible to another organization.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, Boolean, DateTime, Float, ForeignKey, Integer, String
from sqlalchemy.orm import Mapped, mapped_column, relationship

from app.extensions import db
from app.models.base import Timestamped


class Organization(Timestamped, db.Model):
    """A tenant: a school or a client of the REST API, named by the client's own id."""

    __tablename__ = "organization"

    id: Mapped[int] = mapped_column(primary_key=True)
    external_id: Mapped[str] = mapped_column(String(255), unique=True)
    name: Mapped[str] = mapped_column(String(200), default="")
    is_active: Mapped[bool] = mapped_column(Boolean, default=True)
    #: Free-form settings the client keeps with the organization (never secrets).
    config: Mapped[dict] = mapped_column(JSON, default=dict)
    #: Base URLs of the model servers that may receive this organization's students' work
    #: (normalized, app.llm.endpoints); empty: any server the site allows.
    model_base_urls: Mapped[list | None] = mapped_column(JSON, default=list)
    #: HMAC key that signs this organization's evaluation callbacks (shown once by the CLI).
    callback_secret: Mapped[str | None] = mapped_column(String(64))
    #: What its gradings (every platform's and the API's) may spend per calendar month (UTC),
    #: in the currency of EVALUAITOR_LLM_PRICES and in model tokens; None: no limit (app.spend).
    monthly_cost_limit: Mapped[float | None] = mapped_column(Float)
    monthly_token_limit: Mapped[int | None] = mapped_column(Integer)

    tokens: Mapped[list[ApiToken]] = relationship(
        back_populates="organization", cascade="all, delete-orphan"
    )


class ApiToken(Timestamped, db.Model):
    """A bearer token for one organization. Only its SHA-256 is stored; it is shown once."""

    __tablename__ = "api_token"

    id: Mapped[int] = mapped_column(primary_key=True)
    organization_id: Mapped[int] = mapped_column(
        ForeignKey("organization.id", ondelete="CASCADE"), index=True
    )
    name: Mapped[str] = mapped_column(String(200), default="")
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    #: The first characters of the token, so an admin can tell tokens apart.
    prefix: Mapped[str] = mapped_column(String(16))
    last_used_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))

    organization: Mapped[Organization] = relationship(back_populates="tokens")
