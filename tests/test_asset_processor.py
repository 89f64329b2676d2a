"""LTI Asset Processor: a submission made in the LMS reaches the tool as a signed notice, is
downloaded, graded like an upload and reported back per asset (Canvas's behaviour, in
tests/fakes/platform/asset_processor.py)."""

from __future__ import annotations

import base64
import hashlib
import json
from datetime import UTC, datetime, timedelta

import pytest

from app.evaluation import sweeper
from app.extensions import db
from app.jobs import queue
from app.lms import review
from app.lti import asset_reports
from app.models import Activity, Deployment, JobStatus, LtiUser, Platform, PushStatus, Submission
from app.models.assets import FAILED, PROCESSED, RECEIVED, AssetReport, LtiAsset, LtiNotice
from app.models.lti import ASSET_PROCESSOR
from tests.conftest import announce_then_grade, run_jobs
from tests.documents import ESSAY
from tests.fakes.platform.asset_processor import FileStore
from tests.test_core_loop import GOOD_REPLY
from tests.test_review import teacher


@pytest.fixture
def processor(app, platform) -> Activity:
    return attach_processor()


def attach_processor() -> Activity:
    """An activity attached to the LMS assignment ``assignment-1`` (as the attach flow makes)."""
    registered = db.session.query(Platform).one()
    activity = Activity(
        platform_id=registered.id,
        deployment_id=registered.deployments[0].id,
        placement=ASSET_PROCESSOR,
        lms_activity_id="assignment-1",
        title="Essay",
        instructions="Write an essay.",
        max_score=10,
    )
    db.session.add(activity)
    db.session.commit()
    return activity


@pytest.fixture
def handler(live_tool) -> str:
    return live_tool + "/lti/notices"


def notify(platform, handler, activity, assets, *, how="platform", **claims_):
    service = platform.asset_processor
    token = service.sign(
        service.notice_claims(activity=activity.public_id, assets=assets, **claims_), how=how
    )
    return service.send(handler, token), token


def progress(platform, asset_entry) -> list[str]:
    return [
        r["processingProgress"]
        for r in platform.asset_processor.reports_for(asset_entry["asset_id"])
    ]


def essay(platform, **kwargs):
    return platform.asset_processor.add_asset(ESSAY.encode(), **kwargs)


# --- the whole way -----------------------------------------------------------------------


def test_a_notice_is_graded_and_reported(platform, handler, processor, llm):
    llm.set_default(GOOD_REPLY)
    asset = essay(platform)
    response, _token = notify(platform, handler, processor, [asset])
    assert response.status_code == 204
    notice = db.session.query(LtiNotice).one()
    assert notice.status == RECEIVED and notice.claims  # stored before the answer
    announce_then_grade()  # the Processing reports leave while the work is graded
    db.session.expire_all()
    submission = db.session.query(Submission).one()
    assert submission.job.status == JobStatus.COMPLETED
    assert submission.lms_submission_id == "sub-1" and submission.user.sub == "2"
    assert progress(platform, asset) == ["Processing", "Processed"]
    final = platform.asset_processor.reports_for(asset["asset_id"])[-1]
    assert final["result"] == "8/10" and final["visibleToOwner"] is True
    assert final["type"] == "evaluaitor" and "Strengths" in final["comment"]
    assert final["priority"] == 0
    notice = db.session.get(LtiNotice, notice.id)
    assert notice.status == PROCESSED and notice.claims == {}  # emptied: they name the student
    stamps = [r["timestamp"] for r in platform.asset_processor.reports_for(asset["asset_id"])]
    assert stamps == sorted(stamps) and len(set(stamps)) == 2
    assert {status for status, _ in platform.asset_processor.report_requests} == {201}


