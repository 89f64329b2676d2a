"""Database models, one module per area; imported here so Alembic sees every table."""

from app.models.evaluations import Evaluation, EvaluationStatus
from app.models.lti import Activity, Course, Deployment, LtiUser, Platform
from app.models.submissions import (
    AuditEvent,
    Grade,
    LineItemUpdate,
    PushStatus,
    ScorePush,
    Submission,
    SubmissionStatus,
)
from app.models.tenants import ApiToken, Organization

__all__ = [
    "Activity",
    "ApiToken",
    "AuditEvent",
    "Course",
    "Deployment",
    "Evaluation",
    "EvaluationStatus",
    "Grade",
    "LineItemUpdate",
    "LtiUser",
    "Organization",
    "Platform",
    "PushStatus",
    "ScorePush",
    "Submission",
    "SubmissionStatus",
]
