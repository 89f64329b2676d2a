"""Data protection: erasure, access (export) and retention, in one place.

Where personal data lives (the map every function here follows):

==========================  ===============================================================
``lti_user``                the student's LMS id (``sub``), name and e-mail
``submission``              the student's comment; one row per attempt
``grading_job``             the file's name, the extracted text, the prompts sent (with
                            calibration examples: *other* students' work), the model's raw
                            replies, feedback, criteria, flags, provenance, errors
``grade``                   the teacher's override (score, feedback, criteria)
``appeal``                  the student's reason, the teacher's answer
``score_push``              the score sent to the LMS for the student
``lti_notice``              an LMS's notice of a submission made there (LTI Asset
                            Processor): its claims name the student (``for_user``) until
                            it is processed, then they are emptied
``lti_asset``/``asset_report`` a submission made in the LMS: its assets' titles and file
                            names, and the reports sent back (feedback as ``comment``)
``audit_event``             the teacher's actions on a submission, with before/after values
``model_usage``             spend per run: no text, but tied to the job and the activity
``evaluation``/``callback`` an API client's file, instructions, reference, metadata
``course``/``activity``     titles, instructions (the teacher's), AGS endpoints
``lineitem_update``         a gradebook column's updates
``organization``/tokens     the tenant (API clients' own ids)
data dir                    ``p<platform>/a<activity>/u<user>/<attempt>-<hash>.<ext>``;
                            API uploads ``o<organization>/<code>.<ext>`` (app.tenants)
LLM reply cache             ``EVALUAITOR_LLM_CACHE_DIR``: the same folders
                            (``p<platform>/a<activity>/u<user>``, ``o<organization>``;
                            app.llm.cache); entries of the older layout sit directly in
                            ``p<platform>/<2 hex digits>/``
Redis                       ``evaluaitor:lti:*``: pylti1p3's launch data (the whole id_token:
                            name, e-mail, ``sub``, course) for EVALUAITOR_LAUNCH_TTL;
                            ``evaluaitor:lti-login:*``: a login's parameters (the
                            ``login_hint``, often the LMS user id) for ten minutes; RQ
                            jobs carry row ids only; rate limits and sessions hold none
==========================  ===============================================================

A :class:`Scope` (one student, course, activity or API organization) is resolved to a
:class:`Selection` (:func:`select`): the rows, files, folders and launch records that belong to
it. :func:`erase` deletes a selection in one transaction, then its files, cached replies and
launch records; :func:`export` writes the same selection as a zip; :func:`retention` builds
selections from the retention windows and erases them with the same code.

What stays, on purpose: spend rows (``model_usage``), detached from the job and the activity
so budgets and statistics still add up; audit events on the student's submissions, as
tombstones (``details`` ``{"erased": true}``, no submission, no actor); a
:class:`~app.models.PrivacyEvent` per erasure, export and retention run, naming the scope by
internal ids only. Work still in progress (queued, being graded, a delivery pending) is never
erased: an erasure that meets some refuses (:class:`InProgress`), retention skips it.
"""

from __future__ import annotations

import io
import json
import logging
import re
import shutil
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

from flask import current_app
from sqlalchemy import Text, cast, delete, func, or_, select, update

from app import tenants
from app.extensions import db, redis_connection
from app.llm.cache import CacheLimits, prune, scope_path
from app.models import (
    Activity,
    ApiToken,
    Appeal,
    AuditEvent,
    Callback,
    Course,
    Deployment,
    Evaluation,
    Grade,
    GradingJob,
    LineItemUpdate,
    LtiUser,
    ModelUsage,
    Organization,
    Platform,
    PrivacyEvent,
    PushStatus,
    ScorePush,
    Submission,
)
from app.models.assets import RECEIVED, AssetReport, LtiAsset, LtiNotice
from app.models.jobs import OPEN

log = logging.getLogger(__name__)

Kind = Literal["student", "course", "activity", "organization"]
KINDS: tuple[Kind, ...] = ("student", "course", "activity", "organization")
#: Where launch data (pylti1p3's) and login records are kept in Redis (app.lti.launch).
LAUNCH_PREFIX = "evaluaitor:lti"
#: Where app.lti.nrps caches a course's roster (names and e-mails, for minutes):
#: ``<prefix><platform id>:<course id>``. An erasure in a platform drops its rosters.
ROSTER_PREFIX = "evaluaitor:roster:"
#: Columns never exported: secrets, not data about anyone.
SECRET_COLUMNS = {("organization", "callback_secret"), ("api_token", "token_hash")}
_LTI = "https://purl.imsglobal.org/spec/lti/claim/"
_LEGACY_CACHE_FOLDER = re.compile(r"[0-9a-f]{2}")
_RETENTION_GATE = "evaluaitor:privacy:retention"