def test_a_held_grade_is_pending_manual_until_the_teacher_releases_it(
    platform, handler, processor, llm
):
    processor.release_policy = "hold_all"
    db.session.commit()
    llm.set_default(GOOD_REPLY)
    asset = essay(platform)
    notify(platform, handler, processor, [asset])
    run_jobs()
    held = platform.asset_processor.reports_for(asset["asset_id"])[-1]
    assert held["processingProgress"] == "PendingManual"
    assert held["visibleToOwner"] is False and "comment" not in held
    assert held["result"] == "8/10"  # the teacher sees the proposal in the LMS
    db.session.expire_all()
    submission = db.session.query(Submission).one()
    teacher = LtiUser(platform_id=processor.platform_id, sub="teacher")
    db.session.add(teacher)
    db.session.commit()
    review.override(submission, teacher.id, score="9.5")
    run_jobs()
    overridden = platform.asset_processor.reports_for(asset["asset_id"])[-1]
    assert overridden["processingProgress"] == "PendingManual"
    assert overridden["result"] == "9.5/10"
    review.release(db.session.get(Submission, submission.id), teacher.id)
    run_jobs()
    released = platform.asset_processor.reports_for(asset["asset_id"])[-1]
    assert released["processingProgress"] == "Processed" and released["visibleToOwner"] is True
    assert released["result"] == "9.5/10"


def test_several_assets_are_graded_once_with_a_report_each(platform, handler, processor, llm):
    llm.set_default(GOOD_REPLY)
    first = essay(platform, title="Part one", filename="one.txt")
    second = platform.asset_processor.add_asset(
        b"<p>My <b>second</b> part &amp; conclusion.</p><p>Second paragraph.</p>",
        title="Online text",
        text_entry=True,
    )
    notify(platform, handler, processor, [first, second])
    run_jobs()
    db.session.expire_all()
    submission = db.session.query(Submission).one()
    assert len(llm.requests) >= 1
    text = submission.job.extracted_text
    assert "## Part one" in text and "## Online text" in text
    assert "My second part & conclusion." in text and "<b>" not in text
    assert db.session.query(LtiAsset).count() == 2
    for asset in (first, second):
        assert progress(platform, asset)[-1] == "Processed"
        assert platform.asset_processor.reports_for(asset["asset_id"])[-1]["result"] == "8/10"


def test_a_redirect_to_the_bytes_elsewhere_is_followed_without_the_token(
    platform, handler, processor, llm
):
    llm.set_default(GOOD_REPLY)
    with FileStore() as store:
        platform.asset_processor.file_store = store
        asset = essay(platform, redirect=True)
        notify(platform, handler, processor, [asset])
        run_jobs()
    assert store.authorizations == [None]  # the Bearer token stayed with the LMS
    assert platform.asset_processor.asset_requests[0][1].startswith("Bearer ")
    assert progress(platform, asset)[-1] == "Processed"


# --- assets that cannot be graded ---------------------------------------------------------


def test_a_checksum_that_differs_fails_the_download(platform, handler, processor, llm):
    wrong = base64.b64encode(hashlib.sha256(b"something else").digest()).decode()
    asset = essay(platform, sha256=wrong)
    notify(platform, handler, processor, [asset])
    run_jobs()
    final = platform.asset_processor.reports_for(asset["asset_id"])[-1]
    assert final["processingProgress"] == "Failed" and final["errorCode"] == "DOWNLOAD_FAILED"
    assert final["visibleToOwner"] is False
    db.session.expire_all()
    assert db.session.query(Submission).one().job.status == JobStatus.FAILED
    assert llm.requests == []


def test_an_asset_over_the_limit_is_not_downloaded(platform, handler, processor, llm):
    processor.max_upload_mb = 0.001  # about 1 KB
    db.session.commit()
    asset = platform.asset_processor.add_asset(b"x" * 5000)
    notify(platform, handler, processor, [asset])
    run_jobs()
    assert progress(platform, asset)[-1] == "Failed"
    assert platform.asset_processor.reports_for(asset["asset_id"])[-1]["errorCode"] == (
        "ASSET_TOO_LARGE"
    )
    assert platform.asset_processor.asset_requests == []


def test_an_asset_larger_than_its_notice_said_is_cut_off(platform, handler, processor, llm):
    processor.max_upload_mb = 0.001
    db.session.commit()
    asset = platform.asset_processor.add_asset(b"y" * 5000, size=100)
    notify(platform, handler, processor, [asset])
    run_jobs()
    final = platform.asset_processor.reports_for(asset["asset_id"])[-1]
    assert final["errorCode"] == "ASSET_TOO_LARGE"


