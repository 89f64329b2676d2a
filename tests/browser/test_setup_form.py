"""The setup form's scripts in Chromium: strategy switching, the rubric editor (add, reorder,
remove, paste import, export) and the automatic return of the signed answer to the LMS."""

from __future__ import annotations

import json
from pathlib import Path

from playwright.sync_api import expect

from app.extensions import db
from app.lms.activities import rubric_from_text
from app.models import Activity
from tests.browser.conftest import screenshot
from tests.fakes.platform import TEACHER, browser_launch

PASTED = (
    "criteria:\n"
    "  - {name: A, requirement: First., weight: 1}\n"
    "  - {name: B, requirement: Second., weight: 2}\n"
)


def test_teacher_sets_up_an_activity_with_the_rubric_editor(page, browser, platform, live_tool):
    settings = platform.deep_linking.request()
    launch = browser_launch(browser, platform, live_tool, user="1", roles=TEACHER, **settings)
    page.goto(live_tool + launch.headers["Location"])

    # Only the chosen strategy's settings show.
    expect(page.locator("fieldset.strategy[data-plugin=rubric_eval]")).to_be_visible()
    expect(page.locator("fieldset.strategy[data-plugin=criteria]")).to_be_hidden()
    page.get_by_label("Grading strategy").select_option("criteria")
    expect(page.locator("fieldset.strategy[data-plugin=criteria]")).to_be_visible()
    expect(page.locator("fieldset.strategy[data-plugin=rubric_eval]")).to_be_hidden()

    # The editor replaces the plain text field.
    expect(page.locator("#rubric")).to_be_hidden()
    page.get_by_label("Paste a rubric (YAML or JSON)").fill(PASTED)
    page.get_by_role("button", name="Import the pasted rubric").click()
    expect(page.get_by_label("Name of criterion 2")).to_have_value("B")
    page.get_by_role("button", name="Add a criterion").click()
    page.get_by_label("Name of criterion 3").fill("C")
    page.get_by_label("Requirement of criterion 3").fill("Third.")
    page.get_by_label("Weight of criterion 3").fill("-1")
    page.get_by_role("button", name="Move up: criterion 3").click()
    expect(page.get_by_role("status").filter(has_text="position 2")).to_be_visible()
    page.get_by_role("button", name="Remove: criterion 1").click()
    stored = json.loads(page.locator("#rubric").input_value())
    assert [(c["name"], c["weight"]) for c in stored["criteria"]] == [("C", -1), ("B", 2)]

    with page.expect_download() as download:
        page.get_by_role("button", name="Export as YAML").click()
    exported = rubric_from_text(Path(download.value.path()).read_text(encoding="utf-8"))
    assert [c.name for c in exported.criteria] == ["C", "B"]

    page.get_by_label("Title", exact=True).fill("Lab report")
    page.get_by_label("Maximum score").fill("30")
    screenshot(page, "setup")
    page.get_by_role("button", name="Add the activity to the course").click()
    # The answer page posts itself to the platform.
    expect(page.get_by_text("Added to the course")).to_be_visible()
    (link,) = platform.deep_linking.links.values()
    assert link.title == "Lab report"
    assert platform.gradebook.lineitems[link.lineitem_n].score_maximum == 30
    db.session.expire_all()
    activity = db.session.query(Activity).one()
    assert [c["name"] for c in activity.rubric["criteria"]] == ["C", "B"]