class NotFound(LookupError):
    """No such student, course, activity or organization."""


class InProgress(RuntimeError):
    """The scope has work still in progress; erase it once that is done."""

    def __init__(self, count: int) -> None:
        super().__init__(f"{count} item(s) still in progress (queued, grading or sending)")
        self.count = count


@dataclass(frozen=True)
class Scope:
    """What to erase or export. ``key`` is the LMS user id (``sub``) of a student, the LMS
    context id of a course (both within ``platform_id``), an activity's id, an
    organization's external id."""

    kind: Kind
    key: str
    platform_id: int | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"not a scope: {self.kind!r}")
        # No id holds a NUL (PostgreSQL refuses one in a query) or is this long; a row id is
        # a 32-bit integer: anything else names nothing, whichever interface it came from.
        if "\x00" in self.key or not 0 < len(self.key) <= 255:
            raise ValueError("not an id")
        if self.platform_id is not None and not 0 < self.platform_id < 2**31:
            raise ValueError("not a platform id")
        if self.kind in ("student", "course") and self.platform_id is None:
            raise ValueError(f"a {self.kind} is named within a platform")


@dataclass
class Selection:
    """Everything that belongs to a scope (or to a retention window)."""

    label: str
    submission_ids: set[int] = field(default_factory=set)
    evaluation_ids: set[int] = field(default_factory=set)
    #: Rows deleted whole, with what the database cascades to.
    user_ids: set[int] = field(default_factory=set)
    activity_ids: set[int] = field(default_factory=set)
    course_ids: set[int] = field(default_factory=set)
    organization_ids: set[int] = field(default_factory=set)
    #: Folders removed whole, in the data and in the cache directory (``p3/a5``).
    folders: set[str] = field(default_factory=set)
    #: Folders removed from the cache directory only: others' replies made with an erased
    #: work as a calibration example.
    cache_folders: set[str] = field(default_factory=set)
    #: Cached replies older than this go from these folders (retention of API evaluations,
    #: whose replies share their organization's folder).
    cache_older_than: tuple[set[str], datetime] | None = None
    #: Launch and login records in Redis to drop: ``(issuer, client id, claim, value)``,
    #: claim ``""`` for a whole platform, else ``sub``, ``context`` or ``link``.
    launches: set[tuple[str, str, str, str]] = field(default_factory=set)
    #: LMS notices whose claims (kept until processed) name a selected student or activity.
    notice_ids: set[int] = field(default_factory=set)

    @property
    def empty(self) -> bool:
        return not (
            self.submission_ids
            or self.evaluation_ids
            or self.user_ids
            or self.activity_ids
            or self.course_ids
            or self.organization_ids
        )


# --- what belongs to a scope -----------------------------------------------------------------


def select_scope(scope: Scope) -> Selection:
    """The selection of a scope; raises NotFound."""
    if scope.kind == "student":
        user = db.session.scalar(
            select(LtiUser).where(
                LtiUser.platform_id == scope.platform_id, LtiUser.sub == scope.key
            )
        )
        if user is None:
            raise NotFound(scope.kind)
        found = Selection(label=f"student #{user.id} of platform {user.platform_id}")
        found.user_ids.add(user.id)
        found.submission_ids |= _ids(select(Submission.id).where(Submission.user_id == user.id))
        activities = _ids(select(Submission.activity_id).where(Submission.user_id == user.id))
        found.folders |= {tenants.student_folder(user.platform_id, a, user.id) for a in activities}
        found.launches.add((*_platform(user.platform_id), "sub", user.sub))
        found.notice_ids |= _notices(user.platform_id, sub=user.sub)
        return found
    if scope.kind == "course":
        course = db.session.scalar(
            select(Course).where(
                Course.platform_id == scope.platform_id, Course.context_id == scope.key
            )
        )
        if course is None:
            raise NotFound(scope.kind)
        found = Selection(label=f"course #{course.id} of platform {course.platform_id}")
        found.course_ids.add(course.id)
        _add_activities(found, _ids(select(Activity.id).where(Activity.course_id == course.id)))
        found.launches.add((*_platform(course.platform_id), "context", course.context_id))
        return found
    if scope.kind == "activity":
        number = int(scope.key) if scope.key.isdigit() else 0
        activity = db.session.get(Activity, number) if 0 < number < 2**31 else None
        if activity is None or scope.platform_id not in (None, activity.platform_id):
            raise NotFound(scope.kind)
        found = Selection(label=f"activity #{activity.id} of platform {activity.platform_id}")
        _add_activities(found, {activity.id})
        return found
    org = db.session.scalar(select(Organization).where(Organization.external_id == scope.key))
    if org is None:
        raise NotFound(scope.kind)
    found = Selection(label=f"organization #{org.id}")
    found.organization_ids.add(org.id)
    platforms = _ids(select(Platform.id).where(Platform.organization_id == org.id))
    _add_activities(found, _ids(select(Activity.id).where(Activity.platform_id.in_(platforms))))
    found.course_ids |= _ids(select(Course.id).where(Course.platform_id.in_(platforms)))
    found.user_ids |= _ids(select(LtiUser.id).where(LtiUser.platform_id.in_(platforms)))
    found.evaluation_ids |= _ids(select(Evaluation.id).where(Evaluation.organization_id == org.id))
    found.folders |= {tenants.platform_folder(p) for p in platforms}
    found.folders.add(tenants.organization_folder(org.id))
    found.launches |= {(*_platform(p), "", "") for p in platforms}
    return found


