"""The native assignment's pages: the teacher's (attach a processor, the grader with each
asset's reports, "View report", "Resubmit all files") and the student's (the platform's own
submission form, and the reports a student may see).

What the buttons do follows Canvas's Document Processor: "View report" only for a Processed
report, "Resubmit all files" only when the processor sent no report for the submission or one
waits for the teacher or failed for a reason a new notice can fix, and a student sees only
Processed reports the tool made visible to them.
"""

from __future__ import annotations

import html
import mimetypes
from typing import Any

from flask import Blueprint, redirect, render_template, request, url_for
from flask_babel import gettext as _
from werkzeug.datastructures import FileStorage

from app.practice import assignment, notices
from app.practice.assignment import NativeSubmission, current_assignment
from app.practice.errors import PracticeError
from app.practice.messages import ATTACH, REPORT, SETTINGS
from app.practice.names import STORAGE_FRAME, TOOL_FRAME
from app.practice.state import LAUNCHING_AS, PEOPLE, Person
from app.practice.views import login_initiation

bp = Blueprint("practice_assignment", __name__)

STUDENTS = tuple(person for person in PEOPLE if person.role == "student")
#: The most a submission may carry: a practice platform, not a file store.
MAX_SUBMISSION_BYTES = 10 * 1024 * 1024
MAX_FILES = 5


def _refuse(message: str) -> PracticeError:
    return PracticeError(400, "invalid_request", message, is_api=False)


def _student(sub: str | None) -> Person:
    """The student a page or form is for (the first one when none is named)."""
    if not sub:
        return STUDENTS[0]
    found = next((person for person in STUDENTS if person.sub == sub), None)
    if found is None:
        raise _refuse(_("Unknown student."))
    return found


@bp.get("/assignment/teacher")
def teacher():
    state = current_assignment()
    names = {person.sub: person.name for person in PEOPLE}
    graded = [
        {
            "submission": submission,
            "student": names.get(submission.user_id, submission.user_id),
            "processors": [
                {
                    "processor": processor,
                    "reports": state.reports_for(submission, processor.id),
                    "notices": [n for n in submission.notices if n.processor_id == processor.id],
                    "can_resubmit": state.resubmit_available(submission, processor.id),
                }
                for processor in state.processors.values()
            ],
        }
        for submission in reversed(state.submissions)
    ]
    return _page("teacher", submissions=graded, handler_registered=bool(state.handlers))


@bp.get("/assignment/student")
def student():
    state = current_assignment()
    person = _student(request.args.get("student"))
    own = [
        {
            "submission": submission,
            "reports": [
                report
                for processor in state.processors.values()
                for report in state.reports_for(submission, processor.id)
                if report.visible_to_student
            ],
        }
        for submission in reversed(state.submissions)
        if submission.user_id == person.sub
    ]
    return _page("student", submissions=own, person=person, students=STUDENTS)


def _page(view: str, **context: Any):
    state = current_assignment()
    return render_template(
        "practice/assignment.html",
        view=view,
        title=assignment.TITLE,
        processors=list(state.processors.values()),
        assets_by_id={a.asset_id: a for s in state.submissions for a in s.assets},
        tool_frame=TOOL_FRAME,
        storage_frame_name=STORAGE_FRAME,
        **context,
    )


@bp.get("/assignment/launch")
def launch():
    """Attach a processor, open its settings, or open one asset's report in the tool."""
    action = request.args.get("action")
    if action == ATTACH:
        return login_initiation(LAUNCHING_AS["teacher"], processor={"kind": ATTACH})
    state = current_assignment()
    processor = state.processors.get(request.args.get("processor", type=int))
    if processor is None:
        raise _refuse(_("This processor is not attached."))
    if action == SETTINGS:
        message = {"kind": SETTINGS, "processor": processor.id}
        target = processor.url
        return login_initiation(LAUNCHING_AS["teacher"], processor=message, target_link_uri=target)
    if action != REPORT:
        raise _refuse(_("Unknown action."))
    submission = state.submission(request.args.get("submission", ""))
    asset_id, report_type = request.args.get("asset", ""), request.args.get("type", "")
    report = state.reports.get((processor.id, asset_id, report_type))
    if (
        submission is None
        or report is None
        or asset_id not in {a.asset_id for a in submission.assets}
    ):
        raise _refuse(_("There is no such report."))
    if not report.is_reviewable:
        raise _refuse(_("Only a processed report can be opened."))
    if request.args.get("as") == "student":
        person = _student(submission.user_id)
        if not report.visible_to_student:
            raise _refuse(_("This report is not visible to the student."))
    else:
        person = LAUNCHING_AS["teacher"]
    message = {
        "kind": REPORT,
        "processor": processor.id,
        "submission": submission.id,
        "asset": asset_id,
        "type": report_type,
    }
    target = processor.report_url or processor.url
    return login_initiation(person, processor=message, target_link_uri=target)


@bp.post("/assignment/submit")
def submit():
    """The platform's own submission form: a text entry and/or files, one new attempt, and a
    notice to every attached processor."""
    person = _student(request.form.get("student"))
    parts = _parts(request.form.get("text", ""), request.files.getlist("file"))
    submission = current_assignment().submit(person.sub, parts)
    notices.send_to_all(submission)
    return redirect(url_for(".student", student=person.sub), code=303)


def _parts(text: str, files: list[FileStorage]) -> list[tuple[str, str | None, str, bytes]]:
    """(title, filename, content type, bytes) per asset: the text entry served as HTML (as
    Canvas serves one), each file as uploaded."""
    parts: list[tuple[str, str | None, str, bytes]] = []
    if text.strip():
        parts.append((assignment.TITLE, None, "text/html", text_entry_html(text)))
    uploads = [upload for upload in files if upload.filename]
    if len(uploads) > MAX_FILES:
        raise _refuse(_("At most %(count)s files.", count=MAX_FILES))
    for upload in uploads:
        name = upload.filename or "file"
        content_type = upload.mimetype
        if not content_type or content_type == "application/octet-stream":
            content_type = mimetypes.guess_type(name)[0] or "application/octet-stream"
        parts.append((name, name, content_type, upload.read(MAX_SUBMISSION_BYTES + 1)))
    if not parts:
        raise _refuse(_("Write a text or choose a file to submit."))
    if sum(len(part[3]) for part in parts) > MAX_SUBMISSION_BYTES:
        raise _refuse(_("The submission is larger than 10 MB."))
    return parts


def text_entry_html(text: str) -> bytes:
    """A text entry as the HTML an LMS's editor stores: a paragraph per block, escaped."""
    blocks = [block.strip() for block in text.replace("\r\n", "\n").split("\n\n")]
    body = "".join(
        "<p>" + "<br>".join(html.escape(line) for line in block.split("\n")) + "</p>"
        for block in blocks
        if block
    )
    return body.encode()


@bp.post("/assignment/resubmit")
def resubmit():
    """ "Resubmit all files": the same submission (same id, all its assets) in a new notice."""
    state = current_assignment()
    submission: NativeSubmission | None = state.submission(request.form.get("submission", ""))
    processor = state.processors.get(request.form.get("processor", type=int))
    if submission is None or processor is None:
        raise _refuse(_("There is no such submission."))
    if not state.resubmit_available(submission, processor.id):
        raise _refuse(_("Resubmitting is only offered while a report waits or failed to download."))
    notices.send(submission, processor)
    return redirect(url_for(".teacher"), code=303)
