"""What a school does with the tool through Moodle, step by step, and what Moodle then holds.

Each step goes through the pages (or the AJAX calls of the pages) a person uses; each
reading of a result goes to Moodle's database. See tests/moodle/__init__.py.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx
from flask import Flask

from app.extensions import db
from tests.conftest import registration_path
from tests.fakes.llm_server import FakeLLM
from tests.moodle.site import (
    Moodle,
    Person,
    amd_arguments,
    fill_by_id,
    find_form,
    form_fields,
    said,
)
from tests.test_deep_linking import valid_form
from tests.test_reliability import Stack

#: The gradebook column of an activity and its grade items (``itemmodule = 'lti'``).
GRADE_SQL = """
    SELECT gi.id AS item_id, gi.grademax, gg.rawgrade, gg.finalgrade, gg.feedback,
           gg.rawgrademax, gg.hidden, gg.timemodified
      FROM mdl_grade_items gi
      LEFT JOIN mdl_grade_grades gg ON gg.itemid = gi.id AND gg.userid = %s
     WHERE gi.itemtype = 'mod' AND gi.itemmodule = 'lti' AND gi.iteminstance = %s
"""


#: The activity form's fields that Moodle's deep-linking dialog fills from the tool's answer
#: (``LTI_FORM_FIELDS`` of mod/lti/amd/src/contentitem.js); the description is handled apart.
DIALOG_FIELDS = (
    "name",
    "toolurl",
    "securetoolurl",
    "instructorchoiceacceptgrades",
    "instructorchoicesendname",
    "instructorchoicesendemailaddr",
    "instructorcustomparameters",
    "icon",
    "secureicon",
    "launchcontainer",
    "grade_modgrade_point",
    "lineitemresourceid",
    "lineitemtag",
    "lineitemsubreviewurl",
    "lineitemsubreviewparams",
)


#: The newest activity of a tool type (each test registers its own type).
PLACED_SQL = """
    SELECT cm.id AS cmid, cm.instance
      FROM mdl_course_modules cm
      JOIN mdl_modules m ON m.id = cm.module AND m.name = 'lti'
      JOIN mdl_lti l ON l.id = cm.instance
     WHERE l.typeid = %s
     ORDER BY cm.id DESC LIMIT 1