def _add_activities(found: Selection, activity_ids: set[int]) -> None:
    """Activities erased whole: their submissions, their folders, and the students who had
    nothing else (their name would otherwise stay with no work left)."""
    found.activity_ids |= activity_ids
    public_ids = set(
        db.session.scalars(select(Activity.public_id).where(Activity.id.in_(activity_ids)))
    )
    platforms = _ids(select(Activity.platform_id).where(Activity.id.in_(activity_ids)))
    for platform_id in platforms:
        found.notice_ids |= _notices(platform_id, activities=public_ids)
    rows = db.session.execute(
        select(Submission.id, Submission.user_id).where(Submission.activity_id.in_(activity_ids))
    ).all()
    found.submission_ids |= {row.id for row in rows}
    students = {row.user_id for row in rows}
    elsewhere = _ids(
        select(Submission.user_id).where(
            Submission.user_id.in_(students), Submission.activity_id.not_in(activity_ids)
        )
    )
    found.user_ids |= students - elsewhere
    for user in db.session.scalars(select(LtiUser).where(LtiUser.id.in_(students - elsewhere))):
        found.launches.add((*_platform(user.platform_id), "sub", user.sub))
    for activity in db.session.scalars(select(Activity).where(Activity.id.in_(activity_ids))):
        found.folders.add(
            f"{tenants.platform_folder(activity.platform_id)}/"
            f"{tenants.activity_folder(activity.id)}"
        )
        if activity.resource_link_id:
            found.launches.add(
                (*_platform(activity.platform_id), "link", activity.resource_link_id)
            )


def _platform(platform_id: int) -> tuple[str, str]:
    """The issuer and client id a platform's launches carry."""
    platform = db.session.get(Platform, platform_id)
    return platform.issuer, platform.client_id


def _notices(platform_id: int, *, sub: str = "", activities: set[str] | None = None) -> set[int]:
    """Notices of the platform whose claims name the student ``sub`` or one of the
    ``activities`` (by public id). Only notices not yet processed keep claims: few rows."""
    found = set()
    rows = db.session.execute(
        select(LtiNotice.id, LtiNotice.claims).where(LtiNotice.platform_id == platform_id)
    )
    for notice_id, body in rows:
        if not body:
            continue
        user = (body.get(_LTI + "for_user") or {}).get("user_id")
        activity = (body.get(_LTI + "custom") or {}).get("activity")
        if (sub and user == sub) or (activities and activity in activities):
            found.add(notice_id)
    return found


def _ids(query) -> set[int]:
    return set(db.session.scalars(query))


# --- erasure ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Erased:
    #: The scope by internal ids (``student #12 of platform 3``).
    label: str
    counts: dict[str, int]


def erase_scope(scope: Scope, *, actor: str) -> Erased:
    """Erase everything of ``scope`` (see the module); the counts are also logged as a
    PrivacyEvent. Raises NotFound, or InProgress when some of its work is not done."""
    found = select_scope(scope)
    busy = _in_progress(found)
    if busy:
        raise InProgress(busy)
    return Erased(found.label, erase(found, action="erase", actor=actor))


def erase(found: Selection, *, action: str, actor: str) -> dict[str, int]:
    """Delete a selection: the rows in one transaction (with the PrivacyEvent that counts
    them), then the files, the cached replies and the launch records."""
    counts, paths = _delete_rows(found)
    event = PrivacyEvent(action=action, scope=found.label, actor=actor, counts=dict(counts))
    db.session.add(event)
    try:
        db.session.commit()
    except Exception:
        db.session.rollback()
        raise
    counts |= _delete_outside(found, paths)
    event.counts = dict(counts)
    db.session.commit()
    log.info("privacy %s of %s by %s: %s", action, found.label, actor, counts)
    return counts


