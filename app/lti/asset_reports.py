"""Asset reports (LTI Asset Processor): what the LMS shows next to each asset of a submission
made in the LMS (Canvas's SpeedGrader), sent as deliveries (app.evaluation.delivery).

One report type, ``evaluaitor``: a newer report replaces the older one in the LMS. A report
says the submission's state at the moment it is made (:func:`state`, the one place that
decides): ``Processing`` at once, then ``Processed`` with the grade once it is released,
``PendingManual`` while a teacher must look at it (held, flagged, not confident, or no
score), ``Failed`` with an error code. ``visibleToOwner`` and the feedback ``comment`` only
once released. Each report's ``timestamp`` is later than the last one sent for its asset:
the LMS answers 409 to an older one, which then means a newer report is already there
(superseded). Reports of one asset go one at a time (their lane) and only the newest is
sent (an older one waiting behind it is overtaken).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import func, select

from app.evaluation import delivery
from app.evaluation.lifecycle import new_job_id
from app.extensions import db
from app.lti import claims
from app.lti.passback import is_releasable, plain_comment
from app.lti.service_client import ServiceClient, ServiceError
from app.models import JobStatus, PushStatus, Submission
from app.models.assets import AssetReport, LtiAsset

REPORT_TYPE = "evaluaitor"
TITLE = "Evaluaitor"
PROCESSING, PROCESSED = "Processing", "Processed"
PENDING_MANUAL, FAILED = "PendingManual", "Failed"
#: The tool's own error code when grading (not the download) failed.
GRADING_FAILED = "GRADING_FAILED"
#: Canvas's limits: a comment of at most 64 KiB, a result shown on 16 characters.
MAX_COMMENT_BYTES = 64 * 1024
MAX_RESULT_CHARS = 16


@dataclass(frozen=True)
class State:
    progress: str
    fields: dict[str, Any]


_PROCESSING = State(
    PROCESSING,
    {
        "type": REPORT_TYPE,
        "title": TITLE,
        "processingProgress": PROCESSING,
        "priority": 0,
        "visibleToOwner": False,
    },
)


def state(submission: Submission) -> State:
    """The report the submission's current state calls for (without assetId, timestamp)."""
    job = submission.job
    common = {"type": REPORT_TYPE, "title": TITLE}
    if job.status in (JobStatus.FAILED, JobStatus.CANCELLED):
        code = (job.error_details or {}).get("asset_error") or GRADING_FAILED
        comment = plain_comment(job.error_message or code, 2000) or code
        return State(
            FAILED,
            common
            | {"processingProgress": FAILED, "errorCode": code, "comment": comment}
            | {"priority": 5, "visibleToOwner": False},
        )
    if not job.has_result:
        return _PROCESSING
    grade = submission.grade
    fields = dict(common)
    if grade is not None and grade.effective_score is not None and grade.scale:
        fields["result"] = _result(grade.effective_score, grade.scale)
    if is_releasable(submission):
        # Plain text; four bytes per character at most in UTF-8.
        comment = plain_comment(grade.effective_feedback, MAX_COMMENT_BYTES // 4)
        fields |= {"processingProgress": PROCESSED, "priority": 0, "visibleToOwner": True}
        if comment:
            fields["comment"] = comment
        return State(PROCESSED, fields)
    fields |= {"processingProgress": PENDING_MANUAL, "priority": 3, "visibleToOwner": False}
    return State(PENDING_MANUAL, fields)


def _result(score: float, scale: float) -> str:
    """``8.5/10``: at most two decimals, within the LMS's 16 characters."""
    return f"{round(score, 2):g}/{round(scale, 2):g}"[:MAX_RESULT_CHARS]


def reports_for(submission: Submission, *, processing: bool = False) -> list[AssetReport]:
    """A report of the current state (or ``Processing``, as its assets are fetched) for each
    asset of an LMS-made submission, added to the session (none for an upload to the tool's
    own page); the caller commits, then dispatches them (app.jobs.queue)."""
    if submission.lms_submission_id is None:
        return []
    assets = db.session.scalars(
        select(LtiAsset).where(LtiAsset.submission_id == submission.id).order_by(LtiAsset.id)
    ).all()
    now = _PROCESSING if processing else state(submission)
    rows = []
    for asset in assets:
        row = AssetReport(asset=asset, progress=now.progress, body=now.fields)
        row.status, row.job_id = PushStatus.PENDING, new_job_id()
        db.session.add(row)
        rows.append(row)
    return rows


def latest(submission: Submission) -> list[AssetReport]:
    """The newest report of each asset of the submission (for the teacher's page)."""
    newest = (
        select(func.max(AssetReport.id))
        .join(LtiAsset, LtiAsset.id == AssetReport.asset_id)
        .where(LtiAsset.submission_id == submission.id)
        .group_by(AssetReport.asset_id)
    )
    return list(db.session.scalars(select(AssetReport).where(AssetReport.id.in_(newest))).all())


class ReportClient(ServiceClient):
    """The Asset Report service: POST a report to the notice's ``report_url``."""

    def post_report(self, url: str, body: dict[str, Any]) -> None:
        self._call("POST", url, [claims.SCOPE_REPORT], json=body)


def client(submission: Submission) -> ReportClient:
    return ReportClient.configured(submission.activity.platform)


class ReportSender:
    """Delivers asset reports (app.evaluation.delivery retries them)."""

    def lane(self, row: AssetReport) -> str:
        return f"asset-report:{row.asset_id}"

    def overtaken(self, row: AssetReport) -> bool:
        """A newer report for the asset exists: it says the newer state."""
        return bool(
            db.session.scalar(
                select(func.count(AssetReport.id)).where(
                    AssetReport.asset_id == row.asset_id, AssetReport.id > row.id
                )
            )
        )

    def send(self, row: AssetReport) -> None:
        asset = row.asset
        submission = asset.submission
        body = {"assetId": asset.asset_id, **row.body, "timestamp": _next_timestamp(row)}
        row.body = body
        db.session.commit()  # before sending: the LMS may keep it if we time out
        try:
            with client(submission) as reports:
                reports.post_report(submission.report_url or "", body)
        except ServiceError as exc:
            if exc.status == 409:
                raise delivery.Superseded(str(exc)) from exc
            # Another 4xx will not change (Canvas's validation): final, with its message.
            refused = exc.status is not None and 400 <= exc.status < 500
            retryable = exc.status in (408, 429) or (exc.retryable and not refused)
            raise delivery.DeliveryFailed(str(exc), status=exc.status, retryable=retryable) from exc
        row.http_status = 201


def _next_timestamp(row: AssetReport) -> str:
    """Now, with microseconds, and later than any timestamp sent for the asset before."""
    now = datetime.now(UTC)
    sent = db.session.scalars(
        select(AssetReport.body).where(
            AssetReport.asset_id == row.asset_id, AssetReport.id != row.id
        )
    ).all()
    stamps = [
        datetime.fromisoformat(body["timestamp"])
        for body in sent
        if isinstance(body, dict) and isinstance(body.get("timestamp"), str)
    ]
    if stamps and max(stamps) >= now:
        now = max(stamps) + timedelta(microseconds=1)
    return now.isoformat(timespec="microseconds")
