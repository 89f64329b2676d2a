"""An activity duplicated in Moodle: the copy has its own gradebook column."""

from __future__ import annotations

from sqlalchemy import select

from app.extensions import db
from app.models import Activity
from tests.documents import docx_bytes
from tests.moodle.flows import PLACED_SQL, Placed, add_activity, change_settings, gradebook, launch
from tests.moodle.test_grades import graded


def test_a_duplicated_activity_grades_on_its_own_columns_maximum(
    tool, teacher, student, moodle, type_id
):
    original = add_activity(teacher, type_id, title="Original", max_score="20")
    launch(teacher, original.cmid)
    change_settings(teacher, original.cmid, max_score="25")  # the column follows; mdl_lti not
    tool.wait_for("the column at 25", lambda: gradebook(moodle, original, 0)["grademax"] == 25)

    teacher.get(f"/course/view.php?id={moodle.course_id}")
    teacher.ajax("core_course_edit_module", action="duplicate", id=original.cmid)
    copy = Placed(**moodle.row(PLACED_SQL, type_id))
    assert copy != original
    assert gradebook(moodle, copy, 0)["grademax"] == 20  # Moodle's copy: its own maximum

    launch(student, copy.cmid)
    copied = db.session.scalar(
        select(Activity).where(Activity.resource_link_id == str(copy.instance))
    )
    assert copied.max_score in (None, 20)  # not the original's 25 (it was, before)
    assert copied.title == "Original (copy)"  # Moodle's name for the copy, not the original's

    graded(tool, student, copy, "essay.docx", docx_bytes(), "Fine.\n\nFinal score: 17/20")
    assert "Maximum score: 20" in tool.llm.requests[-1]["messages"][1]["content"]
    db.session.expire_all()
    assert copied.max_score == 20
    row = gradebook(moodle, copy, student.account.id)
    assert (row["grademax"], row["rawgrade"]) == (20, 17)
