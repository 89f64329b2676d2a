"""Activity setup by LTI Deep Linking, over real HTTP with the fake Moodle: the teacher's
setup form, the signed answer the platform verifies, binding the new link, settings edits,
and the activity's upload rules."""

from __future__ import annotations

import json
import time
from html.parser import HTMLParser

import jwt as pyjwt
import pytest
import yaml

from app.extensions import db
from app.grading import registry
from app.lms.activities import rubric_from_text
from app.models import Activity, AuditEvent, Submission
from tests.conftest import register, run_jobs
from tests.documents import ESSAY, docx_bytes, pdf_bytes
from tests.fakes.platform import STUDENT, TEACHER, FakePlatform, browser_launch
from tests.fakes.platform.browser import parse_forms

TEACHER_ID = "1"
STUDENT_ID = "2"
RUBRIC_YAML = (
    "title: Essay rubric\n"
    "criteria:\n"
    "  - {name: Accuracy, requirement: The facts are correct., weight: 6}\n"
    "  - {name: Structure, requirement: Has an introduction and a conclusion., weight: 4}\n"
    "  - {name: Copying, requirement: Copies the task text., weight: -2}\n"
)


class Inputs(HTMLParser):
    """Every form control of a page by name, with its attributes (selects: their options)."""

    def __init__(self, page: str) -> None:
        super().__init__()
        self.controls: dict[str, dict[str, str | None]] = {}
        self.options: dict[str, list[str]] = {}
        self._select: str | None = None
        self.feed(page)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if tag in ("input", "select", "textarea") and values.get("name"):
            self.controls.setdefault(values["name"], {"tag": tag, **values})
            self._select = values["name"] if tag == "select" else None
        elif tag == "option" and self._select:
            self.options.setdefault(self._select, []).append(values.get("value") or "")


def start_setup(browser, platform, live_tool, **request) -> str:
    """A teacher's deep-linking launch; returns the setup page's path."""
    settings = platform.deep_linking.request(**request)
    response = browser_launch(
        browser, platform, live_tool, user=TEACHER_ID, roles=TEACHER, **settings
    )
    assert response.status_code == 303, response.text
    assert response.headers["Location"].endswith("/setup")
    return response.headers["Location"]


def valid_form(**changes) -> dict:
    form = {
        "title": "Photosynthesis essay",
        "instructions": "Explain photosynthesis in 300 words.",
        "max_score": "25",
        "plugin": "rubric_eval",
        "p.rubric_eval.temperature": "0.2",
        "model": "fake-model",
        "rubric": "",
        "accepted_kinds": ["pdf", "docx", "text", "markdown", "code"],
        "max_upload_mb": "",
        "max_attempts": "",
        "release_policy": "auto",
    }
    return form | changes


def post_form(browser, page: str, form: dict, files: dict | None = None):
    return browser.post(page, data=form, files=files or {"none": ("", b"")})


def return_to_platform(browser, answer_page) -> object:
    """What the browser does with the tool's answer page: post its form to the platform."""
    forms = parse_forms(answer_page.text, str(answer_page.url))
    assert len(forms) == 1 and set(forms[0].fields) == {"JWT"}
    return browser.post(forms[0].action, data=forms[0].fields)


def deep_link(browser, platform, live_tool, **form_changes) -> str:
    """The whole teacher side: deep link, fill the form, return; the new link's id."""
    page = start_setup(browser, platform, live_tool)
    answer = post_form(browser, page, valid_form(**form_changes))
    assert answer.status_code == 200, answer.text
    assert return_to_platform(browser, answer).status_code == 200
    (link_id,) = platform.deep_linking.links
    return link_id


def launch_link(browser, platform, live_tool, link_id: str, user: str = STUDENT_ID, **extra):
    settings = platform.deep_linking.launch(link_id) | extra
    response = browser_launch(browser, platform, live_tool, user=user, **settings)
    assert response.status_code == 303, response.text
    return response.headers["Location"]


def only_activity() -> Activity:
    db.session.expire_all()
    return db.session.query(Activity).one()


