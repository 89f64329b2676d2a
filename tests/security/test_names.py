"""Spoofed names (issue item 5): a file name, a student's name, an activity title, a rubric
criterion, a platform's or an organization's name with a right-to-left override or other
hidden characters is shown without them, on every page and in everything sent out."""

from __future__ import annotations

import csv
import io
import json
import unicodedata

import pytest

from app import tenants
from app.extensions import db
from app.models import Evaluation, GradingJob, Platform, Submission
from app.text import clean_filename, clean_name, clean_text, reveal_hidden
from tests.api.conftest import make_tenant, submit
from tests.conftest import run_jobs
from tests.documents import pdf_bytes
from tests.fakes.platform import TEACHER
from tests.test_admin import TOKEN, sign_in
from tests.test_core_loop import open_activity, upload
from tests.test_strategies_loop import LIGHT, configure

RLO, LRI, PDI, ZWSP, SHY, BOM, LRM, ALM = (
    "\u202e",
    "\u2066",
    "\u2069",
    "\u200b",
    "\u00ad",
    "\ufeff",
    "\u200e",
    "\u061c",
)
#: Reads as "reportpdf.png" when shown raw; its real extension is .pdf.
FILENAME = f"{ZWSP}report{RLO}gnp{PDI}{SHY}.pdf"
SAFE_FILENAME = "reportgnp.pdf"
TITLE = f"Essay{RLO} 1{BOM}"
CRITERION = f"Accuracy{LRI}{ALM}"


def hidden(text: str) -> set[str]:
    """The characters of ``text`` a reader cannot see that change what they see."""
    return {
        char
        for char in text
        if unicodedata.category(char) in ("Cf", "Co", "Cs")
        or (unicodedata.category(char) == "Cc" and char not in "\n\r\t")
    }


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        (f"essay{RLO}fdp.exe", "essayfdp.exe"),
        (f"{LRM}Ana{ZWSP} {LRI}María{PDI}", "Ana María"),
        ("Jos\u0065\u0301", "José"),  # NFC: one code point for é
        ("line\nbreak\ttab\x07bell", "line break tab bell"),
        ("\ue000private\udc80", "private"),
        (None, ""),
    ],
)
def test_the_rule_removes_hidden_characters(raw, shown):
    assert clean_name(raw) == shown
    assert unicodedata.is_normalized("NFC", clean_name(raw))


def test_evidence_shows_hidden_characters_as_code_points():
    assert reveal_hidden(f"a{RLO}b{ZWSP}\x07c\n\td") == "a[U+202E]b[U+200B][U+0007]c\n\td"
    assert reveal_hidden(None) == ""


def test_file_names_keep_their_extension_and_lose_their_folders():
    assert clean_filename(f"C:\\Users\\eve\\{FILENAME}") == SAFE_FILENAME
    long_name = clean_filename("a" * 400 + RLO + ".docx")
    assert len(long_name) == 255 and long_name.endswith("a.docx")
    assert clean_text(f"first{RLO}\r\nsecond\u2028third\tend") == "first\nsecond\nthird\tend"


def test_hidden_characters_reach_no_page_file_name_export_or_gradebook(
    browser, platform, llm, live_tool
):
    platform.enrol("2", given_name=f"Eve{RLO}", family_name=f"{LRI}Doe{PDI}")
    page = open_activity(browser, platform, live_tool, title=TITLE)
    rubric = {"criteria": [{"name": CRITERION, "requirement": "Explains it.", "weight": 10}]}
    configure(plugin_name="criteria", plugin_params={"mode": "one_shot"}, rubric=rubric)
    # The model quotes the file name in its reason: it reaches the feedback and the gradebook.
    reason = f"Well explained in {FILENAME}."
    llm.reply(json.dumps({"C1": {"verdict": "MET", "reason": reason, "evidence": LIGHT}}))
    assert upload(browser, page, FILENAME, pdf_bytes()).status_code == 303
    run_jobs()

    submission = db.session.query(Submission).one()
    assert submission.original_filename == SAFE_FILENAME
    student_page = browser.get(page).text
    staff = open_activity(browser, platform, live_tool, user="3", roles=TEACHER, title=TITLE)
    teacher_page = browser.get(staff).text
    detail_page = browser.get(f"{staff}submissions/{submission.id}").text
    for html in (student_page, teacher_page, detail_page):
        assert hidden(html) == set()
    assert "Essay 1" in student_page and "Essay 1" in teacher_page
    assert SAFE_FILENAME in student_page and SAFE_FILENAME in detail_page
    assert "Eve Doe" in teacher_page and "Eve Doe" in detail_page
    assert "Accuracy" in detail_page
    # The prompt as sent is evidence: the title's hidden characters are written out, not lost.
    assert "Essay[U+202E] 1[U+FEFF]" in detail_page

    download = browser.get(f"{staff}submissions/{submission.id}/file")
    assert download.headers["Content-Disposition"] == "attachment; filename=attempt1-reportgnp.pdf"
    export = browser.get(staff + "gradebook.csv").text
    assert hidden(export) == set()
    assert next(csv.DictReader(io.StringIO(export)))["student"] == "Eve Doe"

    comments = [s["comment"] for s in platform.scores if s.get("gradingProgress") == "FullyGraded"]
    assert comments and SAFE_FILENAME in comments[-1] and "Accuracy" in comments[-1]
    assert hidden(comments[-1]) == set()


