"""LTI concepts, one model each: platform (the tenant), deployment, course, user, activity.

A platform is identified by issuer *and* client_id: Canvas uses one issuer for every
school, so several registrations may share an issuer. Everything below a platform is
scoped to it through a foreign key, which is how tenants stay apart.
"""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import (
    JSON,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column, relationship

from app.extensions import db
from app.models.base import Timestamped
from app.models.tenants import Organization

#: :attr:`Activity.placement` values.
LINK = "link"
ASSET_PROCESSOR = "asset_processor"


def _new_public_id() -> str:
    return uuid.uuid4().hex


class Platform(Timestamped, db.Model):
    """An LMS registration: one issuer + client_id pair and its endpoints."""

    __tablename__ = "platform"
    __table_args__ = (UniqueConstraint("issuer", "client_id", name="uq_platform_issuer_client"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    issuer: Mapped[str] = mapped_column(String(500))
    client_id: Mapped[str] = mapped_column(String(255))
    auth_login_url: Mapped[str] = mapped_column(String(1000))
    auth_token_url: Mapped[str] = mapped_column(String(1000))
    key_set_url: Mapped[str] = mapped_column(String(1000))
    #: Some platforms (e.g. Blackboard) want a token ``aud`` other than the token URL.
    auth_audience: Mapped[str | None] = mapped_column(String(1000))
    is_active: Mapped[bool] = mapped_column(Boolean, default=True)
    #: The tenant this registration belongs to (see app.tenants).
    organization_id: Mapped[int | None] = mapped_column(
        ForeignKey("organization.id", ondelete="CASCADE"), index=True
    )

    organization: Mapped[Organization | None] = relationship()

    deployments: Mapped[list[Deployment]] = relationship(
        back_populates="platform", cascade="all, delete-orphan"
    )


class Deployment(Timestamped, db.Model):
    __tablename__ = "deployment"
    __table_args__ = (
        UniqueConstraint("platform_id", "deployment_id", name="uq_deployment_platform_deployment"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    platform_id: Mapped[int] = mapped_column(ForeignKey("platform.id", ondelete="CASCADE"))
    deployment_id: Mapped[str] = mapped_column(String(255))
    is_active: Mapped[bool] = mapped_column(Boolean, default=True)

    platform: Mapped[Platform] = relationship(back_populates="deployments")


class Course(Timestamped, db.Model):
    """An LTI context (course section) seen in a launch."""

    __tablename__ = "course"
    __table_args__ = (
        UniqueConstraint("platform_id", "context_id", name="uq_course_platform_context"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    platform_id: Mapped[int] = mapped_column(ForeignKey("platform.id", ondelete="CASCADE"))
    context_id: Mapped[str] = mapped_column(String(255))
    title: Mapped[str] = mapped_column(String(500), default="")
    label: Mapped[str] = mapped_column(String(255), default="")
    #: The Names and Role Provisioning Service URL of the last launch that offered it.
    memberships_url: Mapped[str | None] = mapped_column(String(1000))


class LtiUser(Timestamped, db.Model):
    """A person as the platform names them (``sub``). Names stay here; they never reach an LLM."""

    __tablename__ = "lti_user"
    __table_args__ = (UniqueConstraint("platform_id", "sub", name="uq_lti_user_platform_sub"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    platform_id: Mapped[int] = mapped_column(ForeignKey("platform.id", ondelete="CASCADE"))
    sub: Mapped[str] = mapped_column(String(255))
    name: Mapped[str] = mapped_column(String(500), default="")
    email: Mapped[str] = mapped_column(String(500), default="")


class Activity(Timestamped, db.Model):
    """A resource link: what the student submits to, how it is graded, where the grade goes.

    The AGS endpoints of the launch are stored here so that background jobs can push
    scores without a live launch.
    """

    __tablename__ = "activity"
    __table_args__ = (
        UniqueConstraint("deployment_id", "resource_link_id", name="uq_activity_deployment_link"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    platform_id: Mapped[int] = mapped_column(ForeignKey("platform.id", ondelete="CASCADE"))
    deployment_id: Mapped[int] = mapped_column(ForeignKey("deployment.id", ondelete="CASCADE"))
    course_id: Mapped[int | None] = mapped_column(ForeignKey("course.id", ondelete="SET NULL"))
    #: None for an activity made by deep linking until its link is first launched.
    resource_link_id: Mapped[str | None] = mapped_column(String(255))
    #: Sent as the ``activity`` custom parameter of a deep-linked resource link.
    public_id: Mapped[str] = mapped_column(String(32), unique=True, default=_new_public_id)
    title: Mapped[str] = mapped_column(String(500), default="")
    instructions: Mapped[str] = mapped_column(Text, default="")
    #: The teacher's guidelines for the grader: sent to the model with the instructions,
    #: never shown to students (what to look for, what to forgive, how to use the scale).
    guidelines: Mapped[str] = mapped_column(Text, default="", server_default="")
    plugin_name: Mapped[str] = mapped_column(String(100), default="rubric_eval")
    plugin_params: Mapped[dict] = mapped_column(JSON, default=dict)
    #: ``{"title": ..., "criteria": [{"name", "requirement", "weight"}, ...]}``, or None.
    rubric: Mapped[dict | None] = mapped_column(JSON)
    #: The teacher's reference material as text (for strategies that retrieve from it).
    reference_text: Mapped[str] = mapped_column(Text, default="", server_default="")
    model: Mapped[str | None] = mapped_column(String(200))
    #: None until known: taken from the AGS line item when there is one, else the default.
    max_score: Mapped[float | None] = mapped_column(Float)
    #: ``auto`` releases grades at once; ``hold_flagged`` holds grades that carry a flag;
    #: ``hold_all`` holds every grade for a teacher.
    release_policy: Mapped[str] = mapped_column(String(20), default="auto", server_default="auto")
    #: How many of the teacher's own graded submissions of this activity go into each new
    #: grading prompt as calibration examples (app.grading.examples); 0 sends none.
    example_count: Mapped[int] = mapped_column(Integer, default=3, server_default="3")
    #: Grades whose confidence (0..1, app.grading.confidence) is below this wait for a teacher,
    #: as flagged ones do under ``hold_flagged``; None holds none for being uncertain.
    min_confidence: Mapped[float | None] = mapped_column(Float)
    #: Regrade requests a student may make per attempt (0: none), and for how many days after
    #: the release (None: no deadline). See app.lms.appeals.
    appeal_limit: Mapped[int] = mapped_column(Integer, default=1, server_default="1")
    appeal_days: Mapped[int | None] = mapped_column(Integer, default=14, server_default="14")
    #: Accepted file kinds (see app.extract.Kind); empty means every supported kind.
    accepted_kinds: Mapped[list] = mapped_column(JSON, default=list)
    #: Per-activity upload limit; None means the site's EVALUAITOR_MAX_UPLOAD_MB.
    max_upload_mb: Mapped[float | None] = mapped_column(Float)
    #: None means unlimited attempts; a teacher's reopen grants one more.
    max_attempts: Mapped[int | None] = mapped_column(Integer)
    #: What this activity's gradings may spend per calendar month (UTC), in money and in
    #: tokens; None: no limit of its own (its organization's still applies; app.spend).
    monthly_cost_limit: Mapped[float | None] = mapped_column(Float)
    monthly_token_limit: Mapped[int | None] = mapped_column(Integer)
    lineitem_url: Mapped[str | None] = mapped_column(String(1000))
    lineitems_url: Mapped[str | None] = mapped_column(String(1000))
    ags_scopes: Mapped[list] = mapped_column(JSON, default=list)
    #: ``link`` for an activity of its own (a resource link, placed by deep linking or
    #: launched); ``asset_processor`` for one attached to an assignment of the LMS's own
    #: (LTI Asset Processor): students submit in the LMS, which sends the tool a notice.
    placement: Mapped[str] = mapped_column(String(20), default=LINK, server_default=LINK)
    #: The LMS's assignment an asset processor is attached to (the ``activity`` claim's id);
    #: notices for another assignment are refused.
    lms_activity_id: Mapped[str | None] = mapped_column(String(255))
    #: The Platform Notification Service URL the processor's notice handler was registered
    #: with (from the attaching launch).
    notice_service_url: Mapped[str | None] = mapped_column(String(1000))

    platform: Mapped[Platform] = relationship()
    course: Mapped[Course | None] = relationship()

    @property
    def has_ags(self) -> bool:
        return bool(self.lineitem_url or self.lineitems_url)

    @property
    def is_asset_processor(self) -> bool:
        return self.placement == ASSET_PROCESSOR


class RegistrationLink(Timestamped, db.Model):
    """An admin's permission for one LTI Dynamic Registration from one LMS address.

    ``/lti/register`` makes the tool fetch the URL it is given, so it starts only from a link
    an admin made (:mod:`app.lti.registration_links`): the token is kept as its SHA-256, the
    LMS's origin (``https://moodle.school.edu``) must be the origin of the configuration URL
    the LMS sends, and the link is used up by the registration it starts.
    """

    __tablename__ = "registration_link"

    id: Mapped[int] = mapped_column(primary_key=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    lms_origin: Mapped[str] = mapped_column(String(300))
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    #: Set while a registration runs and when it succeeded; a failed one clears it again.
    used_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    platform_id: Mapped[int | None] = mapped_column(
        ForeignKey("platform.id", ondelete="SET NULL"), index=True
    )

    platform: Mapped[Platform | None] = relationship()