def test_an_unsupported_asset_is_reported(platform, handler, processor, llm):
    asset = platform.asset_processor.add_asset(
        b"\x89PNG\r\n\x1a\n" + b"\x00" * 100,
        title="photo.png",
        filename="photo.png",
        content_type="image/png",
    )
    notify(platform, handler, processor, [asset])
    run_jobs()
    final = platform.asset_processor.reports_for(asset["asset_id"])[-1]
    assert final["errorCode"] == "UNSUPPORTED_ASSET_TYPE"


# --- duplicates, resubmissions, losses -----------------------------------------------------


def test_the_same_submission_again_is_not_graded_twice(platform, handler, processor, llm):
    llm.set_default(GOOD_REPLY)
    asset = essay(platform)
    notify(platform, handler, processor, [asset])
    announce_then_grade()
    calls = len(llm.requests)
    response, _ = notify(platform, handler, processor, [asset])  # "Resubmit All Files"
    assert response.status_code == 204
    run_jobs()
    assert len(llm.requests) == calls
    assert db.session.query(Submission).count() == 1
    assert progress(platform, asset) == ["Processing", "Processed", "Processed"]


def test_a_failed_download_is_tried_again_when_the_submission_comes_again(
    platform, handler, processor, llm
):
    llm.set_default(GOOD_REPLY)
    asset = essay(platform)
    platform.fail_next("asset", 500)
    notify(platform, handler, processor, [asset])
    run_jobs()
    assert progress(platform, asset)[-1] == "Failed"
    notify(platform, handler, processor, [asset])
    run_jobs()
    assert progress(platform, asset)[-1] == "Processed"
    db.session.expire_all()
    assert db.session.query(Submission).one().job.status == JobStatus.COMPLETED


def test_a_resubmission_is_a_new_attempt(platform, handler, processor, llm):
    llm.set_default(GOOD_REPLY)
    notify(platform, handler, processor, [essay(platform)], submission_id="sub-1")
    run_jobs()
    notify(platform, handler, processor, [essay(platform)], submission_id="sub-2")
    run_jobs()
    db.session.expire_all()
    attempts = db.session.query(Submission).order_by(Submission.attempt).all()
    assert [s.attempt for s in attempts] == [1, 2]
    assert all(s.job.status == JobStatus.COMPLETED for s in attempts)


def test_a_notice_redis_lost_after_the_answer_is_graded_by_the_sweeper(
    platform, handler, processor, llm
):
    llm.set_default(GOOD_REPLY)
    asset = essay(platform)
    response, _ = notify(platform, handler, processor, [asset])
    assert response.status_code == 204
    queue.queue(queue.PASSBACK).empty()  # Redis lost its data (a restart without persistence)
    notice = db.session.query(LtiNotice).one()
    notice.updated_at = datetime.now(UTC) - timedelta(minutes=5)
    db.session.commit()
    assert sweeper.sweep(timedelta(seconds=30)) == 1
    assert sweeper.sweep(timedelta(seconds=30)) == 0  # RQ holds it now
    run_jobs()
    assert progress(platform, asset)[-1] == "Processed"


# --- reports the LMS refuses ---------------------------------------------------------------


def test_reports_are_retried_while_the_lms_is_down(app, platform, handler, processor, llm):
    app.config["EVALUAITOR_REPORT_RETRY_INTERVALS"] = [0, 0, 0]
    llm.set_default(GOOD_REPLY)
    asset = essay(platform)
    platform.fail_next("report", 503, times=2)
    notify(platform, handler, processor, [asset])
    run_jobs()
    assert progress(platform, asset)[-1] == "Processed"
    statuses = [entry["status"] for entry in platform.request_log if entry["kind"] == "report"]
    assert statuses.count(503) == 2 and statuses[-1] == 201