"""


@dataclass
class Tool:
    """The tool under test: its public address, app, worker stack and model."""

    url: str
    app: Flask
    stack: Stack
    llm: FakeLLM
    moodle: Moodle

    @property
    def domain(self) -> str:
        return urlsplit(self.url).netloc

    def registration_link(self) -> str:
        """A one-time Dynamic Registration link for this Moodle, as an admin makes on /admin
        (or with ``evaluaitor registration-link``)."""
        return self.url + registration_path(self.moodle.url)

    def wait_for(self, what: str, check: Callable[[], Any], seconds: float = 60) -> Any:
        """Poll ``check`` (in the test's app context) until it returns something truthy."""
        return self.stack.wait_for(what, check, seconds)


@dataclass(frozen=True)
class Placed:
    """An activity placed in the course: Moodle's ids for it."""

    cmid: int
    instance: int


# -- the administrator ----------------------------------------------------------------------


def register(admin: Person, tool: Tool, *, update: int | None = None) -> int:
    """Dynamic Registration from Manage tools (``startltiadvregistration.php``); the tool
    type's id. ``update`` re-registers that type, as Moodle offers when the domain is known."""
    start = "/mod/lti/startltiadvregistration.php"
    params: dict[str, Any] = {"url": tool.registration_link(), "sesskey": admin.sesskey}
    page = admin.get(start, **params, type=-1 if update is None else update)
    if "type=0" in page.text:  # Moodle knows the domain: it asks whether to update a type
        page = admin.get(start, **params, type=0)
    assert page.status_code == 200 and str(page.url).startswith(tool.url), said(page)
    assert "close-registration" in page.text, said(page)
    return tool_type(tool.moodle, tool)["id"]


def tool_type(moodle: Moodle, tool: Tool) -> dict[str, Any]:
    """The newest tool type Moodle holds for the tool's domain."""
    return moodle.rows(
        "SELECT * FROM mdl_lti_types WHERE tooldomain = %s ORDER BY id DESC LIMIT 1", tool.domain
    )[0]


def activate(admin: Person, type_id: int) -> None:
    """The "Activate" button of a pending tool in Manage tools."""
    admin.get("/mod/lti/toolconfigure.php")  # the page whose script makes the call
    admin.ajax("mod_lti_update_tool_type", id=type_id, state=1)


# -- the teacher ----------------------------------------------------------------------------


def add_activity(teacher: Person, type_id: int, *, section: int = 1, **setup: Any) -> Placed:
    """Add an activity with the tool's "Select content" dialog (deep linking) and save it.

    ``setup`` changes the tool's setup form (tests.test_deep_linking.valid_form). Moodle's
    dialog posts the tool's answer to ``contentitem_return.php``, whose script fills the
    activity form; the same values are filled in here before the form is saved.
    """
    course = teacher.moodle.course_id
    form_page = teacher.get(
        "/course/modedit.php", add="lti", course=course, section=section, typeid=type_id
    )
    form = find_form(form_page, "mform1")
    setup_page = teacher.get(
        "/mod/lti/contentitem.php", id=type_id, course=course, title="", text=""
    )
    answer = submit_tool_form(teacher, setup_page, valid_form(**setup))
    chosen = amd_arguments(answer, "mod_lti/contentitem_return")
    assert chosen, said(answer)
    fields = fill_by_id(form, {name: chosen.get(name) for name in DIALOG_FIELDS})
    fields["introeditor[text]"] = (chosen.get("introeditor") or {}).get("text", "")
    save_to_course(teacher, form.action, fields, form_page)
    return Placed(**teacher.moodle.row(PLACED_SQL, type_id))


def save_to_course(
    teacher: Person, action: str, fields: dict[str, Any], page: httpx.Response
) -> httpx.Response:
    """Save an activity's form with "Save and return to course": the course page.

    When a grade item needs it, Moodle recalculates the course's grades on that page and
    shows a progress bar in its place; the page is then loaded again, as its button does.
    """
    saved = teacher.submit(action, fields | {"submitbutton2": "Save and return to course"}, page)
    for _ in range(10):
        if "Recalculating grades" not in saved.text:
            break
        saved = teacher.follow(teacher.http.get(str(saved.url)))
    assert saved.status_code == 200 and "/course/view.php" in str(saved.url), said(saved)
    return saved


def change_settings(teacher: Person, cmid: int, **changes: Any) -> httpx.Response:
    """The teacher opens the activity and saves the tool's Settings form with ``changes``."""
    staff = launch(teacher, cmid)
    page = teacher.follow(teacher.http.get(f"{staff.url}settings"))
    fields = form_fields(find_form(page, "setup-form")) | changes
    saved = submit_tool_form(teacher, page, fields)
    assert saved.status_code == 200 and "saved=1" in str(saved.url), said(saved)
    return saved


def submit_tool_form(
    person: Person, page: httpx.Response, fields: dict[str, Any]
) -> httpx.Response:
    """Post the tool's form on ``page`` (its setup or settings form) as a browser does."""
    return person.submit(str(page.url), fields, page, files={"none": ("", b"")})


# -- everyone -------------------------------------------------------------------------------


def launch(person: Person, cmid: int) -> httpx.Response:
    """Open the activity: Moodle's launch page, the OIDC login, the tool's page."""
    page = person.get("/mod/lti/launch.php", id=cmid, triggerview=0)
    assert page.status_code == 200, said(page)
    return page


def upload(person: Person, page: httpx.Response, filename: str, data: bytes) -> httpx.Response:
    """A student's upload on the tool's page ``page``."""
    return person.http.post(
        str(page.url) + "submissions",
        files={"file": (filename, data)},
        data={"comment": ""},
        headers={"Origin": str(page.url.copy_with(path="/", query=None)).rstrip("/")},
    )


def gradebook(moodle: Moodle, placed: Placed, user_id: int) -> dict[str, Any]:
    """What Moodle's gradebook holds for the activity and student: the column's maximum,
    the grade and the feedback (straight from ``mdl_grade_items``/``mdl_grade_grades``)."""
    return moodle.row(GRADE_SQL, user_id, placed.instance)


def wait_for_gradebook(
    tool: Tool, placed: Placed, user_id: int, check: Callable[[dict[str, Any]], bool]
) -> dict[str, Any]:
    """Moodle's row for the student once ``check`` holds (the worker pushes in the background)."""
    found: dict[str, Any] = {}

    def read() -> bool:
        found.update(gradebook(tool.moodle, placed, user_id))
        return check(found)

    tool.wait_for("Moodle's gradebook", read)
    return found


def settle(seconds: float = 0.2) -> None:
    """Let a background push that must not happen have its chance to happen."""
    db.session.expire_all()
    time.sleep(seconds)