def _in_progress(found: Selection) -> int:
    """Open jobs and pending deliveries of the selection."""
    jobs = db.session.scalar(
        select(func.count())
        .select_from(GradingJob)
        .where(GradingJob.status.in_(OPEN), _jobs_of(found))
    )
    pushes = db.session.scalar(
        select(func.count())
        .select_from(ScorePush)
        .where(
            ScorePush.status == PushStatus.PENDING,
            or_(
                ScorePush.submission_id.in_(found.submission_ids),
                ScorePush.activity_id.in_(found.activity_ids),
            ),
        )
    )
    callbacks = db.session.scalar(
        select(func.count())
        .select_from(Callback)
        .where(
            Callback.status == PushStatus.PENDING,
            Callback.evaluation_id.in_(found.evaluation_ids),
        )
    )
    reports = db.session.scalar(
        select(func.count())
        .select_from(AssetReport)
        .join(LtiAsset, LtiAsset.id == AssetReport.asset_id)
        .where(
            AssetReport.status == PushStatus.PENDING,
            LtiAsset.submission_id.in_(found.submission_ids),
        )
    )
    notices = _count(LtiNotice, LtiNotice.id.in_(found.notice_ids) & (LtiNotice.status == RECEIVED))
    return jobs + pushes + callbacks + reports + notices


def _jobs_of(found: Selection):
    return or_(
        GradingJob.submission_id.in_(found.submission_ids),
        GradingJob.evaluation_id.in_(found.evaluation_ids),
    )


def _delete_rows(found: Selection) -> tuple[dict[str, int], list[str]]:
    """The rows' part of an erasure, uncommitted; returns the counts and the files to delete
    once committed."""
    session = db.session
    subs, evals = found.submission_ids, found.evaluation_ids
    job_ids = _ids(select(GradingJob.id).where(_jobs_of(found)))
    paths = list(session.scalars(select(GradingJob.storage_path).where(GradingJob.id.in_(job_ids))))
    counts: dict[str, int] = {
        "submissions": len(subs),
        "evaluations": len(evals),
        "grades": _count(Grade, Grade.submission_id.in_(subs)),
        "appeals": _count(Appeal, Appeal.submission_id.in_(subs)),
        "score_pushes": _count(ScorePush, ScorePush.submission_id.in_(subs)),
        "callbacks": _count(Callback, Callback.evaluation_id.in_(evals)),
        "lms_assets": _count(LtiAsset, LtiAsset.submission_id.in_(subs)),
        "lms_notices": len(found.notice_ids),
        "students": len(found.user_ids),
        "activities": len(found.activity_ids),
        "courses": len(found.course_ids),
        "organizations": len(found.organization_ids),
    }
    # Calibration: others' gradings that showed this work to the model keep no copy of it.
    counts["prompts_scrubbed"], scrubbed_folders = _scrub_examples(found)
    found.cache_folders |= scrubbed_folders
    # Audit events: tombstones without personal data; those of erased activities go with them.
    erased_user = AuditEvent.actor_id.in_(found.user_ids)
    counts["audit_tombstones"] = session.execute(
        update(AuditEvent)
        .where(
            or_(AuditEvent.submission_id.in_(subs), erased_user),
            AuditEvent.activity_id.not_in(found.activity_ids),
        )
        .values(submission_id=None, details={"erased": True})
        .execution_options(synchronize_session=False)
    ).rowcount
    session.execute(
        update(AuditEvent)
        .where(erased_user)
        .values(actor_id=None)
        .execution_options(synchronize_session=False)
    )
    # Spend stays, anonymised: no job, no activity; an erased activity's spend still counts
    # for its organization, an erased organization's for the whole site.
    counts["spend_rows_kept"] = _anonymise_spend(found, job_ids)
    platforms_of_orgs = _ids(
        select(Platform.id).where(Platform.organization_id.in_(found.organization_ids))
    )
    for statement in (
        delete(Submission).where(Submission.id.in_(subs)),
        delete(LtiNotice).where(LtiNotice.id.in_(found.notice_ids)),
        delete(Evaluation).where(Evaluation.id.in_(evals)),
        delete(LineItemUpdate).where(LineItemUpdate.activity_id.in_(found.activity_ids)),
        delete(AuditEvent).where(AuditEvent.activity_id.in_(found.activity_ids)),
        delete(Activity).where(Activity.id.in_(found.activity_ids)),
        delete(Course).where(Course.id.in_(found.course_ids)),
        delete(LtiUser).where(LtiUser.id.in_(found.user_ids)),
        delete(Deployment).where(Deployment.platform_id.in_(platforms_of_orgs)),
        delete(Platform).where(Platform.id.in_(platforms_of_orgs)),
        delete(ApiToken).where(ApiToken.organization_id.in_(found.organization_ids)),
        delete(Organization).where(Organization.id.in_(found.organization_ids)),
    ):
        session.execute(statement.execution_options(synchronize_session=False))
    session.expire_all()
    return counts, paths


def _count(model, where) -> int:
    return db.session.scalar(select(func.count()).select_from(model).where(where))