def test_deep_linked_activity_is_graded_onto_its_new_line_item(browser, platform, llm, live_tool):
    page = start_setup(browser, platform, live_tool, data="opaque-state-123")
    form = browser.get(page)
    assert form.status_code == 200
    draft = only_activity()
    assert draft.resource_link_id is None and draft.course_id is not None

    answer = post_form(browser, page, valid_form())
    assert answer.status_code == 200, answer.text
    assert "Return to the course" in answer.text and "setup_return.js" in answer.text
    returned = return_to_platform(browser, answer)
    assert returned.status_code == 200, returned.text

    claims = platform.deep_linking.answers[-1]["claims"]
    assert claims["https://purl.imsglobal.org/spec/lti-dl/claim/data"] == "opaque-state-123"
    (item,) = claims["https://purl.imsglobal.org/spec/lti-dl/claim/content_items"]
    activity = only_activity()
    assert item["type"] == "ltiResourceLink" and item["title"] == "Photosynthesis essay"
    assert item["url"] == f"{live_tool}/lti/launch"
    assert item["text"] == "Explain photosynthesis in 300 words."
    assert item["custom"] == {"activity": activity.public_id}
    assert item["lineItem"] == {
        "scoreMaximum": 25,
        "label": "Photosynthesis essay",
        "resourceId": activity.public_id,
        "tag": "evaluaitor",
    }
    (link_id,) = platform.deep_linking.links
    n = platform.deep_linking.links[link_id].lineitem_n
    assert platform.gradebook.lineitems[n].score_maximum == 25

    # A student opens the new link: it binds to the configured activity.
    llm.reply("Good.\n\nFinal score: 20/25")
    student = launch_link(browser, platform, live_tool, link_id)
    activity = only_activity()
    assert activity.resource_link_id == link_id
    assert activity.lineitem_url == platform.lineitem_url(n)
    assert "Explain photosynthesis" in browser.get(student).text
    submitted = browser.post(student + "submissions", files={"file": ("e.txt", ESSAY.encode())})
    assert submitted.status_code == 303
    run_jobs()
    grade = platform.grade_for(STUDENT_ID, n)
    assert grade["scoreGiven"] == 20 and grade["gradingProgress"] == "FullyGraded"
    assert "Maximum score: 25" in llm.requests[0]["messages"][1]["content"]


def test_the_platform_refuses_a_replayed_or_tampered_answer(browser, platform, live_tool):
    page = start_setup(browser, platform, live_tool)
    answer = post_form(browser, page, valid_form())
    assert return_to_platform(browser, answer).status_code == 200
    again = return_to_platform(browser, answer)
    assert again.status_code == 400 and "nonce" in again.text
    token = parse_forms(answer.text, str(answer.url))[0].fields["JWT"]
    header, body, signature = token.split(".")
    forged = browser.post(
        platform.deep_linking.return_url, data={"JWT": f"{header}.{body}x.{signature}"}
    )
    assert forged.status_code == 400
    assert len(platform.deep_linking.links) == 1


@pytest.mark.parametrize("plugin", [p.name for p in registry.all_plugins()])
def test_the_form_is_drawn_from_each_strategy_schema(browser, platform, live_tool, plugin):
    page = browser.get(start_setup(browser, platform, live_tool)).text
    controls = Inputs(page)
    schema = registry.get(plugin).Params.model_json_schema()
    assert plugin in controls.options["plugin"]
    for name, spec in schema["properties"].items():
        control = controls.controls[f"p.{plugin}.{name}"]
        if spec.get("description"):
            assert spec["description"].split("``")[0][:40] in page.replace("&#39;", "'")
        shape = next((b for b in spec.get("anyOf", []) if b.get("type") != "null"), spec)
        if "enum" in shape:
            assert control["tag"] == "select"
            assert set(shape["enum"]) <= set(controls.options[f"p.{plugin}.{name}"])
        elif shape.get("type") == "boolean":
            assert control["type"] == "checkbox"
        elif shape.get("type") in ("number", "integer"):
            assert control["type"] == "number"
            if "maximum" in shape:
                assert float(control["max"]) == shape["maximum"]
            if "minimum" in shape:
                assert float(control["min"]) == shape["minimum"]
            assert control["step"] == ("1" if shape["type"] == "integer" else "any")
        elif shape.get("type") == "string":
            assert control["tag"] in ("input", "textarea")
        else:  # nested: edited as JSON
            assert control["tag"] == "textarea" and control.get("class") == "code"