def test_a_409_means_a_newer_report_is_there(app, platform, handler, processor, llm):
    llm.set_default(GOOD_REPLY)
    asset = essay(platform)
    notify(platform, handler, processor, [asset])
    run_jobs()
    platform.fail_next("report", 409)
    submission = db.session.query(Submission).one()
    rows = asset_reports.reports_for(submission)
    db.session.commit()
    queue.dispatch(*rows)
    run_jobs()
    db.session.expire_all()
    assert db.session.get(AssetReport, rows[0].id).status == PushStatus.SUPERSEDED


def test_a_report_canvas_refuses_fails_with_its_reason(app, platform, handler, processor, llm):
    llm.set_default(GOOD_REPLY)
    asset = essay(platform)
    platform.fail_next("report", 400, times=5, body={"errors": [{"message": "bad title"}]})
    notify(platform, handler, processor, [asset])
    run_jobs()
    db.session.expire_all()
    latest = db.session.query(AssetReport).order_by(AssetReport.id.desc()).first()
    assert latest.status == PushStatus.FAILED and "bad title" in latest.last_error


# --- notices that are refused ---------------------------------------------------------------


def test_a_replayed_notice_is_refused(platform, handler, processor):
    response, token = notify(platform, handler, processor, [essay(platform)])
    assert response.status_code == 204
    again = platform.asset_processor.send(handler, token)
    assert again.status_code == 409
    assert db.session.query(LtiNotice).count() == 1


def test_a_notice_id_seen_before_is_refused(platform, handler, processor):
    notify(platform, handler, processor, [essay(platform)], notice_id="n-1")
    response, _ = notify(platform, handler, processor, [essay(platform)], notice_id="n-1")
    assert response.status_code == 409
    assert db.session.query(LtiNotice).count() == 1


@pytest.mark.parametrize("how", ["stranger", "none", "hs256"])
def test_a_forged_notice_is_refused(platform, handler, processor, how):
    response, _ = notify(platform, handler, processor, [essay(platform)], how=how)
    assert response.status_code == 401
    assert db.session.query(LtiNotice).count() == 0


@pytest.mark.parametrize(
    "claims_",
    [
        {"iss": "https://other.example"},
        {"aud": "someone-else"},
        {"aud": ["evaluaitor-client", "someone-else"], "deployment_id": "1"},
        {"deployment_id": "99"},
        {"iat_offset": -7200, "lifetime": 60},
    ],
    ids=["issuer", "audience", "azp", "deployment", "expired"],
)
def test_a_notice_for_someone_else_or_too_old_is_refused(platform, handler, processor, claims_):
    service = platform.asset_processor
    body = service.notice_claims(activity=processor.public_id, assets=[essay(platform)], **claims_)
    if claims_.get("aud") == ["evaluaitor-client", "someone-else"]:
        body["azp"] = "someone-else"
    response = service.send(handler, service.sign(body))
    assert response.status_code == 401
    assert db.session.query(LtiNotice).count() == 0


def test_other_notice_types_are_acknowledged_and_dropped(platform, handler, processor):
    response, _ = notify(
        platform, handler, processor, [essay(platform)], notice_type="LtiHelloWorldNotice"
    )
    assert response.status_code == 204
    assert db.session.query(LtiNotice).count() == 0


def test_an_oversized_body_or_batch_is_refused(platform, handler, processor):
    import httpx

    huge = httpx.post(handler, content=b"{" + b" " * 300_000 + b"}", timeout=10)
    assert huge.status_code == 413
    service = platform.asset_processor
    tokens = [
        service.sign(service.notice_claims(activity=processor.public_id, assets=[]))
        for _ in range(21)
    ]
    assert service.send(handler, *tokens).status_code == 413
    assert db.session.query(LtiNotice).count() == 0


def test_some_refused_among_several_is_a_multi_status(platform, handler, processor):
    service = platform.asset_processor
    good = service.sign(
        service.notice_claims(activity=processor.public_id, assets=[essay(platform)])
    )
    forged = service.sign(
        service.notice_claims(activity=processor.public_id, assets=[essay(platform)]),
        how="stranger",
    )
    response = service.send(handler, good, forged)
    assert response.status_code == 207
    assert [n["status"] for n in response.json()["notices"]] == [204, 401]