def _scrub_examples(found: Selection) -> tuple[int, set[str]]:
    """Jobs outside the selection whose prompts showed an erased submission as a calibration
    example (app.lms.calibration): their prompts are cleared and their cached replies go.
    Examples come from the same activity only, so only those activities are read."""
    if not found.submission_ids:
        return 0, set()
    rows = db.session.execute(
        select(GradingJob.id, GradingJob.provenance, Submission)
        .join(Submission, GradingJob.submission_id == Submission.id)
        .where(
            Submission.activity_id.in_(
                select(Submission.activity_id).where(Submission.id.in_(found.submission_ids))
            ),
            Submission.id.not_in(found.submission_ids),
        )
    ).all()
    hit, folders = [], set()
    for job_id, provenance, submission in rows:
        used = {e.get("submission_id") for e in (provenance or {}).get("examples") or []}
        if used & found.submission_ids:
            hit.append(job_id)
            folders.add(
                tenants.student_folder(
                    submission.activity.platform_id, submission.activity_id, submission.user_id
                )
            )
    if hit:
        db.session.execute(
            update(GradingJob)
            .where(GradingJob.id.in_(hit))
            .values(prompts=[])
            .execution_options(synchronize_session=False)
        )
    return len(hit), folders


def _anonymise_spend(found: Selection, job_ids: set[int]) -> int:
    session = db.session
    kept = _count(
        ModelUsage,
        or_(
            ModelUsage.job_id.in_(job_ids),
            ModelUsage.activity_id.in_(found.activity_ids),
            ModelUsage.organization_id.in_(found.organization_ids),
        ),
    )
    session.execute(
        update(ModelUsage)
        .where(ModelUsage.job_id.in_(job_ids))
        .values(job_id=None)
        .execution_options(synchronize_session=False)
    )
    for activity_id, org_id in session.execute(
        select(Activity.id, Platform.organization_id)
        .join(Platform, Activity.platform_id == Platform.id)
        .where(Activity.id.in_(found.activity_ids))
    ):
        session.execute(
            update(ModelUsage)
            .where(ModelUsage.activity_id == activity_id)
            .values(
                activity_id=None,
                organization_id=None if org_id in found.organization_ids else org_id,
            )
            .execution_options(synchronize_session=False)
        )
    session.execute(
        update(ModelUsage)
        .where(ModelUsage.organization_id.in_(found.organization_ids))
        .values(organization_id=None)
        .execution_options(synchronize_session=False)
    )
    return kept


def _delete_outside(found: Selection, paths: list[str]) -> dict[str, int]:
    """Files, cached replies and launch records of a committed erasure."""
    config = current_app.config
    data_dir = Path(config["EVALUAITOR_DATA_DIR"])
    cache_dir = config.get("EVALUAITOR_LLM_CACHE_DIR")
    files = 0
    for relative in paths:
        path = data_dir / relative
        if path.is_file():
            path.unlink(missing_ok=True)
            files += 1
    cache_entries = 0
    for folder in found.folders:
        files += _remove_tree(data_dir.joinpath(*folder.split("/")))
    if cache_dir:
        for folder in found.folders | found.cache_folders:
            cache_entries += _remove_tree(scope_path(cache_dir, folder))
    if cache_dir:
        cache_entries += _remove_legacy_cache(Path(cache_dir), found)
        if found.cache_older_than:
            folders, cutoff = found.cache_older_than
            limits = CacheLimits(max_bytes=0, max_age_seconds=1)
            for folder in folders:
                cache_entries += prune(
                    scope_path(cache_dir, folder), limits, now=cutoff.timestamp()
                )
    redis_keys = _drop_launches(found) + _drop_rosters(found)
    return {"files": files, "cache_entries": cache_entries, "redis_keys": redis_keys}


def _drop_rosters(found: Selection) -> int:
    """The cached rosters of every platform the selection touches (a cache: the next class
    list asks the LMS again), so an erased student's name and e-mail are not among them."""
    platforms = {folder.split("/")[0][1:] for folder in found.folders if folder[0] == "p"}
    redis = redis_connection()
    keys = [
        key
        for platform in platforms
        for key in redis.scan_iter(match=f"{ROSTER_PREFIX}{platform}:*", count=1000)
    ]
    return redis.delete(*keys) if keys else 0


def _remove_tree(path: Path) -> int:
    if not path.exists():
        return 0
    count = sum(1 for p in path.rglob("*") if p.is_file())
    shutil.rmtree(path, ignore_errors=True)
    return count


