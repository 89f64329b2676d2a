"""What a launch leaves behind: rows for the course, user and activity, and a session token
(:mod:`app.lti.page_token`) that pages carry; :func:`load` turns the token back into access.

The full launch data stays in Redis under ``launch_id`` (pylti1p3's own storage).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flask_babel import lazy_gettext as _l
from sqlalchemy import Select, bindparam, select
from sqlalchemy.exc import IntegrityError

from app.errors import LaunchError, SessionExpired, SwitchedOff
from app.extensions import db
from app.lms.activities import MAX_TITLE_CHARS, copy_settings
from app.lti import claims, deep_linking
from app.lti.page_token import LaunchSession, decode
from app.lti.page_token import issue_token as issue_token  # the launch view issues it
from app.models import Activity, Course, Deployment, LtiUser, Organization, Platform
from app.models.lti import ASSET_PROCESSOR


def load(token: str) -> LaunchSession:
    """The session a page token stands for, if it still grants access.

    Every route under ``/l/<token>/`` turns its token into access here (or in
    :func:`load_with_activity`), and only here. Expired or forged tokens raise SessionExpired; a
    token whose platform, deployment or organization an admin has switched off raises
    SwitchedOff, at once: the signature alone would keep it working until it expires.
    """
    session = decode(token)
    _check_switched_on(session, _SWITCHES)
    return session


def load_with_activity(token: str) -> tuple[LaunchSession, Activity]:
    """:func:`load`, and the session's activity from the same query: pages need both."""
    session = decode(token)
    (activity,) = _check_switched_on(session, _ACTIVITY_AND_SWITCHES)
    return session, activity


def _switches(*loaded: Any) -> Select:
    """``loaded`` and the switches above a page token's activity, by primary keys. Built once
    per statement, as building one costs more than running it."""
    return (
        select(*loaded, Platform.is_active, Deployment.is_active, Organization.is_active)
        .select_from(Activity)
        .join(Platform, Platform.id == Activity.platform_id)
        .join(Deployment, Deployment.id == Activity.deployment_id)
        .outerjoin(Organization, Organization.id == Platform.organization_id)
        .where(Activity.id == bindparam("activity"), Activity.platform_id == bindparam("platform"))
    )


_SWITCHES = _switches()
_ACTIVITY_AND_SWITCHES = _switches(Activity)


def _check_switched_on(session: LaunchSession, statement: Select) -> tuple[Any, ...]:
    """One query per request: the activity's platform, deployment and organization (a
    platform without one counts as on) must all be on. Returns the rest of the row."""
    row = db.session.execute(
        statement, {"activity": session.activity_id, "platform": session.platform_id}
    ).first()
    if row is None:  # the activity (or its platform) was deleted
        raise SessionExpired(detail=f"no activity {session.activity_id}")
    *loaded, platform_on, deployment_on, organization_on = row
    if not (platform_on and deployment_on and organization_on is not False):
        raise SwitchedOff(detail=f"platform {session.platform_id} or its deployment is off")
    return tuple(loaded)


def record_launch(
    platform: Platform,
    deployment: Deployment,
    body: dict[str, Any],
    *,
    launch_id: str,
    default_max_score: float,
) -> LaunchSession:
    """Create or update the rows a resource-link launch describes; return its new session."""
    _check_organization(platform)
    return _retrying(_record, platform, deployment, body, launch_id, default_max_score)


def record_deep_link(
    platform: Platform, deployment: Deployment, body: dict[str, Any], *, launch_id: str
) -> LaunchSession:
    """A deep-linking launch: a new draft activity (no resource link until its first launch;
    an asset processor never has one) for the teacher to set up; return its session."""
    _check_organization(platform)
    return _retrying(_record_draft, platform, deployment, body, launch_id)


def record_visit(
    platform: Platform, body: dict[str, Any], activity: Activity, *, launch_id: str
) -> LaunchSession:
    """A launch into an existing activity that creates none (an asset processor's settings
    or report review): the course and user it names, and its session."""
    _check_organization(platform)
    return _retrying(_record_visit, platform, body, activity, launch_id)


def _record_visit(
    platform: Platform, body: dict[str, Any], activity: Activity, launch_id: str
) -> LaunchSession:
    user = _record_people(platform, body)[1]
    db.session.commit()
    return _session(body, launch_id, platform, activity, user)


