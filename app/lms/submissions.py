"""The LMS side of the evaluation core: a student's upload becomes a grading job, and a
graded job becomes a grade for the gradebook.

Order matters for "nothing lost": the file is written and the rows (the submission, its
grading job and its "submitted" score push) are committed in one transaction *before*
anything is enqueued. If Redis is down the job waits ``pending`` and the sweeper queues it
later; the student still gets a receipt.

What the LMS adds to a job (:class:`LmsSide`): it is graded with the activity's settings (or
a teacher's regrade choice), against the gradebook column's maximum, with the student's name
masked; once graded, the release policy decides whether the grade goes to the student and
the gradebook at once (``auto``) or waits for a teacher (``hold_all``, and ``hold_flagged``
when the result carries a flag), see app.lms.review.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from flask import current_app
from flask_babel import gettext as _
from flask_babel import lazy_gettext as _l
from flask_babel import ngettext
from sqlalchemy import bindparam, func, select
from sqlalchemy.exc import IntegrityError

from app import tenants
from app.errors import FileTooLarge, QueueUnavailable, UploadError
from app.evaluation import lifecycle
from app.evaluation.owners import Brief
from app.extensions import db
from app.extract import ACCEPTED_EXTENSIONS, ExtractionError, Kind, check, sniff
from app.grading.base import Assignment
from app.grading.examples import Candidate
from app.grading.rubric import parse_rubric
from app.i18n import localize
from app.jobs import queue
from app.lms import calibration
from app.lms.activities import KIND_LABELS, accepted_kinds, upload_limit_mb
from app.lti import asset_reports, passback
from app.models import Activity, Grade, GradingJob, JobStatus, LtiUser, Submission
from app.models.jobs import Delivery
from app.text import clean_filename, clean_text
from app.uploads import IncomingFile, incoming_dir

MAX_COMMENT_CHARS = 5000


@dataclass(frozen=True)
class Upload:
    filename: str
    stream: BinaryIO
    comment: str = ""


def accept(activity: Activity, user: LtiUser, upload: Upload, *, data_dir: str, max_mb: float):
    """Store ``upload`` as the user's next attempt and start grading it."""
    filename = _clean_filename(upload.filename)
    comment = clean_text(upload.comment).strip()
    if len(comment) > MAX_COMMENT_CHARS:
        raise UploadError(
            _("The comment is too long (at most %(n)s characters).", n=MAX_COMMENT_CHARS)
        )
    limit_mb = upload_limit_mb(activity, max_mb)
    incoming = upload.stream
    if not isinstance(incoming, IncomingFile):
        incoming = IncomingFile.copy_of(
            upload.stream, incoming_dir(data_dir), int(limit_mb * 1024 * 1024)
        )
    try:
        if incoming.size > limit_mb * 1024 * 1024:  # the activity's own, smaller limit
            raise FileTooLarge(limit_mb)
        return _store(activity, user, filename, comment, incoming, data_dir)
    finally:
        incoming.close()


def _store(
    activity: Activity,
    user: LtiUser,
    filename: str,
    comment: str,
    incoming: IncomingFile,
    data_dir: str,
) -> Submission:
    attempts = _attempts(activity.id, user.id)
    if attempts.left(activity) == 0:
        raise UploadError(
            ngettext(
                "You have used your attempt for this activity. Your teacher can allow one more.",
                "You have used all %(num)d attempts for this activity. "
                "Your teacher can allow one more.",
                activity.max_attempts or 0,
            )
        )
    kind = checked_kind(activity, filename, incoming)
    submission, final_path = new_attempt(
        activity, user, filename, incoming, data_dir, kind=kind, comment=comment
    )
    # Reads first, writes last: with SQLite the write lock is then held only for the commit.
    push = passback.announce_submission(submission)
    db.session.add(submission)
    try:
        db.session.commit()
    except IntegrityError as exc:
        # The same student's other upload took this attempt number a moment ago.
        db.session.rollback()
        final_path.unlink(missing_ok=True)
        raise UploadError(_("Another upload of yours was being saved. Please try again.")) from exc
    except Exception:
        db.session.rollback()
        final_path.unlink(missing_ok=True)
        raise
    queue.dispatch(submission.job, *([push] if push else []))
    return submission


def checked_kind(activity: Activity, filename: str, incoming: IncomingFile) -> Kind:
    """What the file is, if the activity accepts it and it opens; raises UploadError."""
    try:
        kind = sniff(filename, incoming.head)
        accepted = accepted_kinds(activity)
        if kind not in accepted:
            names = ", ".join(str(label) for k, label in KIND_LABELS.items() if k in accepted)
            raise UploadError(_("This activity only accepts: %(kinds)s.", kinds=names))
        incoming.flush()
        check(incoming.path, kind)  # a damaged document is refused now, not when graded
    except ExtractionError as exc:
        raise UploadError(localize(exc.user_message)) from exc
    return kind


def new_attempt(
    activity: Activity,
    user: LtiUser,
    filename: str,
    incoming: IncomingFile,
    data_dir: str,
    *,
    kind: Kind,
    comment: str = "",
) -> tuple[Submission, Path]:
    """The student's next attempt with its grading job, its file kept in their folder;
    uncommitted (the caller commits, or removes the file if that fails)."""
    attempt = next_attempt(activity.id, user.id)
    final_path = keep(activity, user, attempt, filename, incoming, data_dir)
    submission = Submission(activity=activity, user=user, attempt=attempt, comment=comment)
    submission.job = GradingJob(
        status=JobStatus.PENDING,
        original_filename=filename,
        kind=kind.value,
        size_bytes=incoming.size,
        sha256=incoming.sha256,
        storage_path=str(final_path.relative_to(data_dir)),
        **lifecycle.queued_values(),
    )
    return submission, final_path