def _remove_legacy_cache(cache_dir: Path, found: Selection) -> int:
    """Entries of the cache layout before per-student folders (``p3/<2 hex>/``) cannot be
    told apart by student: a platform's go whenever anything of it is erased (it is a cache:
    a later grading asks the model again)."""
    count = 0
    for platform in {folder.split("/")[0] for folder in found.folders}:
        root = cache_dir / platform
        if not root.is_dir():
            continue
        for child in root.iterdir():
            # ``a1`` is an activity's folder as well as two hex digits: a legacy folder holds
            # entries whose key starts with its name.
            legacy = child.is_dir() and _LEGACY_CACHE_FOLDER.fullmatch(child.name)
            if legacy and any(child.glob(f"{child.name}*.json")):
                count += _remove_tree(child)
    return count


def _drop_launches(found: Selection) -> int:
    """Launch and login records in Redis that match one of the selection's claim sets; one
    pass over the keys, each record looked up in a set (not compared with each claim set)."""
    if not found.launches:
        return 0
    wanted = found.launches
    loose = {(iss, claim, value) for iss, _, claim, value in wanted}  # a login names no client
    redis = redis_connection()
    dropped = 0
    keys = list(redis.scan_iter(match=LAUNCH_PREFIX + "*", count=1000))
    for start in range(0, len(keys), 500):
        batch = keys[start : start + 500]
        doomed = []
        for key, raw in zip(batch, redis.mget(batch), strict=True):
            try:
                body = json.loads(raw or "null")
            except ValueError:
                continue
            if isinstance(body, dict) and any(
                k in wanted or (k[1] is None and (k[0], k[2], k[3]) in loose)
                for k in _launch_keys(body)
            ):
                doomed.append(key)
        if doomed:
            dropped += redis.delete(*doomed)
    return dropped


def _launch_keys(body: dict[str, Any]) -> Iterator[tuple[Any, Any, str, Any]]:
    """``(issuer, client id, claim, value)`` for a launch (an id_token's claims) or a login
    record (its ``params``: ``iss``, ``client_id``, ``login_hint``): claim ``""`` names the
    platform alone, ``sub``, ``context`` and ``link`` one person, course or resource link."""
    params = body.get("params")
    if isinstance(params, dict):
        body = {"iss": params.get("iss"), "aud": params.get("client_id"),
                "sub": params.get("login_hint")}  # fmt: skip
    claims = {
        "": "",
        "sub": body.get("sub"),
        "context": (body.get(_LTI + "context") or {}).get("id"),
        "link": (body.get(_LTI + "resource_link") or {}).get("id"),
    }
    auds = body.get("aud")
    for aud in auds if isinstance(auds, list) else [auds]:
        for claim, value in claims.items():
            if value is not None:
                yield body.get("iss"), aud, claim, value


# --- access: the export ----------------------------------------------------------------------


def export_scope(scope: Scope, *, actor: str) -> bytes:
    """A zip of everything held about ``scope``: ``data.json`` (its rows, table by table) and
    ``files/`` (its uploads). A student's export holds nothing of another student: the prompts
    of a grading that showed other students' work as examples are left out (and said so)."""
    found = select_scope(scope)
    tables = _rows_of(found, one_student=scope.kind == "student")
    data_dir = Path(current_app.config["EVALUAITOR_DATA_DIR"])
    buffer = io.BytesIO()
    files = 0
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        document = {"scope": found.label, "exported_at": datetime.now(UTC), "tables": tables}
        archive.writestr("data.json", json.dumps(document, default=_json, indent=1))
        for job in tables.get("grading_job", []):
            path = data_dir / job["storage_path"]
            if path.is_file():
                archive.write(path, f"files/{job['storage_path']}")
                files += 1
    counts = {name: len(rows) for name, rows in tables.items()} | {"files": files}
    db.session.add(PrivacyEvent(action="export", scope=found.label, actor=actor, counts=counts))
    db.session.commit()
    return buffer.getvalue()


