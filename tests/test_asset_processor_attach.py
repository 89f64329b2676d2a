"""Attaching Evaluaitor to an LMS assignment as an LTI Asset Processor, over real HTTP with a
Canvas-like fake: the deep-linking request of "Add Document Processing App", the notice
handler registered with the Platform Notification Service before the answer, the
``ltiAssetProcessor`` item (only when offered), the settings launch, the report review launch
for teachers and students, and the tenancy rules of each."""

from __future__ import annotations

import io

import jwt as pyjwt
import pytest

from app.extensions import db
from app.lms import submissions
from app.models import Activity, Deployment, LtiUser, Platform, Submission
from app.models.lti import ASSET_PROCESSOR
from tests.conftest import register, run_jobs
from tests.documents import ESSAY
from tests.fakes.platform import STUDENT, TEACHER, FakePlatform, browser_launch
from tests.fakes.platform.browser import parse_forms
from tests.fakes.platform.vocab import LTI_CLAIM
from tests.test_deep_linking import post_form, return_to_platform, valid_form

TEACHER_ID = "1"
STUDENT_ID = "2"
NOTICE = "LtiAssetProcessorSubmissionNotice"
CONTENT_ITEMS = "https://purl.imsglobal.org/spec/lti-dl/claim/content_items"
#: A grade on the activity's maximum (25, as valid_form sets it).
REPLY = "Clear and accurate.\n\nFinal score: 20/25"


def start_attach(browser, platform, live_tool, **request) -> str:
    """A teacher's "Add Document Processing App"; the setup page's path."""
    settings = platform.processors.attach_request(**request)
    response = browser_launch(
        browser, platform, live_tool, user=TEACHER_ID, roles=TEACHER, **settings
    )
    assert response.status_code == 303, response.text
    assert response.headers["Location"].endswith("/setup")
    return response.headers["Location"]


def answered_items(answer_page) -> list[dict]:
    """The content items of the tool's signed answer, as the page would post them."""
    (form,) = parse_forms(answer_page.text, str(answer_page.url))
    claims = pyjwt.decode(form.fields["JWT"], options={"verify_signature": False})
    return claims[CONTENT_ITEMS]


def attach(browser, platform, live_tool, **form_changes) -> tuple[Activity, int]:
    """The whole teacher side; the processor's activity and the platform's processor number."""
    page = start_attach(browser, platform, live_tool)
    answer = post_form(browser, page, valid_form(**form_changes))
    assert answer.status_code == 200, answer.text
    assert return_to_platform(browser, answer).status_code == 200
    (n,) = platform.processors.attached
    return processor_activity(), n


def processor_activity() -> Activity:
    db.session.expire_all()
    return db.session.query(Activity).filter_by(placement=ASSET_PROCESSOR).one()


def launch(browser, platform, live_tool, user: str, roles: list[str], settings: dict):
    return browser_launch(browser, platform, live_tool, user=user, roles=roles, **settings)


# -- attaching ---------------------------------------------------------------------------


def test_attach_registers_the_notice_handler_before_answering(browser, platform, live_tool):
    page = start_attach(browser, platform, live_tool, assignment_id="assignment-7")
    draft = processor_activity()
    assert draft.lms_activity_id == "assignment-7"
    assert draft.notice_service_url == platform.processors.notice_service_url()
    assert draft.resource_link_id is None
    setup_page = browser.get(page)
    assert setup_page.status_code == 200
    assert "Attach Evaluaitor to the assignment" in setup_page.text
    assert "out of this maximum" in setup_page.text  # no gradebook column for a processor
    assert "gradebook column" not in setup_page.text

    answer = post_form(browser, page, valid_form(title="Essay feedback"))

    assert answer.status_code == 200, answer.text
    # The LMS holds the handler before the answer has even reached the browser.
    held = platform.processors.handlers[platform.deployment_id]
    assert held == {NOTICE: f"{live_tool}/lti/notices"}
    (put,) = platform.processors.pns_requests
    assert put["method"] == "PUT" and put["body"]["notice_type"] == NOTICE
    activity = processor_activity()
    launch_url = f"{live_tool}/lti/launch"
    custom = {"activity": activity.public_id}
    assert answered_items(answer) == [
        {
            "type": "ltiAssetProcessor",
            "title": "Essay feedback",
            "text": "Explain photosynthesis in 300 words.",
            "url": launch_url,
            "custom": custom,
            "report": {"url": launch_url, "custom": custom},
        }
    ]
    assert return_to_platform(browser, answer).status_code == 200
    (processor,) = platform.processors.attached.values()
    assert (processor.assignment_id, processor.custom) == ("assignment-7", custom)
    assert not platform.deep_linking.links  # no course link was made


