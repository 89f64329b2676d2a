"""Database models, one module per area; imported here so Alembic sees every table."""

from app.models.assets import AssetReport, LtiAsset, LtiNotice
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
    "AssetReport",
    "AuditEvent",
    "Callback",
    "Course",
    "Deployment",
    "Evaluation",
    "Grade",
    "GradingJob",
    "JobStatus",
    "LineItemUpdate",
    "LtiAsset",
    "LtiNotice",
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
