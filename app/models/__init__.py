"""Database models, one module per area; imported here so Alembic sees every table."""

from app.models.lti import Activity, Course, Deployment, LtiUser, Platform
from app.models.submissions import Grade, PushStatus, ScorePush, Submission, SubmissionStatus

__all__ = [
    "Activity",
    "Course",
    "Deployment",
    "Grade",
    "LtiUser",
    "Platform",
    "PushStatus",
    "ScorePush",
    "Submission",
    "SubmissionStatus",
]
