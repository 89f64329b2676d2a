"""A submission made in the LMS (LTI Asset Processor): a stored notice becomes a graded
submission of the activity the processor is attached to.

The notice names the activity by its custom parameter; it must be an attached processor of
the notice's own platform and deployment (and of the same LMS assignment): anything else is
refused, and nothing is created. One LMS submission id is one attempt: sent again (the
teacher's "Resubmit All Files"), a graded one only has its reports sent again, a failed one
is tried again, one in progress is left alone. The assets are downloaded first (app.lti.assets),
checked like an upload (app.lms.submissions), and graded together as one work: one file as it
came, several (or a text entry) as one text with each asset under its title.
Reports follow the submission's state (app.lti.asset_reports).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from flask import current_app
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from app.catalogue import N_
from app.errors import FileTooLarge, UploadError
from app.evaluation import lifecycle
from app.extensions import db
from app.extract import ExtractionError, Kind, extract
from app.jobs import queue
from app.lms import submissions
from app.lms.activities import upload_limit_mb
from app.lti import asset_reports, assets, claims, processor_launches
from app.models import Activity, GradingJob, JobStatus, LtiUser, Submission
from app.models.assets import FAILED, PROCESSED, RECEIVED, LtiAsset, LtiNotice
from app.models.jobs import FETCHING
from app.text import clean_filename, clean_text
from app.uploads import IncomingFile, incoming_dir

log = logging.getLogger(__name__)

#: Times a notice may crash its job before it is failed rather than tried again.
MAX_ATTEMPTS = 5
# Why a submission made in the LMS could not be graded: for the teacher (their page, and the
# LMS's report); the asset's name and the details are filled in.
NOT_DOWNLOADED = N_("%(name)s could not be downloaded from the LMS: %(details)s")
CHANGED = N_(
    "%(name)s arrived different from what the LMS announced (its size or checksum differs), "
    "so it was not graded."
)
TOO_LARGE = N_("%(name)s is larger than this activity accepts.")
UNSUPPORTED = N_("%(name)s cannot be graded: %(details)s")
#: The name of the text several assets (or a text entry) are graded as.
COMBINED_NAME = "submission.md"
FETCHING_MESSAGE = N_("Fetching the submitted files from the LMS")


class Refusal(Exception):
    """The notice cannot be acted on (another tenant's activity, missing claims)."""


class AssetProblem(Exception):
    """An asset could not be used; ``code`` is the report's errorCode."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class Downloaded:
    filename: str
    incoming: IncomingFile


def process(notice_id: int) -> None:
    """The notice job (app.jobs.tasks.process_notice): once per notice; a notice already
    processed or failed is left alone."""
    notice = db.session.get(LtiNotice, notice_id)
    if notice is None or notice.status != RECEIVED:
        return
    notice.attempts += 1
    db.session.commit()
    try:
        _process(notice)
    except Refusal as exc:
        log.warning("notice %s refused: %s", notice.notice_id, exc)
        _finish(notice, FAILED, str(exc))
    except Exception as exc:
        db.session.rollback()
        log.exception("notice %s: processing crashed", notice.notice_id)
        if notice.attempts >= MAX_ATTEMPTS:
            _finish(notice, FAILED, f"gave up after {notice.attempts} attempts: {exc}")
        else:
            notice.last_error = str(exc)[:2000]
            db.session.commit()
        raise
    else:
        _finish(notice, PROCESSED, None)


def _finish(notice: LtiNotice, status: str, error: str | None) -> None:
    """Its claims go once it is done: they name the student."""
    notice.status, notice.last_error, notice.claims = status, error, {}
    notice.processed_at = datetime.now(UTC)
    db.session.commit()


def _process(notice: LtiNotice) -> None:
    body = notice.claims
    activity = _activity(notice, body)
    submission_id = _claim(body, claims.SUBMISSION, "id")
    existing = db.session.scalar(
        select(Submission).where(
            Submission.activity_id == activity.id, Submission.lms_submission_id == submission_id
        )
    )
    if existing is not None and not _to_fetch(existing.job):
        # Graded: the current reports again; in progress: its reports will follow.
        if existing.job.has_result:
            _commit_and_dispatch(asset_reports.reports_for(existing))
        return
    listed = _assets(body)
    user = _user(notice, body)
    if existing is None:
        existing = _new_submission(activity, user, submission_id, body, listed)
    _grade(existing, listed)


def fetch_again(submission_id: int) -> None:
    """The fetch task (app.jobs.tasks.fetch_assets): the files of a submission whose fetch
    failed or stopped, from what its notice listed (kept as its assets)."""
    submission = db.session.get(Submission, submission_id)
    if submission is None or submission.lms_submission_id is None:
        return
    if _to_fetch(submission.job):
        _grade(submission, _listed(submission))


def ask_again(submission: Submission) -> bool:
    """A teacher's "grade again" of a submission whose files never arrived: they are fetched
    again (then graded). False if it is not waiting for them nor failed."""
    moved = lifecycle.move(
        submission.job, (JobStatus.FAILED,), JobStatus.WAITING, **_fetching(), finished_at=None
    )
    if moved:
        queue.dispatch_fetch(submission.id)  # if Redis is away, the sweeper asks again
    return moved


def lacks_files(submission: Submission) -> bool:
    """An LMS-made submission whose files never arrived: grading it again means fetching."""
    return submission.lms_submission_id is not None and not submission.job.storage_path


def _fetching() -> dict[str, Any]:
    return {
        "waiting_for": FETCHING,
        "retry_at": None,
        "progress_message": FETCHING_MESSAGE,
        "error_message": None,
        "error_details": None,
    }


def _listed(submission: Submission) -> list[dict[str, Any]]:
    """The submission's assets as its notice listed them."""
    rows = db.session.scalars(
        select(LtiAsset).where(LtiAsset.submission_id == submission.id).order_by(LtiAsset.id)
    ).all()
    return [
        {
            "asset_id": row.asset_id,
            "url": row.url,
            "sha256_checksum": row.sha256,
            "size": row.size,
            "content_type": row.content_type,
            "title": row.title,
            "filename": row.filename,
        }
        for row in rows
    ]


def _to_fetch(job: GradingJob) -> bool:
    """Whether a notice for this submission fetches its files (again): it failed, or a run
    that was fetching them stopped (its worker died; this is the notice run again)."""
    return job.status == JobStatus.FAILED or (
        job.status == JobStatus.WAITING and job.waiting_for == FETCHING
    )


def _activity(notice: LtiNotice, body: dict[str, Any]) -> Activity:
    activity = processor_launches.named_processor(notice.platform_id, notice.deployment_id, body)
    if activity is None:
        raise Refusal(
            f"no processor {body.get(claims.CUSTOM)!r} of this platform and deployment for "
            f"assignment {body.get(claims.ACTIVITY)!r}"
        )
    return activity


def _claim(body: dict[str, Any], name: str, field: str) -> str:
    value = body.get(name)
    found = value.get(field) if isinstance(value, dict) else None
    if not isinstance(found, str | int) or found == "":
        raise Refusal(f"no {field} in {name}")
    return str(found)


def _user(notice: LtiNotice, body: dict[str, Any]) -> LtiUser:
    sub = _claim(body, claims.FOR_USER, "user_id")
    user = db.session.scalar(
        select(LtiUser).where(LtiUser.platform_id == notice.platform_id, LtiUser.sub == sub)
    )
    if user is None:
        user = LtiUser(platform_id=notice.platform_id, sub=sub, name="")
        db.session.add(user)
        try:
            db.session.commit()
        except IntegrityError:  # a launch or another notice made them a moment ago
            db.session.rollback()
            return _user(notice, body)
    return user


def _assets(body: dict[str, Any]) -> list[dict[str, Any]]:
    service = body.get(claims.ASSET_SERVICE)
    listed = service.get("assets") if isinstance(service, dict) else None
    if not isinstance(listed, list) or not listed:
        raise Refusal("no assets in the asset service claim")
    for asset in listed:
        if not isinstance(asset, dict) or not asset.get("asset_id") or not asset.get("url"):
            raise Refusal("an asset without asset_id or url")
    return listed


def _new_submission(
    activity: Activity,
    user: LtiUser,
    submission_id: str,
    body: dict[str, Any],
    listed: list[dict[str, Any]],
) -> Submission:
    """The attempt with its assets, committed before any download, its job waiting for them
    (:data:`FETCHING`)."""
    report = body.get(claims.ASSET_REPORT)
    submission = Submission(
        activity=activity,
        user=user,
        attempt=submissions.next_attempt(activity.id, user.id),
        lms_submission_id=submission_id,
        report_url=report.get("report_url") if isinstance(report, dict) else None,
    )
    submission.job = GradingJob(
        status=JobStatus.WAITING,
        **_fetching(),
        original_filename=_name(listed[0]),
        kind=Kind.TEXT.value,
        size_bytes=0,
        sha256="",
        storage_path="",
    )
    for asset in listed:
        db.session.add(
            LtiAsset(
                submission=submission,
                asset_id=str(asset["asset_id"])[:255],
                url=str(asset["url"])[:2000],
                sha256=asset.get("sha256_checksum"),
                size=asset.get("size") if isinstance(asset.get("size"), int) else None,
                content_type=str(asset.get("content_type") or "")[:255],
                title=str(asset.get("title") or "")[:500],
                filename=(str(asset["filename"])[:500] if asset.get("filename") else None),
            )
        )
    db.session.add(submission)
    db.session.commit()
    return submission


def _grade(submission: Submission, listed: list[dict[str, Any]]) -> None:
    """Say it is being processed, download its assets and put it in line for grading (or
    fail it, with the reason in its reports)."""
    job = submission.job
    if not lifecycle.move(
        job,
        (JobStatus.FAILED, JobStatus.WAITING),
        JobStatus.WAITING,
        commit=False,
        **_fetching(),
        finished_at=None,
    ):
        db.session.rollback()  # another run of this notice put it in line meanwhile
        return
    _commit_and_dispatch(asset_reports.reports_for(submission, processing=True))
    config = current_app.config
    data_dir = config["EVALUAITOR_DATA_DIR"]
    activity = submission.activity
    limit = int(upload_limit_mb(activity, config["EVALUAITOR_MAX_UPLOAD_MB"]) * 1024 * 1024)
    try:
        filename, incoming, kind = _fetch(submission, listed, data_dir, limit)
    except AssetProblem as exc:
        failed = lifecycle.move(
            job,
            (JobStatus.WAITING,),
            JobStatus.FAILED,
            commit=False,
            waiting_for=None,
            error_message=str(exc)[:2000],
            error_details={"exception_type": "AssetProblem", "asset_error": exc.code},
        )
        _commit_and_dispatch(asset_reports.reports_for(submission) if failed else [])
        return
    if job.storage_path:  # a grading that failed: its file makes way for the new download
        (Path(data_dir) / job.storage_path).unlink(missing_ok=True)
    try:
        path = submissions.keep(
            activity, submission.user, submission.attempt, filename, incoming, data_dir
        )
    finally:
        incoming.close()
    job.original_filename, job.kind = filename, kind.value
    job.size_bytes, job.sha256 = incoming.size, incoming.sha256
    job.storage_path = str(path.relative_to(data_dir))
    queued = lifecycle.move(
        job,
        (JobStatus.WAITING,),
        JobStatus.PENDING,
        commit=False,
        **lifecycle.queued_values(),
        waiting_for=None,
        tries=0,
        handbacks=0,
        fresh_since=None,
    )
    if not queued:  # another run of this submission got there first
        db.session.rollback()
        path.unlink(missing_ok=True)
        return
    db.session.commit()
    queue.dispatch(job)


def _commit_and_dispatch(rows: list) -> None:
    db.session.commit()
    queue.dispatch(*rows)


def _fetch(
    submission: Submission, listed: list[dict[str, Any]], data_dir: str, limit: int
) -> tuple[str, IncomingFile, Kind]:
    """The file to grade: the one asset as it came, or the assets' texts as one text."""
    activity = submission.activity
    downloaded: list[Downloaded] = []
    try:
        with assets.client(activity.platform, limit) as service:
            for asset in listed:
                downloaded.append(_download(service, asset, data_dir, limit))
        if len(downloaded) == 1 and not _is_html(listed[0]):
            only = downloaded.pop()
            return only.filename, only.incoming, _kind(activity, only)
        parts = []
        for asset, item in zip(listed, downloaded, strict=True):
            if _is_html(asset):
                text = assets.html_text(Path(item.incoming.path).read_bytes())
            else:
                text = _text(activity, item)
            title = clean_text(str(asset.get("title") or "")).strip() or _name(asset)
            parts.append(f"## {title}\n\n{text.strip()}\n")
        combined = IncomingFile(incoming_dir(data_dir), limit * max(1, len(listed)))
        combined.write("\n".join(parts).encode())
        return COMBINED_NAME, combined, Kind.MARKDOWN
    finally:
        for item in downloaded:
            item.incoming.close()


def _download(
    service: assets.AssetClient, asset: dict[str, Any], data_dir: str, limit: int
) -> Downloaded:
    size = asset.get("size")
    if isinstance(size, int) and size > limit:
        raise AssetProblem(assets.ASSET_TOO_LARGE, TOO_LARGE % {"name": _name(asset)})
    try:
        data = service.download(str(asset["url"]))
    except assets.AssetError as exc:
        message = TOO_LARGE if isinstance(exc, assets.AssetTooLarge) else NOT_DOWNLOADED
        raise AssetProblem(exc.code, message % {"name": _name(asset), "details": exc}) from exc
    if isinstance(size, int) and size != len(data):
        raise AssetProblem(assets.DOWNLOAD_FAILED, CHANGED % {"name": _name(asset)})
    if not assets.matches(data, asset.get("sha256_checksum")):
        raise AssetProblem(assets.DOWNLOAD_FAILED, CHANGED % {"name": _name(asset)})
    incoming = IncomingFile(incoming_dir(data_dir), limit)
    try:
        incoming.write(data)
        incoming.flush()
    except FileTooLarge as exc:
        raise AssetProblem(assets.ASSET_TOO_LARGE, TOO_LARGE % {"name": _name(asset)}) from exc
    return Downloaded(_name(asset), incoming)


def _kind(activity: Activity, item: Downloaded) -> Kind:
    try:
        return submissions.checked_kind(activity, item.filename, item.incoming)
    except UploadError as exc:
        details = {"name": item.filename, "details": exc}
        raise AssetProblem(assets.UNSUPPORTED_ASSET_TYPE, UNSUPPORTED % details) from exc


def _text(activity: Activity, item: Downloaded) -> str:
    """One of several files' text, to be graded with the others'."""
    kind = _kind(activity, item)
    try:
        return extract(item.incoming.path, kind).text
    except ExtractionError as exc:
        details = {"name": item.filename, "details": exc.user_message}
        raise AssetProblem(assets.UNSUPPORTED_ASSET_TYPE, UNSUPPORTED % details) from exc


def _is_html(asset: dict[str, Any]) -> bool:
    return str(asset.get("content_type") or "").split(";")[0].strip().lower() == "text/html"


def _name(asset: dict[str, Any]) -> str:
    """The asset's file name (a text entry has none: its title, as a text file)."""
    name = "" if _is_html(asset) else clean_filename(str(asset.get("filename") or ""))
    return name or clean_filename(str(asset.get("title") or "")) or str(asset["asset_id"])