def _rows_of(found: Selection, *, one_student: bool) -> dict[str, list[dict[str, Any]]]:
    subs, evals = found.submission_ids, found.evaluation_ids
    students = found.user_ids | _ids(select(Submission.user_id).where(Submission.id.in_(subs)))
    queries: dict[str, Any] = {
        "organization": select(Organization).where(Organization.id.in_(found.organization_ids)),
        "api_token": select(ApiToken).where(ApiToken.organization_id.in_(found.organization_ids)),
        "course": select(Course).where(Course.id.in_(found.course_ids)),
        "activity": select(Activity).where(Activity.id.in_(found.activity_ids)),
        "lti_user": select(LtiUser).where(LtiUser.id.in_(students)),
        "submission": select(Submission).where(Submission.id.in_(subs)),
        "evaluation": select(Evaluation).where(Evaluation.id.in_(evals)),
        "grading_job": select(GradingJob).where(_jobs_of(found)),
        "grade": select(Grade).where(Grade.submission_id.in_(subs)),
        "appeal": select(Appeal).where(Appeal.submission_id.in_(subs)),
        "score_push": select(ScorePush).where(ScorePush.submission_id.in_(subs)),
        "callback": select(Callback).where(Callback.evaluation_id.in_(evals)),
        "lti_notice": select(LtiNotice).where(LtiNotice.id.in_(found.notice_ids)),
        "lti_asset": select(LtiAsset).where(LtiAsset.submission_id.in_(subs)),
        "asset_report": select(AssetReport)
        .join(LtiAsset, LtiAsset.id == AssetReport.asset_id)
        .where(LtiAsset.submission_id.in_(subs)),
        "lineitem_update": select(LineItemUpdate).where(
            LineItemUpdate.activity_id.in_(found.activity_ids)
        ),
        "audit_event": select(AuditEvent).where(
            or_(
                AuditEvent.submission_id.in_(subs),
                AuditEvent.activity_id.in_(found.activity_ids),
            )
        ),
        "model_usage": select(ModelUsage).where(
            or_(
                ModelUsage.job_id.in_(select(GradingJob.id).where(_jobs_of(found))),
                ModelUsage.activity_id.in_(found.activity_ids),
                ModelUsage.organization_id.in_(found.organization_ids),
            )
        ),
    }
    tables = {}
    for name, query in queries.items():
        rows = [_row(item) for item in db.session.scalars(query)]
        if name == "grading_job" and one_student:
            for row in rows:
                if (row["provenance"] or {}).get("examples"):
                    row["prompts"] = "left out: they quote other students' work as examples"
        if rows:
            tables[name] = rows
    return tables


def _row(item: Any) -> dict[str, Any]:
    table = item.__table__
    return {
        column.key: getattr(item, column.key)
        for column in table.columns
        if (table.name, column.name) not in SECRET_COLUMNS
    }


def _json(value: Any) -> Any:
    if isinstance(value, datetime | date):
        return value.isoformat()
    raise TypeError(type(value).__name__)


# --- retention -------------------------------------------------------------------------------


@dataclass(frozen=True)
class RetentionPlan:
    """What the retention windows would remove now."""

    #: Submissions (and API evaluations) past EVALUAITOR_RETAIN_SUBMISSIONS_DAYS.
    work: Selection
    #: Finished jobs whose prompts and replies are past EVALUAITOR_RETAIN_PROMPTS_DAYS.
    prompt_job_ids: set[int]
    prompts_cutoff: datetime | None

    def lines(self) -> Iterator[str]:
        work = self.work
        yield f"{len(work.submission_ids)} submission(s): {sorted(work.submission_ids)}"
        yield f"{len(work.evaluation_ids)} API evaluation(s): {sorted(work.evaluation_ids)}"
        yield f"prompts and replies of {len(self.prompt_job_ids)} graded job(s)"
        if self.prompts_cutoff:
            yield f"cached model replies stored before {self.prompts_cutoff.isoformat()}"


def retention_plan(now: datetime | None = None) -> RetentionPlan:
    """What the retention windows would remove (nothing when both are 0). Work in progress
    never counts: an open job, or a delivery still pending."""
    config = current_app.config
    now = now or datetime.now(UTC)
    work = Selection(label="retention")
    days = config["EVALUAITOR_RETAIN_SUBMISSIONS_DAYS"]
    if days:
        cutoff = now - timedelta(days=days)
        work.submission_ids = _stale_course_work(cutoff)
        work.evaluation_ids = _ids(
            select(Evaluation.id).join(GradingJob).where(GradingJob.updated_at < cutoff)
        )
        _drop_busy(work)
        work.folders |= _emptied_student_folders(work.submission_ids)
        orgs = _ids(
            select(Evaluation.organization_id).where(Evaluation.id.in_(work.evaluation_ids))
        )
        if orgs:
            work.cache_older_than = ({tenants.organization_folder(o) for o in orgs}, cutoff)
    prompt_jobs: set[int] = set()
    prompts_cutoff = None
    days = config["EVALUAITOR_RETAIN_PROMPTS_DAYS"]
    if days:
        prompts_cutoff = now - timedelta(days=days)
        prompt_jobs = _ids(
            select(GradingJob.id).where(
                GradingJob.status.not_in(OPEN),
                GradingJob.finished_at < prompts_cutoff,
                or_(
                    func.length(cast(GradingJob.prompts, Text)) > 2,
                    func.length(cast(GradingJob.raw_replies, Text)) > 2,
                ),
            )
        ) - {j for j in _ids(select(GradingJob.id).where(_jobs_of(work)))}
    return RetentionPlan(work, prompt_jobs, prompts_cutoff)