@pytest.mark.parametrize(
    ("fault", "times", "body"),
    [
        (500, 1, None),  # the LMS fails
        (401, 2, None),  # the token is refused (twice: the client tries a fresh one)
        # The LMS answers 200 but holds another handler: the tool checks the answer.
        (200, 1, {"notice_handlers": [{"notice_type": NOTICE, "handler": "https://else/x"}]}),
    ],
)
def test_a_failed_registration_attaches_nothing(browser, platform, live_tool, fault, times, body):
    page = start_attach(browser, platform, live_tool)
    platform.fail_next("notice_handlers", fault, times=times, body=body)

    refused = post_form(browser, page, valid_form(title="Saved anyway"))

    assert refused.status_code == 502
    assert 'id="attach-error"' in refused.text and "noticehandlers" in refused.text
    assert "JWT" not in refused.text  # nothing the browser could send to the LMS
    assert not platform.deep_linking.answers and not platform.processors.attached
    draft = processor_activity()
    assert draft.title == "Saved anyway" and draft.resource_link_id is None

    again = post_form(browser, page, valid_form(title="Saved anyway"))  # the LMS is back
    assert again.status_code == 200, again.text
    assert [i["type"] for i in answered_items(again)] == ["ltiAssetProcessor"]
    assert platform.processors.handlers[platform.deployment_id][NOTICE].endswith("/lti/notices")


@pytest.mark.parametrize(
    ("claim", "words"),
    [
        (LTI_CLAIM + "activity", "did not say which one"),
        (LTI_CLAIM + "platformnotificationservice", "noticehandlers scope"),
    ],
)
def test_a_processor_request_without_what_it_needs_is_refused(
    browser, platform, live_tool, claim, words
):
    settings = platform.processors.attach_request(drop_claims=(claim,))
    response = launch(browser, platform, live_tool, TEACHER_ID, TEACHER, settings)
    assert response.status_code == 400
    assert words in response.text
    assert db.session.query(Activity).count() == 0


def test_a_request_offering_both_types_without_an_assignment_gets_a_link(
    browser, platform, live_tool
):
    settings = platform.deep_linking.request(accept_types=["ltiResourceLink", "ltiAssetProcessor"])
    response = launch(browser, platform, live_tool, TEACHER_ID, TEACHER, settings)
    answer = post_form(browser, response.headers["Location"], valid_form())
    assert [i["type"] for i in answered_items(answer)] == ["ltiResourceLink"]
    assert not platform.processors.pns_requests
    assert db.session.query(Activity).one().placement == "link"


def test_a_request_offering_no_type_the_tool_makes_is_refused(browser, platform, live_tool):
    settings = platform.processors.attach_request(accept_types=["file", "html"])
    response = launch(browser, platform, live_tool, TEACHER_ID, TEACHER, settings)
    assert response.status_code == 400
    assert db.session.query(Activity).count() == 0


def test_the_fake_refuses_an_item_type_it_did_not_offer(browser, platform, live_tool):
    """The platform side checks what a tool could get wrong: a processor item in answer to a
    course-link request is refused, as the spec requires of a platform."""
    settings = platform.deep_linking.request()  # offers ltiResourceLink only
    data = settings["extra_claims"][
        "https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings"
    ]["data"]
    with pytest.raises(Exception, match="was not offered"):
        platform.deep_linking._make_links(
            {
                "https://purl.imsglobal.org/spec/lti-dl/claim/data": data,
                CONTENT_ITEMS: [{"type": "ltiAssetProcessor", "title": "x"}],
            }
        )


def test_a_student_cannot_attach(browser, platform, live_tool):
    settings = platform.processors.attach_request()
    response = launch(browser, platform, live_tool, STUDENT_ID, STUDENT, settings)
    assert response.status_code == 403
    assert db.session.query(Activity).count() == 0