def test_switching_strategy_stores_its_own_settings(browser, platform, live_tool):
    page = start_setup(browser, platform, live_tool)
    form = valid_form(plugin="pipeline", **{"p.pipeline.retrieval_top_k": "7"})
    form["p.pipeline.summary"] = "1"  # analysis is left unticked
    assert post_form(browser, page, form).status_code == 200
    activity = only_activity()
    assert activity.plugin_name == "pipeline"
    assert activity.plugin_params == {"retrieval_top_k": 7, "summary": True}  # analysis: off


@pytest.mark.parametrize(
    ("changes", "field", "message"),
    [
        ({"p.rubric_eval.temperature": "5"}, "p-rubric_eval-temperature", "less than or equal"),
        ({"p.rubric_eval.max_chars": "many"}, "p-rubric_eval-max_chars", "valid integer"),
        ({"rubric": "criteria: [unclosed"}, "rubric", "not valid YAML"),
        ({"rubric": "- {name: A, requirement: B, weight: 0}"}, "rubric", "weight of 0"),
        ({"plugin": "criteria"}, "rubric", "needs a rubric"),
        ({"max_score": "-3"}, "max_score", "above 0"),
        ({"max_score": "ten"}, "max_score", "Enter a number"),
        ({"max_score": ""}, "max_score", "Enter a number"),
        ({"release_policy": "never"}, "release_policy", "must be one of"),
        ({"title": "   "}, "title", "Give the activity a title"),
        ({"max_upload_mb": "500"}, "max_upload_mb", "at most 20"),
        ({"max_attempts": "1.5"}, "max_attempts", "whole number"),
        ({"accepted_kinds": []}, "accepted_kinds", "at least one kind"),
        ({"accepted_kinds": ["exe"]}, "accepted_kinds", "Unknown file kinds"),
        (
            {"plugin": "criteria_tree", "p.criteria_tree.tree": "{not json"},
            "p-criteria_tree-tree",
            "not valid JSON",
        ),
        ({"plugin": "magic"}, "plugin", "no grading strategy named"),
    ],
)
def test_invalid_settings_are_shown_by_their_field_and_nothing_is_stored(
    browser, platform, live_tool, changes, field, message
):
    page = start_setup(browser, platform, live_tool)
    before = only_activity()
    stored = (before.title, before.plugin_name, before.max_score, before.rubric)
    form = valid_form(instructions="Typed by the teacher <kept>", **changes)
    response = post_form(browser, page, form)
    assert response.status_code == 400
    error = response.text.split(f'id="{field}-error">', 1)
    assert len(error) == 2, response.text
    assert message in error[1].split("</p>", 1)[0].replace("&#39;", "'")
    anchor = {"accepted_kinds": "kind-pdf", "release_policy": "release-auto"}.get(field, field)
    assert f'<a href="#{anchor}">' in response.text  # the summary links to the field
    assert f'id="{anchor}"' in response.text
    assert "Typed by the teacher &lt;kept&gt;</textarea>" in response.text
    assert 'aria-invalid="true"' in response.text
    after = only_activity()
    assert (after.title, after.plugin_name, after.max_score, after.rubric) == stored
    assert platform.deep_linking.answers == [] and "JWT" not in response.text