def _stale_course_work(cutoff: datetime) -> set[int]:
    """Submissions of courses (an activity without a course counts as its own) where nothing
    happened since ``cutoff``: no upload, no grading, no teacher's change."""
    last = (
        select(
            Activity.id,
            Activity.course_id,
            func.max(func.coalesce(GradingJob.updated_at, Submission.updated_at)).label("job"),
            func.max(Submission.updated_at).label("submission"),
            func.max(Grade.updated_at).label("grade"),
        )
        .join(Submission, Submission.activity_id == Activity.id)
        .join(GradingJob, GradingJob.submission_id == Submission.id)
        .outerjoin(Grade, Grade.submission_id == Submission.id)
        .group_by(Activity.id, Activity.course_id)
    )
    latest: dict[Any, datetime] = {}
    activities: dict[Any, list[int]] = {}
    for activity_id, course_id, *times in db.session.execute(last):
        group = ("course", course_id) if course_id is not None else ("activity", activity_id)
        moment = max(_utc(t) for t in times if t is not None)
        latest[group] = max(latest.get(group, moment), moment)
        activities.setdefault(group, []).append(activity_id)
    stale = [a for g, ids in activities.items() if latest[g] < cutoff for a in ids]
    return _ids(select(Submission.id).where(Submission.activity_id.in_(stale)))


def _drop_busy(work: Selection) -> None:
    """Leave out work in progress: open jobs and pending deliveries."""
    busy_jobs = db.session.execute(
        select(GradingJob.submission_id, GradingJob.evaluation_id).where(
            GradingJob.status.in_(OPEN), _jobs_of(work)
        )
    ).all()
    work.submission_ids -= {s for s, _ in busy_jobs if s is not None}
    work.evaluation_ids -= {e for _, e in busy_jobs if e is not None}
    work.submission_ids -= _ids(
        select(ScorePush.submission_id).where(
            ScorePush.status == PushStatus.PENDING, ScorePush.submission_id.in_(work.submission_ids)
        )
    )
    work.evaluation_ids -= _ids(
        select(Callback.evaluation_id).where(
            Callback.status == PushStatus.PENDING, Callback.evaluation_id.in_(work.evaluation_ids)
        )
    )
    work.submission_ids -= _ids(
        select(LtiAsset.submission_id)
        .join(AssetReport, AssetReport.asset_id == LtiAsset.id)
        .where(
            AssetReport.status == PushStatus.PENDING,
            LtiAsset.submission_id.in_(work.submission_ids),
        )
    )


def _emptied_student_folders(submission_ids: set[int]) -> set[str]:
    """The folders of students none of whose work at an activity stays."""
    rows = db.session.execute(
        select(Submission.activity_id, Submission.user_id, Activity.platform_id)
        .join(Activity)
        .where(Submission.id.in_(submission_ids))
        .distinct()
    ).all()
    folders = set()
    for activity_id, user_id, platform_id in rows:
        kept = _count(
            Submission,
            (Submission.activity_id == activity_id)
            & (Submission.user_id == user_id)
            & Submission.id.not_in(submission_ids),
        )
        if not kept:
            folders.add(tenants.student_folder(platform_id, activity_id, user_id))
    return folders


def apply_retention(*, actor: str, now: datetime | None = None) -> dict[str, int]:
    """Remove what the retention windows say is due (see :func:`retention_plan`)."""
    plan = retention_plan(now)
    counts: dict[str, int] = {}
    if not plan.work.empty:
        counts |= erase(plan.work, action="retain", actor=actor)
    if plan.prompt_job_ids:
        db.session.execute(
            update(GradingJob)
            .where(GradingJob.id.in_(plan.prompt_job_ids))
            .values(prompts=[], raw_replies=[])
            .execution_options(synchronize_session=False)
        )
        counts["prompts_cleared"] = len(plan.prompt_job_ids)
    cache_dir = current_app.config.get("EVALUAITOR_LLM_CACHE_DIR")
    if plan.prompts_cutoff and cache_dir and Path(cache_dir).is_dir():
        limits = CacheLimits(max_bytes=0, max_age_seconds=1)
        expired = prune(cache_dir, limits, now=plan.prompts_cutoff.timestamp())
        if expired:
            counts["cache_entries_expired"] = expired
    if plan.prompt_job_ids or counts.get("cache_entries_expired"):
        db.session.add(
            PrivacyEvent(action="retain", scope="prompts and replies", actor=actor, counts=counts)
        )
    db.session.commit()
    return counts


def retention_due() -> bool:
    """Whether this worker should run retention now: at most once per
    EVALUAITOR_RETENTION_EVERY seconds across all workers (a Redis key is the clock), and
    only with a window set."""
    config = current_app.config
    if not (
        config["EVALUAITOR_RETAIN_SUBMISSIONS_DAYS"] or config["EVALUAITOR_RETAIN_PROMPTS_DAYS"]
    ):
        return False
    every = max(1, int(config["EVALUAITOR_RETENTION_EVERY"]))
    return bool(redis_connection().set(_RETENTION_GATE, 1, nx=True, ex=every))


def _utc(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value
