"""The practice course's native assignment: an essay the platform itself collects, to which a
teacher attaches Evaluaitor as an LTI Asset Processor (Canvas calls it a Document Processor).

Here the platform, not the tool, owns the assignment: students submit in the platform's own
form, the platform tells each attached processor by a Platform Notification Service notice,
serves the files (Asset Service) and keeps the reports the tool sends (Asset Report Service),
as Canvas does. This module is what it remembers and the rules it follows;
:mod:`app.practice.processor_services` answers the tool and :mod:`app.practice.assignment_views`
draws the pages.

Kept like the course (:mod:`app.practice.state`): a JSON file written whole under a lock, and
the submitted bytes in a folder beside it, so a restart loses nothing.
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
import uuid
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from flask import current_app

from app.lti import claims
from app.practice.state import write_json

TITLE = "Essay (native assignment)"
#: The notice types this platform sends (the PNS claim's ``notice_types_supported``).
NOTICE_TYPES = (claims.SUBMISSION_NOTICE,)

# Report values Canvas acts on (its Lti::AssetReport).
PROCESSED = "Processed"
PENDING_MANUAL = "PendingManual"
FAILED = "Failed"
NOT_READY = "NotReady"
PROGRESSES = frozenset({PROCESSED, "Processing", "Pending", PENDING_MANUAL, FAILED})
PROGRESSES |= {"NotProcessed", NOT_READY}
#: A Failed report with one of these codes lets the teacher send the notice again.
RESUBMIT_CODES = frozenset({"EULA_NOT_ACCEPTED", "DOWNLOAD_FAILED"})
#: Canvas shows at most this many characters of a result (then 15 and an ellipsis).
RESULT_SHOWN = 16


@dataclass
class Processor:
    """An attached processor: the ``ltiAssetProcessor`` item of the tool's deep linking answer."""

    id: int
    title: str
    text: str = ""
    url: str | None = None
    custom: dict[str, str] = field(default_factory=dict)
    report_url: str | None = None  # the item's report.url: where "View report" launches
    report_custom: dict[str, str] = field(default_factory=dict)


@dataclass
class Asset:
    """One file or text entry of a submission, as the notice describes it."""

    asset_id: str
    title: str
    content_type: str
    size: int
    sha256: str  # base64 of the SHA-256 digest, as Canvas sends it
    timestamp: str
    filename: str | None = None  # None for a text entry (Canvas leaves it out)


@dataclass
class SentNotice:
    """A notice the platform sent, and what the handler answered (shown to the teacher)."""

    id: str
    processor_id: int
    sent_at: str
    outcome: str


@dataclass
class NativeSubmission:
    """One attempt: its id is new per attempt (Canvas: ``<uuid>:<attempt>``)."""

    id: str
    user_id: str
    submitted_at: str
    assets: list[Asset]
    notices: list[SentNotice] = field(default_factory=list)


@dataclass
class Report:
    """The latest report for (processor, asset, type): ``body`` is what the tool sent."""

    processor_id: int
    asset_id: str
    type: str
    timestamp: str
    body: dict[str, Any]

    @property
    def progress(self) -> str:
        """An unknown processingProgress is kept but read as NotReady (Canvas, per the spec)."""
        value = self.body.get("processingProgress")
        return value if value in PROGRESSES else NOT_READY

    @property
    def result_shown(self) -> str | None:
        result = self.body.get("result")
        if not isinstance(result, str) or not result:
            return None
        return result if len(result) <= RESULT_SHOWN else result[: RESULT_SHOWN - 1] + "…"

    @property
    def is_reviewable(self) -> bool:
        """Only a Processed report has a "View report" launch (Canvas's launch_url_path)."""
        return self.progress == PROCESSED

    @property
    def lets_teacher_resubmit(self) -> bool:
        return self.progress == PENDING_MANUAL or (
            self.progress == FAILED and self.body.get("errorCode") in RESUBMIT_CODES
        )

    @property
    def visible_to_student(self) -> bool:
        """Students see only Processed reports the tool marked ``visibleToOwner``."""
        return self.progress == PROCESSED and self.body.get("visibleToOwner") is True


class NewerReportExists(Exception):
    """A report with a later timestamp is already stored for the same asset and type."""


def parse_timestamp(value: Any) -> datetime | None:
    """An ISO 8601 date-time (offset-less read as UTC), or None."""
    if not isinstance(value, str) or "T" not in value:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def checksum(data: bytes) -> str:
    """Base64 of the SHA-256 digest: the notice's ``sha256_checksum`` as Canvas writes it."""
    return base64.b64encode(hashlib.sha256(data).digest()).decode()


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def current_assignment() -> AssignmentState:
    return current_app.extensions["practice_assignment"]