def test_a_review_reason_naming_a_criterion_is_shown_clean(browser, platform, llm, live_tool):
    """Review reasons name the criteria they are about (points without evidence, unreadable
    replies), with whatever the teacher typed in their names: shown without the hidden ones."""
    page = open_activity(browser, platform, live_tool, title=TITLE)
    rubric = {"criteria": [{"name": CRITERION, "requirement": "Explains it.", "weight": 10}]}
    configure(plugin_name="criteria", plugin_params={"mode": "one_shot"}, rubric=rubric)
    llm.reply(json.dumps({"C1": {"verdict": "MET", "reason": "Good.", "evidence": ""}}))
    assert upload(browser, page, "essay.pdf", pdf_bytes()).status_code == 303
    run_jobs()

    submission = db.session.query(Submission).one()
    assert CRITERION in submission.review_reason  # stored as the grader wrote it
    staff = open_activity(browser, platform, live_tool, user="3", roles=TEACHER, title=TITLE)
    detail = browser.get(f"{staff}submissions/{submission.id}").text
    for html in (browser.get(staff).text, detail):
        assert "without a passage of the work" in html
        assert hidden(html) == set()
    # The criterion's row says in words that its evidence was not verified.
    assert "Evidence not verified:" in detail and "no quote was given" in detail


def test_stored_names_from_before_are_shown_clean(browser, platform, llm, live_tool):
    """Rows written before names were cleaned at upload are cleaned where they are shown."""
    llm.set_default("Final score: 8/10")
    page = open_activity(browser, platform, live_tool)
    upload(browser, page, "essay.pdf", pdf_bytes())
    db.session.query(GradingJob).update({"original_filename": FILENAME})
    db.session.commit()
    submission = db.session.query(Submission).one()
    student_page = browser.get(page).text
    assert hidden(student_page) == set() and SAFE_FILENAME in student_page
    staff = open_activity(browser, platform, live_tool, user="3", roles=TEACHER)
    download = browser.get(f"{staff}submissions/{submission.id}/file")
    assert download.headers["Content-Disposition"] == "attachment; filename=attempt1-reportgnp.pdf"


def test_the_api_stores_and_lists_the_clean_file_name(live_tool):
    tenant = make_tenant(live_tool, "school-a")
    with tenant.client:
        response = submit(tenant.client, FILENAME, pdf_bytes())
        assert response.status_code == 202, response.text
        assert db.session.query(Evaluation).one().original_filename == SAFE_FILENAME
        db.session.query(GradingJob).update({"original_filename": f"old{RLO}fdp.exe"})
        db.session.commit()
        listed = tenant.client.get("/evaluations").json()
    assert hidden(json.dumps(listed, ensure_ascii=False)) == set()
    assert listed["items"][0]["original_filename"] == "oldfdp.exe"


def test_platform_and_organization_names_are_shown_clean_to_the_admin(app, browser):
    app.config["EVALUAITOR_ADMIN_TOKEN"] = TOKEN
    platform = Platform(
        name=f"Moodle{RLO}elgooG",  # Dynamic Registration takes the name the LMS sends
        issuer=f"https://lms.example{ZWSP}.edu",
        client_id=f"client{BOM}",
        auth_login_url="https://lms.example.edu/auth",
        auth_token_url="https://lms.example.edu/token",
        key_set_url="https://lms.example.edu/jwks",
    )
    db.session.add(platform)
    organization = tenants.attach_platform(platform)
    db.session.commit()
    assert organization.name == "MoodleelgooG"  # cleaned on the way in
    tenants.upsert_organization(f"school{LRM}-b", name=f"School{LRI} B{PDI}")
    db.session.commit()
    assert sign_in(browser).status_code == 303
    html = browser.get("/admin/").text
    assert hidden(html) == set()
    assert "MoodleelgooG" in html and "School B" in html and "school-b" in html