def _check_organization(platform: Platform) -> None:
    """Launches of a switched-off platform or deployment never get this far (see
    app.lti.tool_config); one into a switched-off organization is refused here, before it
    records anything."""
    if platform.organization is not None and not platform.organization.is_active:
        raise SwitchedOff(detail=f"organization of platform {platform.id} is off")


def _retrying(record: Callable[..., LaunchSession], *args: Any) -> LaunchSession:
    """Run ``record`` once more after a unique-constraint clash.

    Two first launches of the same course can race to insert the same rows; the loser of
    that race rolls back and runs once more, finding the rows the winner committed.
    """
    try:
        return record(*args)
    except IntegrityError:
        db.session.rollback()
        return record(*args)


def _record(
    platform: Platform,
    deployment: Deployment,
    body: dict[str, Any],
    launch_id: str,
    default_max_score: float,
) -> LaunchSession:
    link = body.get(claims.RESOURCE_LINK) or {}
    if not link.get("id"):
        raise LaunchError(detail="launch without resource_link.id")
    course, user = _record_people(platform, body)
    activity = _activity_for_link(platform, deployment, str(link["id"]), body)
    _assign(activity, platform_id=platform.id, course_id=course.id if course else None)
    # Evaluaitor owns the title (docs/decisions.md): a launch only names an untitled one.
    activity.title = activity.title or str(link.get("title") or "")
    if not activity.instructions:
        activity.instructions = _default_instructions(link)
    _store_ags_endpoint(activity, body.get(claims.AGS_ENDPOINT) or {})
    if activity.max_score is None and not activity.has_ags:
        activity.max_score = default_max_score
    db.session.commit()
    return _session(body, launch_id, platform, activity, user)


def _record_draft(
    platform: Platform, deployment: Deployment, body: dict[str, Any], launch_id: str
) -> LaunchSession:
    course, user = _record_people(platform, body)
    activity = Activity(
        platform_id=platform.id,
        deployment_id=deployment.id,
        course_id=course.id if course else None,
        resource_link_id=None,
    )
    if deep_linking.wants_processor(body):
        target = deep_linking.processor_target(body)
        activity.placement = ASSET_PROCESSOR
        activity.lms_activity_id = target.lms_activity_id
        activity.notice_service_url = target.notice_service_url
    db.session.add(activity)
    db.session.commit()
    return _session(body, launch_id, platform, activity, user)


def _record_people(platform: Platform, body: dict[str, Any]) -> tuple[Course | None, LtiUser]:
    """The course (with its roster service URL) and the user a launch names."""
    course = _upsert_course(platform, body.get(claims.CONTEXT) or {})
    if course is not None:  # the roster service, for the teacher page (see app.lti.nrps)
        nrps = body.get(claims.NRPS)
        url = nrps.get("context_memberships_url") if isinstance(nrps, dict) else None
        if isinstance(url, str) and url:
            _assign(course, memberships_url=url)
    user = _upsert(
        LtiUser,
        platform,
        str(body["sub"]),
        name=str(body.get("name") or ""),
        email=str(body.get("email") or ""),
    )
    return course, user


