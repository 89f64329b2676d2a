"""The teacher's "Resend to gradebook" after Moodle refused a grade, and the cause was fixed."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import httpx
from sqlalchemy import select

from app.extensions import db
from app.models import PushStatus, ScorePush
from tests.documents import docx_bytes
from tests.moodle.flows import gradebook, launch, upload, wait_for_gradebook
from tests.moodle.site import Moodle, Person, forms, said
from tests.moodle.test_grades import add_activity

#: Manage tools → the tool's "IMS LTI Assignment and Grade Services" setting.
GRADE_SERVICE = "ltiservice_gradesynchronization"


@contextmanager
def grade_service_off(moodle: Moodle, type_id: int) -> Iterator[None]:
    """The tool's access to Moodle's gradebook revoked for a while: the admin sets its grade
    service to "Do not use this service" (Moodle then grants no score scope) and the access
    tokens Moodle issued are dropped (Moodle keeps honouring one until it expires)."""
    kept = moodle.row(
        "SELECT value FROM mdl_lti_types_config WHERE typeid = %s AND name = %s",
        type_id,
        GRADE_SERVICE,
    )["value"]
    update = "UPDATE mdl_lti_types_config SET value = %s WHERE typeid = %s AND name = %s"
    moodle.execute(update, "0", type_id, GRADE_SERVICE)
    moodle.execute("DELETE FROM mdl_lti_access_tokens WHERE typeid = %s", type_id)
    try:
        yield
    finally:
        moodle.execute(update, kept, type_id, GRADE_SERVICE)


def resend_button(page: httpx.Response, push: ScorePush) -> str:
    """The action of the teacher page's "Resend to gradebook" form for ``push``."""
    for form in forms(page):
        if form.action.endswith(f"/pushes/{push.id}/retry"):
            assert "Resend to gradebook" in form.text_content()
            return form.action
    raise AssertionError(f"no Resend button for push {push.id}: {said(page)}")


def latest_push(person: Person) -> ScorePush | None:
    db.session.expire_all()
    return db.session.scalar(
        select(ScorePush)
        .where(ScorePush.user.has(sub=str(person.account.id)))
        .order_by(ScorePush.id.desc())
        .limit(1)
    )


def test_a_refused_grade_lands_when_the_teacher_resends_it(tool, teacher, student, moodle, type_id):
    placed = add_activity(teacher, type_id, title="Resend", max_score="10")
    tool.llm.reply("Well argued.\n\nFinal score: 7/10")

    page = launch(student, placed.cmid)  # launched before: a launch then carries no AGS claim
    with grade_service_off(moodle, type_id):
        assert upload(student, page, "essay.docx", docx_bytes()).status_code == 303
        failed = tool.wait_for(
            "a push Moodle refused",
            lambda: (push := latest_push(student)) and push.status == PushStatus.FAILED and push,
        )
        # Its token gone (401), a new one is refused: no grade scope is left to grant.
        assert "HTTP 400" in failed.last_error and "invalid_scope" in failed.last_error
        assert gradebook(moodle, placed, student.account.id)["rawgrade"] is None

    staff = launch(teacher, placed.cmid)  # the cause fixed, the teacher looks
    action = resend_button(staff, failed)
    resent = teacher.submit(action, {}, staff)  # the button's form: no fields, same origin

    assert resent.status_code == 200 and str(resent.url).startswith(tool.url)
    row = wait_for_gradebook(tool, placed, student.account.id, lambda r: r["rawgrade"])
    assert (row["rawgrade"], row["grademax"]) == (7, 10)
    assert "Well argued." in row["feedback"]
    push = tool.wait_for(  # Moodle has it a moment before the tool records so
        "the push recorded as sent",
        lambda: (push := latest_push(student)).status == PushStatus.SENT and push,
    )
    assert (push.id, push.attempts, push.last_error) == (failed.id, 1, None)
    assert f"/pushes/{push.id}/retry" not in launch(teacher, placed.cmid).text