class AssignmentState:
    """The native assignment's processors, notice handlers, submissions and reports."""

    def __init__(self, path: Path, files: Path) -> None:
        self._path = path
        self._files = files
        self._lock = threading.Lock()
        self.activity_id = str(uuid.uuid4())  # the activity claim's id, kept across restarts
        self.processors: dict[int, Processor] = {}
        self.handlers: dict[str, str] = {}  # notice type -> the tool's handler URL
        self.submissions: list[NativeSubmission] = []
        self.reports: dict[tuple[int, str, str], Report] = {}
        self._attempts: dict[str, tuple[str, int]] = {}  # student -> (their uuid, last attempt)
        if path.exists():
            self._load(json.loads(path.read_text()))
        else:
            self._save()

    # -- processors and handlers -------------------------------------------------------

    def attach(self, items: list[dict[str, Any]]) -> list[Processor]:
        """Attach one processor per (already checked) ``ltiAssetProcessor`` item."""
        with self._lock:
            added = []
            for item in items:
                processor = Processor(id=max(self.processors, default=0) + 1, **item)
                self.processors[processor.id] = processor
                added.append(processor)
            self._save()
            return added

    def set_handler(self, notice_type: str, url: str) -> None:
        """One handler per notice type; "" removes it (the PNS rule)."""
        with self._lock:
            if url:
                self.handlers[notice_type] = url
            else:
                self.handlers.pop(notice_type, None)
            self._save()

    # -- submissions -------------------------------------------------------------------

    def submit(
        self, user_id: str, parts: list[tuple[str, str | None, str, bytes]]
    ) -> NativeSubmission:
        """A new attempt of ``user_id`` made of (title, filename, content type, bytes) parts."""
        with self._lock:
            student_uuid, attempt = self._attempts.get(user_id, (str(uuid.uuid4()), 0))
            self._attempts[user_id] = (student_uuid, attempt + 1)
            when = now_iso()
            assets = []
            for title, filename, content_type, data in parts:
                asset = Asset(
                    asset_id=str(uuid.uuid4()),
                    title=title,
                    content_type=content_type,
                    size=len(data),
                    sha256=checksum(data),
                    timestamp=when,
                    filename=filename,
                )
                self._files.mkdir(parents=True, exist_ok=True)
                (self._files / asset.asset_id).write_bytes(data)
                assets.append(asset)
            submission = NativeSubmission(f"{student_uuid}:{attempt + 1}", user_id, when, assets)
            self.submissions.append(submission)
            self._save()
            return submission

    def submission(self, submission_id: str) -> NativeSubmission | None:
        return next((s for s in self.submissions if s.id == submission_id), None)

    def record_notice(self, submission_id: str, notice: SentNotice) -> None:
        with self._lock:
            submission = self.submission(submission_id)
            if submission is not None:
                submission.notices.append(notice)
                self._save()

    def asset(self, asset_id: str) -> Asset | None:
        return next((a for s in self.submissions for a in s.assets if a.asset_id == asset_id), None)

    def asset_bytes(self, asset: Asset) -> bytes:
        return (self._files / asset.asset_id).read_bytes()

    # -- reports -----------------------------------------------------------------------

    def add_report(self, processor_id: int, body: dict[str, Any], when: datetime) -> None:
        """Keep the report unless a newer one of its type is stored for its asset (then
        :class:`NewerReportExists`); an older or equally old one is replaced (Canvas)."""
        key = (processor_id, body["assetId"], body["type"])
        with self._lock:
            stored = self.reports.get(key)
            if stored is not None and parse_timestamp(stored.timestamp) > when:
                raise NewerReportExists
            self.reports[key] = Report(processor_id, key[1], key[2], body["timestamp"], body)
            self._save()

    def reports_for(self, submission: NativeSubmission, processor_id: int) -> list[Report]:
        """The latest report of each type for each of the submission's assets, in asset order."""
        with self._lock:  # a report may arrive while a page is drawn
            stored = sorted(self.reports.items())
        return [
            report
            for asset in submission.assets
            for (pid, asset_id, _type), report in stored
            if pid == processor_id and asset_id == asset.asset_id
        ]

    def resubmit_available(self, submission: NativeSubmission, processor_id: int) -> bool:
        """Canvas's "Resubmit All Files": when the processor sent no report for the
        submission, or one waits for the teacher or failed for a reason a new notice fixes."""
        reports = self.reports_for(submission, processor_id)
        return not reports or any(report.lets_teacher_resubmit for report in reports)

    # -- persistence -------------------------------------------------------------------

    def _save(self) -> None:
        write_json(
            self._path,
            {
                "activity_id": self.activity_id,
                "processors": [asdict(p) for p in self.processors.values()],
                "handlers": self.handlers,
                "submissions": [asdict(s) for s in self.submissions],
                "reports": [asdict(r) for r in self.reports.values()],
                "attempts": {user: list(pair) for user, pair in self._attempts.items()},
            },
        )

    def _load(self, data: dict[str, Any]) -> None:
        self.activity_id = data["activity_id"]
        self.processors = {p["id"]: Processor(**p) for p in data.get("processors", [])}
        self.handlers = dict(data.get("handlers", {}))
        self.submissions = [
            NativeSubmission(
                **{
                    **s,
                    "assets": [Asset(**a) for a in s["assets"]],
                    "notices": [SentNotice(**n) for n in s["notices"]],
                }
            )
            for s in data.get("submissions", [])
        ]
        self.reports = {
            (r["processor_id"], r["asset_id"], r["type"]): Report(**r)
            for r in data.get("reports", [])
        }
        self._attempts = {user: (pair[0], pair[1]) for user, pair in data["attempts"].items()}