def _activity_for_link(
    platform: Platform, deployment: Deployment, link_id: str, body: dict[str, Any]
) -> Activity:
    """The activity of a resource link: known already, a deep-linked one the link names in
    its ``activity`` custom parameter, or a new one.

    A deep-linked activity is bound to the first link that launches it; another link naming
    it (the course was copied or imported), or one naming an attached asset processor, gets a
    new activity with a copy of its settings.
    Only activities of the launching platform are considered, so one tenant can never reach
    another's activity by naming its public id.
    """
    known = db.session.scalar(_ACTIVITY_OF_LINK, {"deployment": deployment.id, "link": link_id})
    if known is not None:
        return known
    custom = body.get(deep_linking.CUSTOM)
    public_id = custom.get(deep_linking.ACTIVITY_PARAMETER) if isinstance(custom, dict) else None
    if not public_id:
        activity = Activity(deployment_id=deployment.id, resource_link_id=link_id)
        db.session.add(activity)
        return activity
    named = db.session.scalar(
        select(Activity).where(
            Activity.public_id == str(public_id), Activity.platform_id == platform.id
        )
    )
    if named is None:
        raise LaunchError(
            _l(
                "This link names an Evaluaitor activity that does not exist on this platform "
                "(it may come from another site). Ask your teacher to add the activity again."
            ),
            detail=f"unknown activity custom parameter on platform {platform.id}",
        )
    # An attached processor is never a course link: a link naming it (its custom parameter
    # copied by hand) gets a copy, so the link's people never reach the processor's work.
    if named.resource_link_id is None and not named.is_asset_processor:
        named.deployment_id = deployment.id
        named.resource_link_id = link_id
        return named
    copy = Activity(deployment_id=deployment.id, resource_link_id=link_id)
    copy_settings(named, copy)
    # The copy is a new activity of the platform, named there ("Essay (copy)" in Moodle): its
    # page shows that name, not the original's, which may have been renamed here since.
    link_title = str((body.get(claims.RESOURCE_LINK) or {}).get("title") or "").strip()
    copy.title = link_title[:MAX_TITLE_CHARS] or copy.title
    if (body.get(claims.AGS_ENDPOINT) or {}).get("lineitem"):
        # The copy has its own gradebook column (Moodle gives it the activity's grade setting,
        # not the original's column maximum): its maximum is read from it before grading.
        copy.max_score = None
    db.session.add(copy)
    return copy


def _session(
    body: dict[str, Any], launch_id: str, platform: Platform, activity: Activity, user: LtiUser
) -> LaunchSession:
    presentation = body.get(claims.LAUNCH_PRESENTATION) or {}
    return LaunchSession(
        launch_id=launch_id,
        platform_id=platform.id,
        activity_id=activity.id,
        user_id=user.id,
        is_staff=claims.is_staff(body.get(claims.ROLES) or []),
        return_url=presentation.get("return_url"),
        locale=presentation.get("locale") or None,
    )


def _default_instructions(link: dict[str, Any]) -> str:
    """A plain resource link has no configuration: its title and description are the task."""
    parts = [str(link.get("title") or "").strip(), str(link.get("description") or "").strip()]
    return "\n\n".join(p for p in parts if p)


def _store_ags_endpoint(activity: Activity, endpoint: dict[str, Any]) -> None:
    """Keep the AGS URLs so background jobs can push scores without a live launch."""
    if not endpoint:
        return
    _assign(
        activity,
        lineitem_url=endpoint.get("lineitem") or activity.lineitem_url,
        lineitems_url=endpoint.get("lineitems") or activity.lineitems_url,
        ags_scopes=list(endpoint.get("scope") or []),
    )


def _upsert_course(platform: Platform, context: dict[str, Any]) -> Course | None:
    if not context.get("id"):
        return None
    return _upsert(
        Course,
        platform,
        str(context["id"]),
        title=str(context.get("title") or ""),
        label=str(context.get("label") or ""),
    )


#: The rows a launch looks up by natural key (with the platform), and their statements, built
#: once: building a statement costs more than running it.
_NATURAL_KEY = {Course: Course.context_id, LtiUser: LtiUser.sub}
_BY_NATURAL_KEY = {
    model: select(model).where(model.platform_id == bindparam("platform"), key == bindparam("key"))
    for model, key in _NATURAL_KEY.items()
}
_ACTIVITY_OF_LINK = select(Activity).where(
    Activity.deployment_id == bindparam("deployment"),
    Activity.resource_link_id == bindparam("link"),
)


def _upsert(model: type[Course] | type[LtiUser], platform: Platform, key: str, **values: Any):
    """Fetch by natural key and update, or insert; a new row is flushed so its id is known.
    Most launches change nothing: then nothing is written."""
    row = db.session.scalar(_BY_NATURAL_KEY[model], {"platform": platform.id, "key": key})
    if row is None:
        row = model(platform_id=platform.id, **{_NATURAL_KEY[model].key: key}, **values)
        db.session.add(row)
        db.session.flush()
        return row
    _assign(row, **values)
    return row


def _assign(row: Any, **values: Any) -> None:
    """Set only the values that differ, so an unchanged row stays clean and is not flushed."""
    for name, value in values.items():
        if getattr(row, name) != value:
            setattr(row, name, value)