# -- the settings launch -----------------------------------------------------------------


def test_the_settings_launch_edits_the_same_activity(browser, platform, live_tool):
    activity, n = attach(browser, platform, live_tool, title="First title")

    response = launch(
        browser, platform, live_tool, TEACHER_ID, TEACHER, platform.processors.settings_launch(n)
    )

    assert response.status_code == 303, response.text
    page = response.headers["Location"]
    assert page.endswith("/settings")
    assert "First title" in browser.get(page).text
    saved = browser.post(page, data=valid_form(title="Renamed"), files={"none": ("", b"")})
    assert saved.status_code == 303
    assert "The settings were saved." in browser.get(saved.headers["Location"]).text
    assert processor_activity().title == "Renamed"
    assert db.session.query(Activity).count() == 1


def test_the_settings_launch_refuses_students_and_strangers(app, browser, platform, live_tool):
    activity, n = attach(browser, platform, live_tool)
    student = launch(
        browser, platform, live_tool, STUDENT_ID, STUDENT, platform.processors.settings_launch(n)
    )
    assert student.status_code == 403

    # Another assignment naming this processor (a copied custom parameter): refused.
    other_assignment = platform.processors.settings_launch(n)
    other_assignment["extra_claims"][LTI_CLAIM + "activity"] = {"id": "another-assignment"}
    refused = launch(browser, platform, live_tool, TEACHER_ID, TEACHER, other_assignment)
    assert refused.status_code == 400 and "not known here" in refused.text

    # Another deployment of the same platform.
    stored = db.session.query(Platform).one()
    stored.deployments.append(Deployment(deployment_id="other-deployment"))
    db.session.commit()
    elsewhere = platform.processors.settings_launch(n, deployment_id="other-deployment")
    refused = launch(browser, platform, live_tool, TEACHER_ID, TEACHER, elsewhere)
    assert refused.status_code == 400 and "not known here" in refused.text

    # Another platform (tenant) naming this activity's public id.
    with FakePlatform(client_id="other-client", name="other") as other:
        other.tool_jwks_url = f"{live_tool}/lti/jwks"
        other.tool_redirect_uris = [f"{live_tool}/lti/launch"]
        register(other)
        settings = platform.processors.settings_launch(n)
        refused = launch(browser, other, live_tool, TEACHER_ID, TEACHER, settings)
        assert refused.status_code == 400 and "not known here" in refused.text


# -- the report review launch ------------------------------------------------------------


def graded_submission(app, llm, activity: Activity, sub: str, lms_id: str) -> Submission:
    """What the notice job leaves (helper "notices" makes these from notices): a student's
    submission with the LMS's submission id, graded by the real core."""
    llm.reply(REPLY)
    user = LtiUser(platform_id=activity.platform_id, sub=sub, name=f"Student {sub}")
    db.session.add(user)
    db.session.commit()
    submission = submissions.accept(
        activity,
        user,
        submissions.Upload(filename="essay.txt", stream=io.BytesIO(f"{ESSAY} {sub}".encode())),
        data_dir=app.config["EVALUAITOR_DATA_DIR"],
        max_mb=app.config["EVALUAITOR_MAX_UPLOAD_MB"],
    )
    submission.lms_submission_id = lms_id
    db.session.commit()
    run_jobs()
    db.session.expire_all()
    return db.session.get(Submission, submission.id)


def test_report_review_opens_the_submission_for_teachers_and_released_work_for_students(
    app, browser, platform, llm, live_tool
):
    activity, n = attach(browser, platform, live_tool, release_policy="hold_all")
    submission = graded_submission(app, llm, activity, STUDENT_ID, "sub-uuid:1")
    assert submission.grade.effective_score == 20 and submission.grade.released_at is None

    student_launch = platform.processors.report_launch(
        n, submission_id="sub-uuid:1", for_user=STUDENT_ID
    )
    response = launch(browser, platform, live_tool, STUDENT_ID, STUDENT, student_launch)
    assert response.status_code == 303, response.text
    student_page = response.headers["Location"]
    held = browser.get(student_page).text
    assert "Waiting for your teacher" in held and "Clear and accurate." not in held
    assert 'id="upload-form"' not in held and 'id="submit-in-lms"' in held

    teacher_launch = platform.processors.report_launch(
        n, submission_id="sub-uuid:1", for_user=TEACHER_ID
    )
    response = launch(browser, platform, live_tool, TEACHER_ID, TEACHER, teacher_launch)
    assert response.status_code == 303, response.text
    detail = response.headers["Location"]
    assert detail.endswith(f"/submissions/{submission.id}")
    assert "Clear and accurate." in browser.get(detail).text  # the evidence, unreleased
    released = browser.post(detail + "/release")
    assert released.status_code == 303

    shown = browser.get(student_page).text
    assert "Clear and accurate." in shown