def test_another_deployments_activity_is_refused_and_nothing_is_made(
    platform, handler, processor, llm
):
    other = Deployment(platform_id=processor.platform_id, deployment_id="2")
    db.session.add(other)
    db.session.commit()
    foreign = Activity(
        platform_id=processor.platform_id,
        deployment_id=other.id,
        placement=ASSET_PROCESSOR,
        title="Other course's",
    )
    db.session.add(foreign)
    db.session.commit()
    response, _ = notify(platform, handler, foreign, [essay(platform)])
    assert response.status_code == 204  # a valid notice: refused when processed
    run_jobs()
    db.session.expire_all()
    assert db.session.query(LtiNotice).one().status == FAILED
    assert db.session.query(Submission).count() == 0
    assert platform.asset_processor.reports == []


def test_another_lms_assignment_is_refused(platform, handler, processor, llm):
    notify(platform, handler, processor, [essay(platform)], lms_activity_id="assignment-9")
    run_jobs()
    db.session.expire_all()
    assert db.session.query(LtiNotice).one().status == FAILED
    assert db.session.query(Submission).count() == 0


def test_a_link_activity_is_not_a_processor(platform, handler, processor, llm):
    processor.placement = "link"
    db.session.commit()
    notify(platform, handler, processor, [essay(platform)])
    run_jobs()
    db.session.expire_all()
    assert db.session.query(Submission).count() == 0
    assert json.dumps(db.session.query(LtiNotice).one().claims) == "{}"


def test_the_teacher_sees_the_reports_and_sends_a_refused_one_again(
    browser, platform, handler, llm, live_tool
):
    llm.set_default(GOOD_REPLY)
    page = teacher(browser, platform, live_tool, lineitem=False, lineitems=False)
    activity = db.session.query(Activity).one()  # the launched activity, attached instead
    activity.placement, activity.lms_activity_id = ASSET_PROCESSOR, "assignment-1"
    db.session.commit()
    asset = essay(platform)
    platform.fail_next("report", 400, times=2, body={"errors": [{"message": "refused"}]})
    notify(platform, handler, activity, [asset])
    announce_then_grade()
    assert platform.asset_processor.reports == []
    submission = db.session.query(Submission).one()
    detail = browser.get(f"{page}submissions/{submission.id}")
    assert "Reports in the LMS" in detail.text and "refused" in detail.text
    failed = db.session.query(AssetReport).order_by(AssetReport.id.desc()).first()
    assert failed.status == PushStatus.FAILED and f"reports/{failed.id}/resend" in detail.text
    assert browser.post(f"{page}reports/{failed.id}/resend").status_code == 303
    run_jobs()
    assert progress(platform, asset) == ["Processed"]


def test_a_failed_grading_is_reported_and_graded_when_the_submission_comes_again(
    platform, handler, processor, llm
):
    llm.fail(400, body="model refused the request")
    asset = essay(platform)
    notify(platform, handler, processor, [asset])
    run_jobs()
    failed = platform.asset_processor.reports_for(asset["asset_id"])[-1]
    assert failed["processingProgress"] == "Failed" and failed["errorCode"] == "GRADING_FAILED"
    llm.set_default(GOOD_REPLY)
    notify(platform, handler, processor, [asset])  # the teacher's "Resubmit All Files"
    run_jobs()
    assert progress(platform, asset)[-1] == "Processed"
    db.session.expire_all()
    assert db.session.query(Submission).one().job.status == JobStatus.COMPLETED


def test_a_redirect_on_the_same_host_is_followed(platform, handler, processor, llm):
    llm.set_default(GOOD_REPLY)
    asset = essay(platform, redirect=True)
    notify(platform, handler, processor, [asset])
    run_jobs()
    assert progress(platform, asset)[-1] == "Processed"
    assert any(e["kind"] == "file" for e in platform.request_log)


def test_a_notice_signed_with_a_rotated_key_is_accepted(platform, handler, processor):
    """The key set is the launch's cache: fetched again for an unknown kid."""
    assert notify(platform, handler, processor, [essay(platform)])[0].status_code == 204
    platform.rotate_key()
    assert notify(platform, handler, processor, [essay(platform)])[0].status_code == 204
    assert db.session.query(LtiNotice).count() == 2