def next_attempt(activity_id: int, user_id: int) -> int:
    return _attempts(activity_id, user_id).last + 1


def keep(
    activity: Activity,
    user: LtiUser,
    attempt: int,
    filename: str,
    incoming: IncomingFile,
    data_dir: str,
) -> Path:
    """Give the file its name in the student's folder (app.tenants)."""
    folder = tenants.student_folder(activity.platform_id, activity.id, user.id)
    directory = Path(data_dir) / folder
    directory.mkdir(parents=True, exist_ok=True)
    final_path = directory / f"{attempt}-{incoming.sha256[:16]}{Path(filename).suffix.lower()}"
    incoming.keep_as(final_path)
    return final_path


def attempts_left(activity: Activity, user_id: int) -> int | None:
    """Uploads the student may still make; None when unlimited."""
    if activity.max_attempts is None:
        return None
    return _attempts(activity.id, user_id).left(activity)


@dataclass(frozen=True)
class _Attempts:
    used: int
    reopened: int
    #: The latest attempt's number (0 before the first).
    last: int

    def left(self, activity: Activity) -> int | None:
        """None when unlimited. Each attempt a teacher reopened grants one more."""
        if activity.max_attempts is None:
            return None
        return max(0, activity.max_attempts + self.reopened - self.used)


def _attempts(activity_id: int, user_id: int) -> _Attempts:
    """A student's attempts at an activity, counted in one query."""
    used, reopened, last = db.session.execute(
        _COUNT_ATTEMPTS, {"activity": activity_id, "user": user_id}
    ).one()
    return _Attempts(used, reopened, last or 0)


_COUNT_ATTEMPTS = select(
    func.count(Submission.id), func.count(Submission.reopened_at), func.max(Submission.attempt)
).where(Submission.activity_id == bindparam("activity"), Submission.user_id == bindparam("user"))


def _clean_filename(raw: str | None) -> str:
    name = clean_filename(raw)
    if not name:
        raise UploadError(_("Choose a file to upload."))
    if Path(name).suffix.lower() not in ACCEPTED_EXTENSIONS:
        accepted = ", ".join(sorted(ACCEPTED_EXTENSIONS))
        raise UploadError(
            _("This type of file is not accepted. Accepted types: %(types)s.", types=accepted)
        )
    return name


def grade_again(submission: Submission) -> bool:
    """A teacher's retry or regrade (app.lms.review), committed with the caller's changes: the
    job goes back in line and asks the model afresh (a cached reply would repeat itself).
    False, and nothing changes, if it is in line or being graded already."""
    if not lifecycle.restart(submission.job, fresh=True):
        db.session.rollback()
        return False
    db.session.commit()
    if not queue.dispatch(submission.job):
        raise QueueUnavailable(
            _l("The grading queue is not reachable right now; grading starts when it is back.")
        )
    return True


class LmsSide:
    """What the LMS adds to the evaluation core (see app.evaluation.owners)."""

    def tenant(self, job: GradingJob) -> str:
        """The student's own folder inside the platform's: their replies go with them."""
        submission = job.submission
        return tenants.student_folder(
            submission.activity.platform_id, submission.activity_id, submission.user_id
        )

    def brief(self, job: GradingJob) -> Brief:
        submission = job.submission
        activity = submission.activity
        passback.sync_max_score(activity)  # grade against the gradebook column's maximum
        chosen = submission.grading_override or {}
        config = current_app.config
        return Brief(
            plugin=chosen.get("plugin") or activity.plugin_name,
            params=chosen.get("params", activity.plugin_params),
            assignment=Assignment(
                max_score=activity.max_score,
                instructions=activity.instructions,
                guidelines=activity.guidelines,
                rubric=parse_rubric(activity.rubric) if activity.rubric else None,
                reference=activity.reference_text,
                model=chosen.get("model") or activity.model or config["EVALUAITOR_LLM_MODEL"],
            ),
            names=[submission.user.name],
            comment=submission.comment,
            model_base_urls=tenants.model_base_urls(activity.platform.organization),
        )

    def examples(self, job: GradingJob, text: str) -> tuple[Candidate, ...]:
        return calibration.for_grading(job.submission, text)

    def settle(self, job: GradingJob) -> list[Delivery]:
        """A new result replaces the previous one entirely, a teacher's override and release
        included (a regrade's audit event keeps what was there before). A submission made in
        the LMS (LTI Asset Processor) gets its reports, a failed one too."""
        submission = job.submission
        if not job.has_result:
            return asset_reports.reports_for(submission)
        if submission.grade is None:
            submission.grade = Grade()
        grade = submission.grade
        grade.override_score = grade.override_feedback = grade.override_criteria = None
        grade.overridden_at = grade.overridden_by_id = grade.released_by_id = None
        graded = job.status == JobStatus.COMPLETED
        released = graded and not is_held(submission.activity, job)
        grade.released_at = job.finished_at if released else None
        push = passback.publish_grade(submission)
        return [*([push] if push else []), *asset_reports.reports_for(submission)]


def is_held(activity: Activity, job: GradingJob) -> bool:
    """Whether the activity keeps this result for a teacher to release: every result under
    ``hold_all``, a flagged one under ``hold_flagged``, and, whatever the policy, one whose
    confidence is below the activity's ``min_confidence`` (the one place holding is decided)."""
    policy = activity.release_policy
    return (
        policy == "hold_all"
        or (policy == "hold_flagged" and bool(job.flags))
        or is_uncertain(activity, job.confidence)
    )


def is_uncertain(activity: Activity, confidence: float | None) -> bool:
    """Whether ``confidence`` is below what the activity asks for (never, when it asks for
    none or the result was not assessed)."""
    wanted = activity.min_confidence
    return wanted is not None and confidence is not None and confidence < wanted
