"""Database models, one module per area; imported here so Alembic sees every table."""

from app.models.evaluations import Evaluation
from app.models.jobs import Callback, GradingJob, JobStatus, ModelUsage, PushStatus
from app.models.lti import (
    Activity,
    Course,
    Deployment,
    LtiUser,
    Platform,
    RegistrationLink,
)
from app.models.privacy import PrivacyEvent
from app.models.submissions import (
    Appeal,
    AuditEvent,
    Grade,
    LineItemUpdate,
    ScorePush,
    Submission,
)
from app.models.tenants import ApiToken, Organization

__all__ = [
    "Activity",
    "ApiToken",
    "Appeal",
    "AuditEvent",
    "Callback",
    "Course",
    "Deployment",
    "Evaluation",
    "Grade",
    "GradingJob",
    "JobStatus",
    "LineItemUpdate",
    "LtiUser",
    "ModelUsage",
    "Organization",
    "Platform",
    "PrivacyEvent",
    "PushStatus",
    "RegistrationLink",
    "ScorePush",
    "Submission",
]