def test_a_student_reaches_only_their_own_report(app, browser, platform, llm, live_tool):
    activity, n = attach(browser, platform, live_tool)
    graded_submission(app, llm, activity, STUDENT_ID, "sub-uuid:1")

    # Another student opening (through a forged or misrouted launch) student 2's report.
    other = platform.processors.report_launch(n, submission_id="sub-uuid:1", for_user="4")
    assert launch(browser, platform, live_tool, "4", STUDENT, other).status_code == 403
    # A student launch naming someone else as for_user.
    forged = platform.processors.report_launch(n, submission_id="sub-uuid:1", for_user="2")
    assert launch(browser, platform, live_tool, "4", STUDENT, forged).status_code == 403


def test_a_report_of_a_submission_not_known_yet_says_so(app, browser, platform, live_tool):
    activity, n = attach(browser, platform, live_tool)
    settings = platform.processors.report_launch(n, submission_id="new:1", for_user=STUDENT_ID)
    response = launch(browser, platform, live_tool, STUDENT_ID, STUDENT, settings)
    assert response.status_code == 200
    assert 'id="report-pending"' in response.text


def test_students_hand_in_work_in_the_lms_not_in_the_tool(browser, platform, live_tool):
    activity, n = attach(browser, platform, live_tool)
    settings = platform.processors.report_launch(n, submission_id="new:1", for_user=STUDENT_ID)
    pending = launch(browser, platform, live_tool, STUDENT_ID, STUDENT, settings).text
    student_page = pending.split('<p><a href="', 1)[1].split('"', 1)[0]
    assert 'id="submit-in-lms"' in browser.get(student_page).text
    refused = browser.post(student_page + "submissions", files={"file": ("a.txt", b"essay")})
    assert refused.status_code == 403
    assert db.session.query(Submission).count() == 0


# -- message types -----------------------------------------------------------------------


@pytest.mark.parametrize("message_type", ["LtiSomethingNewRequest", "LtiEulaRequest"])
def test_unknown_message_types_are_still_refused(browser, platform, live_tool, message_type):
    response = browser_launch(
        browser, platform, live_tool, user=TEACHER_ID, roles=TEACHER, message_type=message_type
    )
    assert response.status_code == 400


def test_processor_launches_without_their_claims_are_refused(browser, platform, live_tool):
    activity, n = attach(browser, platform, live_tool)
    settings = platform.processors.report_launch(n, submission_id="s:1", for_user=TEACHER_ID)
    del settings["extra_claims"][LTI_CLAIM + "asset"]
    response = launch(browser, platform, live_tool, TEACHER_ID, TEACHER, settings)
    assert response.status_code == 400


def test_a_course_link_naming_a_processor_gets_a_copy_not_the_processor(
    browser, platform, live_tool
):
    """A resource link whose custom parameter names an attached processor (copied by hand)
    must not bind the processor: its launches would reach the assignment's submissions."""
    processor, n = attach(browser, platform, live_tool, title="Attached")
    custom = {LTI_CLAIM + "custom": {"activity": processor.public_id}}
    response = launch(browser, platform, live_tool, TEACHER_ID, TEACHER, {"extra_claims": custom})
    assert response.status_code == 303, response.text
    db.session.expire_all()
    copy = db.session.query(Activity).filter_by(resource_link_id="rl-1").one()
    assert copy.id != processor.id and copy.placement == "link"
    assert copy.instructions == processor.instructions  # the settings, copied
    assert processor_activity().resource_link_id is None
