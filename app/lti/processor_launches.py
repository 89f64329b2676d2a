"""The launches into an attached asset processor: its settings (LtiAssetProcessorSettingsRequest)
and a report's review (LtiReportReviewRequest).

Both name the processor's activity in the ``activity`` custom parameter its content item
carried (app.lti.deep_linking). It is taken only when it belongs to the launch's own platform
and deployment, is an asset processor, and is attached to the assignment the launch names
(the activity claim): a public id copied into another site's launch finds nothing.

A report review opens the teacher's review of the submission the report is about; a student
reaches only their own work, on the page students always see (released grades only). Canvas
sends ``for_user`` as the person launching, 1EdTech's text as the submission's owner: for a
student both must be that student; for staff it is not needed (the submission id suffices).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from flask_babel import lazy_gettext as _l
from sqlalchemy import select

from app.errors import Forbidden, LaunchError
from app.extensions import db
from app.lti import claims, deep_linking, session
from app.lti.page_token import LaunchSession
from app.models import Activity, Deployment, LtiUser, Platform, Submission
from app.models.lti import ASSET_PROCESSOR

#: The message types this module opens.
MESSAGE_TYPES = frozenset({claims.ASSET_PROCESSOR_SETTINGS_REQUEST, claims.REPORT_REVIEW_REQUEST})

UNKNOWN_PROCESSOR = _l(
    "This assignment's Evaluaitor processor is not known here (it may have been attached on "
    "another site, or removed). Attach Evaluaitor to the assignment again."
)
TEACHERS_ONLY = _l("Only teachers can change how Evaluaitor grades this assignment.")
NOT_YOURS = _l("This report is about another person's work.")


@dataclass(frozen=True)
class ReportLaunch:
    """Where a report review goes: the new session, and the submission (None when Evaluaitor
    has none with that id yet: its notice may still be on its way or being processed)."""

    session: LaunchSession
    activity: Activity
    submission: Submission | None


def open_settings(
    platform: Platform, deployment: Deployment, body: dict[str, Any], launch_id: str
) -> LaunchSession:
    """A teacher's settings launch: a session on the attached processor's activity."""
    if not claims.is_staff(body.get(claims.ROLES) or []):
        raise Forbidden(TEACHERS_ONLY)
    activity = attached_activity(platform, deployment, body)
    return session.record_visit(platform, body, activity, launch_id=launch_id)


def open_report(
    platform: Platform, deployment: Deployment, body: dict[str, Any], launch_id: str
) -> ReportLaunch:
    """A report review launch: the session, and the submission it is about if known.
    A student's launch about someone else's work is refused."""
    activity = attached_activity(platform, deployment, body)
    staff = claims.is_staff(body.get(claims.ROLES) or [])
    if not staff and str(body[claims.FOR_USER]["user_id"]) != str(body["sub"]):
        raise Forbidden(NOT_YOURS, detail="report review for_user is not the student launching")
    submission = db.session.scalar(
        select(Submission).where(
            Submission.activity_id == activity.id,
            Submission.lms_submission_id == str(body[claims.SUBMISSION]["id"]),
        )
    )
    if submission is not None and not staff:
        owner = db.session.get(LtiUser, submission.user_id)
        if owner is None or (owner.platform_id, owner.sub) != (platform.id, str(body["sub"])):
            raise Forbidden(NOT_YOURS, detail=f"submission {submission.id} is not the student's")
    new_session = session.record_visit(platform, body, activity, launch_id=launch_id)
    return ReportLaunch(new_session, activity, submission)


def attached_activity(platform: Platform, deployment: Deployment, body: dict[str, Any]) -> Activity:
    """The processor a launch names, within its platform, deployment and assignment."""
    activity = named_processor(platform.id, deployment.id, body)
    if activity is None:
        custom = body.get(claims.CUSTOM)
        raise LaunchError(
            UNKNOWN_PROCESSOR,
            detail=f"no processor {custom!r} for assignment {body.get(claims.ACTIVITY)!r} "
            f"in deployment {deployment.id}",
        )
    return activity


def named_processor(platform_id: int, deployment_id: int, body: dict[str, Any]) -> Activity | None:
    """The attached processor a launch or a notice names in its ``activity`` custom parameter,
    only when it is of that platform and deployment and attached to the LMS assignment the
    activity claim names (one not yet known, as after an attach to a draft, takes the first);
    None otherwise."""
    custom = body.get(claims.CUSTOM)
    public_id = custom.get(deep_linking.ACTIVITY_PARAMETER) if isinstance(custom, dict) else None
    if not isinstance(public_id, str) or not public_id:
        return None
    activity = db.session.scalar(
        select(Activity).where(
            Activity.public_id == public_id,
            Activity.platform_id == platform_id,
            Activity.deployment_id == deployment_id,
            Activity.placement == ASSET_PROCESSOR,
        )
    )
    assignment = body.get(claims.ACTIVITY)
    lms_id = assignment.get("id") if isinstance(assignment, dict) else None
    if activity is None or activity.lms_activity_id not in (None, str(lms_id)):
        return None
    return activity