def test_rubric_is_imported_from_a_file_and_exported_back(browser, platform, live_tool):
    page = start_setup(browser, platform, live_tool)
    for name, text in [
        ("rubric.yaml", RUBRIC_YAML),
        ("rubric.json", json.dumps(yaml.safe_load(RUBRIC_YAML))),
    ]:
        response = post_form(
            browser,
            page,
            valid_form(plugin="criteria", rubric=""),
            files={"rubric_file": (name, text.encode())},
        )
        assert response.status_code == 200, response.text
        assert [c["weight"] for c in only_activity().rubric["criteria"]] == [6, 4, -2]

    settings = page.replace("/setup", "/settings")
    for fmt in ("yaml", "json"):
        exported = browser.get(settings.replace("/settings", f"/rubric.{fmt}"))
        assert exported.status_code == 200
        assert "attachment" in exported.headers["Content-Disposition"]
        assert rubric_from_text(exported.text).model_dump(mode="json") == only_activity().rubric
        # The export goes back in through the form unchanged.
        saved = browser.post(settings, data=valid_form(plugin="criteria", rubric=exported.text))
        assert saved.status_code == 303
    assert only_activity().rubric["title"] == "Essay rubric"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("!!python/object/apply:os.system ['echo hacked']", "not valid YAML"),
        ("criteria: !!python/name:os.system", "not valid YAML"),
        ("x" * 300_000, "too large"),
        (
            'a: &a ["x","x","x","x","x","x","x","x","x"]\n'
            "b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
            "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
            "d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
            "e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\n"
            "criteria: [*e,*e,*e,*e,*e,*e,*e,*e,*e]\n",
            "rubric has problems",
        ),
        ("just words", "list of criteria"),
        ('{"criteria": []}', "at least 1"),
        ("criteria: " + "[" * 20_000, "too deeply"),
    ],
    ids=["python-tag", "python-name", "huge", "alias-bomb", "scalar", "empty", "deep"],
)
def test_hostile_or_invalid_rubric_text_is_refused(browser, platform, live_tool, text, message):
    page = start_setup(browser, platform, live_tool)
    started = time.monotonic()
    parsed = browser.post(page.replace("/setup", "/rubric/parse"), data={"text": text})
    assert time.monotonic() - started < 5
    assert parsed.status_code == 400
    assert message in parsed.json()["message"]
    response = post_form(browser, page, valid_form(rubric=text))
    assert response.status_code == 400 and only_activity().rubric is None


def test_pasted_rubric_is_read_for_the_editor(browser, platform, live_tool):
    page = start_setup(browser, platform, live_tool)
    parsed = browser.post(page.replace("/setup", "/rubric/parse"), data={"text": RUBRIC_YAML})
    assert parsed.status_code == 200
    assert [c["name"] for c in parsed.json()["rubric"]["criteria"]] == [
        "Accuracy",
        "Structure",
        "Copying",
    ]


@pytest.mark.parametrize(
    ("name", "data"),
    [("notes.pdf", pdf_bytes()), ("notes.docx", docx_bytes()), ("notes.md", ESSAY.encode())],
)
def test_reference_material_is_extracted_for_the_pipeline(browser, platform, live_tool, name, data):
    page = start_setup(browser, platform, live_tool)
    form = valid_form(plugin="pipeline")
    response = post_form(browser, page, form, files={"reference_file": (name, data)})
    assert response.status_code == 200, response.text
    assert "Photosynthesis converts light energy" in only_activity().reference_text


def test_unreadable_reference_material_is_refused(browser, platform, live_tool):
    page = start_setup(browser, platform, live_tool)
    png = b"\x89PNG\r\n\x1a\n" + b"\0" * 100
    response = post_form(browser, page, valid_form(), files={"reference_file": ("a.pdf", png)})
    assert response.status_code == 400 and 'id="reference-error"' in response.text
    source = post_form(
        browser, page, valid_form(), files={"reference_file": ("a.py", b"print(1)\n")}
    )
    assert source.status_code == 400 and "PDF, Word, text or Markdown" in source.text
    assert only_activity().reference_text == ""


def test_a_student_deep_linking_launch_is_refused(browser, platform, live_tool):
    settings = platform.deep_linking.request()
    response = browser_launch(browser, platform, live_tool, roles=STUDENT, **settings)
    assert response.status_code == 403
    assert "Only teachers can add" in response.text
    assert db.session.query(Activity).count() == 0


def test_a_platform_that_takes_no_resource_links_is_told_clearly(browser, platform, live_tool):
    settings = platform.deep_linking.request(accept_types=["link", "html"])
    response = browser_launch(
        browser, platform, live_tool, user=TEACHER_ID, roles=TEACHER, **settings
    )
    assert response.status_code == 400
    assert "did not offer to accept one (ltiResourceLink)" in response.text