def test_a_notice_into_a_switched_off_organization_is_refused(platform, handler, processor):
    db.session.query(Platform).one().organization.is_active = False
    db.session.commit()
    response, _ = notify(platform, handler, processor, [essay(platform)])
    assert response.status_code == 401
    assert db.session.query(LtiNotice).count() == 0


def test_a_fetch_cut_short_shows_as_fetching_and_is_done_when_the_notice_runs_again(
    browser, platform, handler, llm, live_tool, monkeypatch
):
    """While its files come from the LMS a submission is "fetching", not failed; if the notice's
    job dies then (here: the fetch raises, as a killed worker leaves it), the sweeper runs the
    notice again and that run fetches and grades it."""
    from app.lms import asset_processor

    llm.set_default(GOOD_REPLY)
    page = teacher(browser, platform, live_tool, lineitem=False, lineitems=False)
    activity = db.session.query(Activity).one()
    activity.placement, activity.lms_activity_id = ASSET_PROCESSOR, "assignment-1"
    db.session.commit()
    asset = essay(platform)

    def cut_short(*_args, **_kwargs):
        raise RuntimeError("the worker went away")

    monkeypatch.setattr(asset_processor, "_fetch", cut_short)
    notify(platform, handler, activity, [asset])
    run_jobs()
    db.session.expire_all()
    job = db.session.query(Submission).one().job
    assert (job.status, job.waiting_for) == (JobStatus.WAITING, asset_processor.FETCHING)
    assert "Fetching the submitted files from the LMS" in browser.get(page).text
    assert sweeper.sweep(timedelta(seconds=30)) == 0  # the waiting job is the notice's own

    monkeypatch.undo()
    notice = db.session.query(LtiNotice).one()
    assert notice.status == RECEIVED and notice.attempts == 1
    notice.updated_at = datetime.now(UTC) - timedelta(minutes=5)
    db.session.commit()
    assert sweeper.sweep(timedelta(seconds=30)) == 1
    run_jobs()
    db.session.expire_all()
    assert db.session.query(Submission).one().job.status == JobStatus.COMPLETED
    assert progress(platform, asset)[-1] == "Processed"


def test_grade_again_after_a_failed_download_fetches_the_files_again(
    browser, platform, handler, llm, live_tool
):
    """The LMS was down while the files were fetched: the teacher's "grade again" fetches
    them again (there is nothing to grade without them) and grades them; if Redis lost that
    fetch, the sweeper asks for it again."""
    llm.set_default(GOOD_REPLY)
    page = teacher(browser, platform, live_tool, lineitem=False, lineitems=False)
    activity = db.session.query(Activity).one()
    activity.placement, activity.lms_activity_id = ASSET_PROCESSOR, "assignment-1"
    db.session.commit()
    asset = essay(platform)
    platform.fail_next("asset", 503, times=10)
    notify(platform, handler, activity, [asset])
    run_jobs()
    final = platform.asset_processor.reports_for(asset["asset_id"])[-1]
    assert (final["processingProgress"], final["errorCode"]) == ("Failed", "DOWNLOAD_FAILED")
    platform.recover()
    submission = db.session.query(Submission).one()
    assert submission.job.storage_path == ""

    assert browser.post(f"{page}submissions/{submission.id}/retry").status_code == 303
    db.session.expire_all()
    job = db.session.query(Submission).one().job
    assert (job.status, job.waiting_for) == (JobStatus.WAITING, "lms")
    queue.queue(queue.PASSBACK).empty()  # Redis lost the fetch
    job.updated_at = datetime.now(UTC) - timedelta(minutes=5)
    db.session.commit()
    assert sweeper.sweep(timedelta(seconds=30)) == 1
    run_jobs()
    db.session.expire_all()
    assert db.session.query(Submission).one().job.status == JobStatus.COMPLETED
    assert progress(platform, asset)[-1] == "Processed"
    assert len(llm.requests) == 1
