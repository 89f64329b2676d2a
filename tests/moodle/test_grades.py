"""Grades, as Moodle's own database holds them after the tool sent them."""

from __future__ import annotations

import time

from sqlalchemy import select

from app.extensions import db
from app.lti import passback
from app.lti.ags import AgsError
from app.models import Activity, LineItemUpdate, PushStatus, ScorePush, Submission
from tests.documents import ESSAY, docx_bytes, pdf_bytes
from tests.moodle.flows import (
    Placed,
    add_activity,
    change_settings,
    gradebook,
    launch,
    upload,
    wait_for_gradebook,
)
from tests.test_passback import cross


def graded(tool, person, placed: Placed, filename: str, data: bytes, reply: str) -> Submission:
    """The student's upload, once the worker graded it and delivered every push."""
    tool.llm.reply(reply)
    page = launch(person, placed.cmid)
    assert upload(person, page, filename, data).status_code == 303
    return tool.wait_for("graded and delivered", lambda: _settled(person))


def _settled(person) -> Submission | None:
    latest = db.session.scalar(
        select(Submission)
        .where(Submission.user.has(sub=str(person.account.id)))
        .order_by(Submission.id.desc())
        .limit(1)
    )
    if latest is None or latest.grade is None:
        return None
    pending = db.session.scalar(
        select(db.func.count(ScorePush.id)).where(
            ScorePush.submission_id == latest.id, ScorePush.status == PushStatus.PENDING
        )
    )
    return None if pending else latest


def test_a_docx_then_a_pdf_land_in_moodle_with_maximum_and_feedback(
    tool, teacher, student, moodle, type_id
):
    placed = add_activity(teacher, type_id, title="Essay", max_score="25")

    graded(tool, student, placed, "essay.docx", docx_bytes(), "Good work.\n\nFinal score: 20/25")
    row = gradebook(moodle, placed, student.account.id)
    assert (row["grademax"], row["rawgrade"]) == (25, 20)
    assert "Good work." in row["feedback"]

    pdf = pdf_bytes(ESSAY + "\n\nSecond version.")
    graded(tool, student, placed, "essay.pdf", pdf, "Better.\n\nFinal score: 23/25")
    row = gradebook(moodle, placed, student.account.id)
    assert (row["grademax"], row["rawgrade"]) == (25, 23)
    assert "Better." in row["feedback"] and "Good work." not in row["feedback"]


def test_a_held_grade_leaks_nothing_until_the_teachers_override_is_released(
    tool, teacher, student, moodle, type_id
):
    placed = add_activity(
        teacher, type_id, title="Held essay", max_score="20", release_policy="hold_all"
    )
    submission = graded(tool, student, placed, "essay.docx", docx_bytes(), "Final score: 14/20")
    assert submission.grade.score == 14

    row = gradebook(moodle, placed, student.account.id)
    assert row["rawgrade"] is None and row["finalgrade"] is None
    assert not row["feedback"]

    staff = launch(teacher, placed.cmid)
    override = teacher.http.post(
        f"{staff.url}submissions/{submission.id}/override",
        data={"score": "17", "feedback": "Checked by hand."},
    )
    assert override.status_code == 303
    assert gradebook(moodle, placed, student.account.id)["rawgrade"] is None  # still held

    teacher.http.post(f"{staff.url}submissions/{submission.id}/release")
    row = wait_for_gradebook(tool, placed, student.account.id, lambda r: r["rawgrade"])
    assert (row["rawgrade"], row["grademax"]) == (17, 20)
    assert row["feedback"] == "Checked by hand."


def test_the_class_list_comes_from_moodle(tool, teacher, student, moodle, type_id):
    placed = add_activity(teacher, type_id, title="Roster")
    page = launch(teacher, placed.cmid)
    assert "Sam Student" in page.text and "Nora Nosubmit" in page.text
    assert "Tina Teacher" not in page.text


