"""What the admin and the teacher read through a real Moodle (issue 14, defects 2 and 6): the
registration page on re-registration, a title set in the tool's settings, and the teacher
page's words."""

from __future__ import annotations

from app.extensions import db
from app.models import Activity, Grade
from tests.documents import docx_bytes
from tests.moodle.flows import (
    PLACED_SQL,
    Placed,
    add_activity,
    launch,
    save_to_course,
    submit_tool_form,
    tool_type,
    upload,
)
from tests.moodle.site import fill_by_id, find_form, said
from tests.test_deep_linking import valid_form
from tests.test_roles_read import text_of

#: mdl_lti_types.state (mod/lti/locallib.php).
CONFIGURED = 1


def test_re_registration_says_moodle_kept_the_tool_active(tool, admin, moodle, type_id):
    page = admin.get(
        "/mod/lti/startltiadvregistration.php",
        url=tool.registration_link(),
        sesskey=admin.sesskey,
        type=type_id,  # Moodle's "Update" of the known tool
    )
    assert page.status_code == 200 and str(page.url).startswith(tool.url), said(page)
    assert tool_type(moodle, tool)["state"] == CONFIGURED
    text = text_of(page.text)
    assert "a tool that was active stays active" in text
    assert "Moodle adds the tool as pending" not in text


def test_a_title_set_in_the_settings_survives_moodle_launches(
    tool, teacher, student, moodle, type_id
):
    placed = add_activity(teacher, type_id, title="Photosynthesis")
    staff = launch(teacher, placed.cmid)
    settings = teacher.http.get(str(staff.url) + "settings")
    saved = submit_tool_form(teacher, settings, valid_form(title="Photosynthesis, revised"))
    assert saved.status_code == 200 and "The settings were saved." in saved.text

    page = launch(student, placed.cmid)  # Moodle still calls the link "Photosynthesis"
    assert "<h1>Photosynthesis, revised</h1>" in page.text
    db.session.expire_all()
    assert db.session.query(Activity).one().title == "Photosynthesis, revised"
    # The gradebook column took the new name (AGS); Moodle's activity keeps its own.
    tool.wait_for(
        "the renamed column",
        lambda: (
            moodle.row(
                "SELECT itemname FROM mdl_grade_items"
                " WHERE itemmodule = 'lti' AND iteminstance = %s",
                placed.instance,
            )["itemname"]
            == "Photosynthesis, revised"
        ),
    )
    assert moodle.row("SELECT name FROM mdl_lti WHERE id = %s", placed.instance)["name"] == (
        "Photosynthesis"
    )


def test_the_teacher_page_through_moodle_shows_words_not_names(
    tool, teacher, student, moodle, type_id
):
    placed = add_activity(teacher, type_id, title="Labels", max_score="20")
    tool.llm.reply("Clear.\n\nFinal score: 15/20")
    assert upload(student, launch(student, placed.cmid), "essay.docx", docx_bytes()).status_code
    tool.wait_for("a graded submission", _graded)

    staff = launch(teacher, placed.cmid)
    page = text_of(staff.text)
    assert "Strategy: Overall judgement against the instructions" in page
    assert "rubric_eval" not in page
    assert "15 / 20" in page
    assert "of 2 students" in page  # the roster from Moodle: both students
    stats = text_of(teacher.http.get(str(staff.url) + "stats").text)
    assert "1 student has a score" in stats


def _graded() -> bool:
    db.session.expire_all()
    return db.session.query(Grade).count() == 1


def test_without_accept_grades_the_teacher_page_says_where_grades_go(
    tool, teacher, student, moodle, type_id
):
    """An activity saved with "Allow Evaluaitor to add grades in the gradebook" unticked (no
    deep linking): Moodle gives it no grade item, the tool makes its own column and says so."""
    course = moodle.course_id
    form_page = teacher.get(
        "/course/modedit.php", add="lti", course=course, section=1, typeid=type_id
    )
    fields = fill_by_id(
        find_form(form_page, "mform1"), {"name": "No grades", "instructorchoiceacceptgrades": False}
    )
    save_to_course(teacher, str(form_page.url), fields, form_page)
    placed = Placed(**moodle.row(PLACED_SQL, type_id))
    assert not moodle.rows(
        "SELECT id FROM mdl_grade_items WHERE itemmodule = 'lti' AND iteminstance = %s",
        placed.instance,
    )

    text = text_of(launch(teacher, placed.cmid).text)
    assert "will create the column “No grades”" in text

    tool.llm.reply("Final score: 7/10")
    assert upload(student, launch(student, placed.cmid), "essay.docx", docx_bytes()).status_code
    tool.wait_for("a graded submission", _graded)
    column = tool.wait_for(
        "the tool's own column",
        lambda: moodle.rows(
            "SELECT gi.itemname, gg.finalgrade FROM mdl_grade_items gi"
            " JOIN mdl_grade_grades gg ON gg.itemid = gi.id AND gg.userid = %s"
            " WHERE gi.courseid = %s AND gi.itemname = 'No grades' AND gg.finalgrade IS NOT NULL",
            student.account.id,
            course,
        ),
    )
    assert column[0]["finalgrade"] == 7  # a column of its own ("manual" item): no raw grade
    text = text_of(launch(teacher, placed.cmid).text)  # this launch carries the new column
    assert "Evaluaitor created the column “No grades” in the course gradebook" in text