def test_the_setup_page_needs_a_deep_linking_launch(browser, platform, live_tool):
    response = browser_launch(browser, platform, live_tool, user=TEACHER_ID, roles=TEACHER)
    page = response.headers["Location"]
    refused = browser.get(page + "setup")
    assert refused.status_code == 400 and "setup page has expired" in refused.text
    # The settings page is open to teachers of any activity.
    assert browser.get(page + "settings").status_code == 200


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "setup"),
        ("POST", "setup"),
        ("GET", "settings"),
        ("POST", "settings"),
        ("POST", "rubric/parse"),
        ("GET", "rubric.yaml"),
    ],
)
def test_students_reach_no_setup_route(browser, platform, live_tool, method, path):
    student = browser_launch(browser, platform, live_tool).headers["Location"]
    before = only_activity().title
    response = browser.request(method, student + path, data=valid_form(title="Hijacked"))
    assert response.status_code == 403
    assert "Only teachers" in response.text
    assert only_activity().title == before
    forged = browser.request(method, f"/l/not-a-token/{path}", data=valid_form())
    assert forged.status_code == 401


def test_an_activity_id_from_another_platform_is_refused(browser, platform, live_tool):
    link_id = deep_link(browser, platform, live_tool)
    public_id = only_activity().public_id
    with FakePlatform(client_id="other-client", name="other") as other:
        other.tool_jwks_url = f"{live_tool}/lti/jwks"
        other.tool_redirect_uris = [f"{live_tool}/lti/launch"]
        register(other)
        response = browser_launch(
            browser,
            other,
            live_tool,
            resource_link_id=link_id,
            extra_claims={"https://purl.imsglobal.org/spec/lti/claim/custom": {
                "activity": public_id
            }},
        )  # fmt: skip
    assert response.status_code == 400
    assert "does not exist on this platform" in response.text
    assert db.session.query(Activity).count() == 1


def test_an_unknown_activity_id_is_refused(browser, platform, live_tool):
    custom = {"https://purl.imsglobal.org/spec/lti/claim/custom": {"activity": "0" * 32}}
    response = browser_launch(browser, platform, live_tool, extra_claims=custom)
    assert response.status_code == 400
    assert "does not exist on this platform" in response.text
    assert db.session.query(Activity).count() == 0


def test_a_platform_that_takes_no_line_item_gets_a_link_without_one(
    browser, platform, llm, live_tool
):
    page = start_setup(browser, platform, live_tool, accept_lineitem=False)
    answer = post_form(browser, page, valid_form())
    assert return_to_platform(browser, answer).status_code == 200
    (item,) = platform.deep_linking.answers[-1]["claims"][
        "https://purl.imsglobal.org/spec/lti-dl/claim/content_items"
    ]
    assert "lineItem" not in item and item["custom"] == {"activity": only_activity().public_id}
    (link_id,) = platform.deep_linking.links
    llm.reply("Final score: 12.5/25")  # asked on the activity's maximum
    student = launch_link(browser, platform, live_tool, link_id)
    browser.post(student + "submissions", files={"file": ("e.txt", ESSAY.encode())})
    run_jobs()
    # The first grade made the column through AGS, with the activity's maximum.
    n = platform.lineitem_for_link(link_id)
    assert platform.gradebook.lineitems[n].score_maximum == 25
    assert platform.grade_for(STUDENT_ID, n)["scoreGiven"] == 12.5


def test_a_copied_course_gets_its_own_activity_with_the_settings(browser, platform, live_tool):
    link_id = deep_link(browser, platform, live_tool, rubric=RUBRIC_YAML, release_policy="hold_all")
    launch_link(browser, platform, live_tool, link_id)
    original = only_activity()
    copy_page = launch_link(
        browser, platform, live_tool, link_id, resource_link_id="copied-link", lineitem=True
    )
    db.session.expire_all()
    first, copy = db.session.query(Activity).order_by(Activity.id).all()
    assert (first.id, first.resource_link_id) == (original.id, link_id)
    assert copy.resource_link_id == "copied-link" and copy.public_id != first.public_id
    for name in ("title", "instructions", "plugin_name", "rubric", "release_policy"):
        assert getattr(copy, name) == getattr(first, name)  # the copy's link has its title
    assert copy.max_score is None  # its own column's, read before grading (as on Moodle)
    assert "Photosynthesis essay" in browser.get(copy_page).text
    # Launching the first link again still opens the original.
    launch_link(browser, platform, live_tool, link_id)
    assert db.session.query(Activity).count() == 2