def test_a_changed_maximum_rescales_moodle_and_the_resend_lands_at_once(
    tool, teacher, student, moodle, type_id
):
    """Moodle stamps the grades it rescales with the current second; the resend that follows
    must be later still, or Moodle answers 409 (it used to, every time)."""
    placed = add_activity(teacher, type_id, title="Rescaled", max_score="25")
    graded(tool, student, placed, "essay.docx", docx_bytes(), "Final score: 20/25")

    change_settings(teacher, placed.cmid, max_score="20")
    tool.wait_for(
        "the column update and the resend",
        lambda: (
            db.session.scalar(select(LineItemUpdate)).status == PushStatus.SENT
            and _settled(student)
        ),
    )
    row = wait_for_gradebook(tool, placed, student.account.id, lambda r: r["grademax"] == 20)
    assert row["rawgrade"] == 16
    resent = db.session.scalars(select(ScorePush).order_by(ScorePush.id.desc())).first()
    assert (resent.status, resent.attempts, resent.last_error) == (PushStatus.SENT, 1, None)


def test_a_grade_resent_in_the_second_moodle_rescaled_it_is_accepted(
    tool, teacher, student, moodle, type_id
):
    """The race above, made certain: the resend is stamped in the second Moodle rescaled."""
    placed = add_activity(teacher, type_id, title="Same second", max_score="25")
    submission = graded(tool, student, placed, "essay.docx", docx_bytes(), "Final score: 20/25")
    activity = db.session.get(Activity, submission.activity_id)
    push = passback.publish_grade(submission)
    db.session.commit()

    with passback.ags_client(activity) as client:
        for maximum in (20, 21, 20, 21, 20):  # until a rescale ends in the second it began
            time.sleep(1 - time.time() % 1)
            client.update_lineitem(activity.lineitem_url, label="Same", score_maximum=maximum)
            stamp = passback._next_timestamp(push)
            rescaled = gradebook(moodle, placed, student.account.id)["timemodified"]
            if int(time.time()) == rescaled:
                break
    assert stamp.timestamp() > rescaled  # it was the same second before: HTTP 409
    passback.ScoreSender().send(push)
    push.status = PushStatus.SENT
    db.session.commit()
    row = gradebook(moodle, placed, student.account.id)
    assert row["rawgrade"] == round(20 / 25 * maximum, 2)


def test_moodles_reason_for_a_refused_score_is_kept(tool, teacher, student, moodle, type_id):
    placed = add_activity(teacher, type_id, title="Refused", max_score="10")
    submission = graded(tool, student, placed, "essay.docx", docx_bytes(), "Final score: 8/10")
    activity = db.session.get(Activity, submission.activity_id)
    stale = {
        "userId": str(student.account.id),
        "timestamp": "2020-01-01T00:00:00+00:00",
        "scoreGiven": 1,
        "scoreMaximum": 10,
        "activityProgress": "Completed",
        "gradingProgress": "FullyGraded",
    }
    with passback.ags_client(activity) as client:
        try:
            client.post_score(activity.lineitem_url, stale)
        except AgsError as exc:
            refused = exc
    assert refused.status == 409
    assert "Refusing score with an earlier timestamp" in str(refused)
    assert gradebook(moodle, placed, student.account.id)["rawgrade"] == 8


def test_a_submitted_push_crossing_the_grade_never_clears_it_in_moodle(
    tool, teacher, student, moodle, type_id, monkeypatch
):
    """Two workers' race, made certain: the grade is in Moodle but not yet recorded as sent
    when the upload's "submitted" push starts. Sent after it, stamped later, Moodle took
    that Pending score and cleared the grade; it now waits its turn and is not sent."""
    placed = add_activity(teacher, type_id, title="Crossing", max_score="10")
    submission = graded(tool, student, placed, "essay.docx", docx_bytes(), "Final score: 8/10")
    submitted, pushed = cross(tool.app, monkeypatch, submission)
    assert submitted.status == PushStatus.SUPERSEDED
    # The grade's attempt ran outside RQ, so the workers' sweeper (2 s here) may have handed
    # its row to a worker meanwhile; that worker's attempt waits for the lane and records it.
    tool.stack.wait_for(
        "the grade recorded as sent",
        lambda: db.session.get(ScorePush, pushed.id).status == PushStatus.SENT,
    )
    row = gradebook(moodle, placed, student.account.id)
    assert (row["rawgrade"], row["grademax"]) == (8, 10)
