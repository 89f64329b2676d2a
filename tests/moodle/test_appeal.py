"""A student's regrade request from inside Moodle, and the teacher's new score in Moodle's
gradebook."""

from __future__ import annotations

from sqlalchemy import select

from app.extensions import db
from app.models import Appeal
from tests.documents import docx_bytes
from tests.moodle.flows import add_activity, gradebook, launch, wait_for_gradebook
from tests.moodle.site import forms, said
from tests.moodle.test_grades import graded


def test_an_answered_appeal_lands_in_moodles_gradebook(tool, teacher, student, moodle, type_id):
    placed = add_activity(teacher, type_id, title="Appealed essay", max_score="10")
    reply = "Thin on the dark reactions.\n\nFinal score: 6/10"
    submission = graded(tool, student, placed, "essay.docx", docx_bytes(), reply)
    assert gradebook(moodle, placed, student.account.id)["rawgrade"] == 6

    page = launch(student, placed.cmid)
    (ask,) = [f for f in forms(page) if f.action.endswith(f"/submissions/{submission.id}/appeal")]
    asked = student.submit(ask.action, {"reason": "Part 2 explains the Calvin cycle."}, page)
    assert asked.status_code == 200, said(asked)
    assert "Waiting for the teacher" in asked.text

    staff = launch(teacher, placed.cmid)
    assert "1 waits for you" in staff.text
    queue = teacher.follow(teacher.http.get(f"{staff.url}appeals"))
    assert "Part 2 explains the Calvin cycle." in queue.text, said(queue)
    db.session.expire_all()
    appeal = db.session.scalar(select(Appeal).where(Appeal.submission_id == submission.id))
    (answer,) = [f for f in forms(queue) if f.action.endswith(f"/appeals/{appeal.id}/answer")]
    fields = {"answer": "Yes, part 2 covers it.", "score": "8", "feedback": ""}
    assert teacher.submit(answer.action, fields, queue).status_code == 200

    row = wait_for_gradebook(tool, placed, student.account.id, lambda r: r["rawgrade"] == 8)
    assert (row["rawgrade"], row["grademax"]) == (8, 10)
    assert "Thin on the dark reactions." in row["feedback"]  # the feedback was kept
    seen = launch(student, placed.cmid).text
    assert "Yes, part 2 covers it." in seen and "Score changed from 6 to 8." in seen