def test_a_copy_is_named_as_the_platform_names_it(browser, platform, live_tool):
    """Moodle's duplicate is "… (copy)"; its page showed the original's title as renamed in
    the tool since."""
    link_id = deep_link(browser, platform, live_tool)
    launch_link(browser, platform, live_tool, link_id)
    original = only_activity()
    original.title = "Photosynthesis, revised"  # renamed in the tool's settings
    db.session.commit()
    copy_page = launch_link(
        browser, platform, live_tool, link_id, resource_link_id="dup", title="Essay (copy)"
    )
    db.session.expire_all()
    first, copy = db.session.query(Activity).order_by(Activity.id).all()
    assert (first.title, copy.title) == ("Photosynthesis, revised", "Essay (copy)")
    page = browser.get(copy_page).text
    assert "Essay (copy)" in page and "revised" not in page
    # Later launches do not rename it: the tool owns the title from then on.
    launch_link(browser, platform, live_tool, link_id, resource_link_id="dup", title="Renamed")
    db.session.expire_all()
    assert db.session.get(Activity, copy.id).title == "Essay (copy)"


def test_settings_edits_are_audited(browser, platform, live_tool):
    link_id = deep_link(browser, platform, live_tool)
    assert db.session.query(AuditEvent).count() == 0  # the first setup is not an edit
    page = launch_link(browser, platform, live_tool, link_id, user=TEACHER_ID, roles=TEACHER)
    settings_path = page.removeprefix(live_tool) + "settings"
    assert f'href="{settings_path}"' in browser.get(page).text  # the teacher page links there
    settings = browser.get(page + "settings")
    controls = Inputs(settings.text).controls
    assert controls["title"]["value"] == "Photosynthesis essay"
    assert controls["max_score"]["value"] == "25"

    saved = browser.post(
        page + "settings", data=valid_form(max_score="40", release_policy="hold_flagged")
    )
    assert saved.status_code == 303
    assert "The settings were saved" in browser.get(saved.headers["Location"]).text
    event = db.session.query(AuditEvent).one()
    teacher = db.session.get(Activity, only_activity().id)
    assert event.action == "settings" and event.activity_id == teacher.id
    assert event.actor.sub == TEACHER_ID
    assert event.details == {
        "before": {"max_score": 25.0, "release_policy": "auto"},
        "after": {"max_score": 40.0, "release_policy": "hold_flagged"},
    }
    # Saving the same settings again changes nothing and records nothing.
    browser.post(page + "settings", data=valid_form(max_score="40", release_policy="hold_flagged"))
    assert db.session.query(AuditEvent).count() == 1


def test_uploads_follow_the_activity_kinds_and_size_limit(browser, platform, live_tool, llm):
    link_id = deep_link(browser, platform, live_tool, accepted_kinds=["pdf"], max_upload_mb="0.05")
    page = launch_link(browser, platform, live_tool, link_id)
    student_page = browser.get(page).text
    assert 'accept=".pdf"' in student_page and "0.05 MB" in student_page

    text = browser.post(page + "submissions", files={"file": ("essay.txt", ESSAY.encode())})
    assert text.status_code == 400 and "only accepts: PDF" in text.text
    renamed = browser.post(page + "submissions", files={"file": ("essay.pdf", ESSAY.encode())})
    assert renamed.status_code == 400
    large = browser.post(
        page + "submissions", files={"file": ("essay.pdf", pdf_bytes(padding=80_000))}
    )
    assert large.status_code == 413 and "0.05 MB" in large.text
    assert db.session.query(Submission).count() == 0
    fine = browser.post(page + "submissions", files={"file": ("essay.pdf", pdf_bytes())})
    assert fine.status_code == 303
    assert db.session.query(Submission).count() == 1


def test_the_cli_checks_the_new_settings_with_the_same_rules(app, browser, platform, live_tool):
    from click.testing import CliRunner
    from flask.cli import ScriptInfo

    from app.cli import cli

    deep_link(browser, platform, live_tool)
    activity_id = str(only_activity().id)

    def invoke(*args: str):
        info = ScriptInfo(create_app=lambda: app)
        return CliRunner().invoke(cli, ["activity", "configure", activity_id, *args], obj=info)

    refused = invoke("--max-score", "lots", "--kinds", "pdf,exe", "--max-upload-mb", "999")
    assert refused.exit_code == 1
    for field in ("max_score: Enter a number", "accepted_kinds: Unknown", "max_upload_mb"):
        assert field in refused.output
    assert only_activity().max_score == 25 and only_activity().accepted_kinds == []

    done = invoke("--max-score", "12", "--kinds", "pdf, docx", "--max-attempts", "3")
    assert done.exit_code == 0, done.output
    activity = only_activity()
    assert (activity.max_score, activity.accepted_kinds, activity.max_attempts) == (
        12,
        ["docx", "pdf"],
        3,
    )
    event = db.session.query(AuditEvent).one()
    assert event.actor_id is None and event.details["after"]["max_attempts"] == 3
    cleared = invoke("--max-attempts", "", "--kinds", "")
    assert cleared.exit_code == 0 and only_activity().max_attempts is None
    assert only_activity().accepted_kinds == []


LTI = "https://purl.imsglobal.org/spec/lti/claim/"


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"aud": ["https://elsewhere.example"]}, "Audience doesn't match"),
        ({"iss": "another-client"}, "Invalid issuer"),
        ({"exp": 1_000_000}, "expired"),
        ({"iat": 4_000_000_000, "exp": 4_000_000_600}, "not yet valid (iat)"),
        ({"nonce": ""}, "nonce"),
        ({LTI + "deployment_id": "99"}, "deployment_id"),
        ({LTI + "message_type": "LtiResourceLinkRequest"}, "message_type"),
        ({LTI + "version": "1.1"}, "version"),
        ({"https://purl.imsglobal.org/spec/lti-dl/claim/data": "forged"}, "was not sent"),
        ({"kid": "unpublished"}, "not in the tool's JWKS"),
    ],
)
def test_the_platform_verifies_the_answer_strictly(
    app, browser, platform, live_tool, change, reason
):
    from app.lti import keys

    page = start_setup(browser, platform, live_tool)
    answer = post_form(browser, page, valid_form())
    genuine = parse_forms(answer.text, str(answer.url))[0].fields["JWT"]
    claims = pyjwt.decode(genuine, options={"verify_signature": False}) | change
    key = keys.active_key(app.config["EVALUAITOR_KEY_DIR"])
    kid = claims.pop("kid", key.kid)
    token = pyjwt.encode(claims, key.private_pem, algorithm="RS256", headers={"kid": kid})
    response = browser.post(platform.deep_linking.return_url, data={"JWT": token})
    assert response.status_code == 400
    assert reason in response.text
    assert platform.deep_linking.links == {}


def test_a_strategy_sending_work_to_a_model_the_school_forbids_is_refused(
    app, browser, platform, llm, live_tool
):
    """The organization allows only its own server: the form says so at setup, by the
    strategy, and saves nothing; program tests need no model and are saved. The settings
    page and the CLI go through the same rules (app.lms.activities.configure)."""
    from app import tenants
    from app.models import Platform

    organization = db.session.query(Platform).one().organization
    tenants.set_model_base_urls(organization, ["https://llm.school.example/v1"])
    db.session.commit()
    page = start_setup(browser, platform, live_tool)
    response = post_form(browser, page, valid_form())
    assert response.status_code == 400
    error = response.text.split('id="plugin-error">', 1)[1].split("</p>", 1)[0]
    assert "This organization only allows models at https://llm.school.example:443/v1" in error
    assert platform.deep_linking.answers == [] and only_activity().title != "Photosynthesis essay"

    tree = '{"base": {"children": [{"name": "long", "test": {"kind": "word_count", "min": 5}}]}}'
    saved = post_form(
        browser, page, valid_form(plugin="criteria_tree", **{"p.criteria_tree.tree": tree})
    )
    assert saved.status_code == 200, saved.text
    assert only_activity().plugin_name == "criteria_tree" and llm.requests == []
