"""A new title or maximum in the settings reaches the LMS gradebook column (AGS line item
PUT), over real HTTP with the fake Moodle: retries, failures on the teacher page, released
grades sent again on the new maximum, and the cases where nothing can or need be sent."""

from __future__ import annotations

from datetime import timedelta

import pytest

from app.evaluation import sweeper
from app.extensions import db, redis_connection
from app.lti import claims, passback
from app.lti.ags import AgsError
from app.models import Activity, LineItemUpdate
from tests.conftest import run_jobs
from tests.fakes.platform import AGS_CLAIM
from tests.fakes.platform.vocab import SCOPE_LINEITEM_READONLY, SCOPE_SCORE
from tests.test_core_loop import open_activity, upload
from tests.test_deep_linking import valid_form
from tests.test_review import essay, graded, teacher

NEW_TITLE = "Essay 1 (revised)"


def save_settings(browser, staff: str, *, title: str = NEW_TITLE, max_score: str = "20"):
    response = browser.post(staff + "settings", data=valid_form(title=title, max_score=max_score))
    assert response.status_code == 303, response.text


def column(platform):
    return platform.gradebook.lineitems[platform.lineitem_for_link()]


def puts(platform) -> list[dict]:
    return [e for e in platform.request_log if e["kind"] == "lineitem" and e["method"] == "PUT"]


def last_update() -> LineItemUpdate:
    db.session.expire_all()
    return db.session.query(LineItemUpdate).order_by(LineItemUpdate.id.desc()).first()


def activity() -> Activity:
    db.session.expire_all()
    return db.session.query(Activity).one()


def test_new_title_and_maximum_reach_the_column_and_the_next_grade(
    browser, platform, llm, live_tool
):
    graded(browser, platform, llm, live_tool)  # 8 of 10, released
    item = column(platform)
    item.resource_id, item.tag = "essay-1", "final"  # set by someone else: must survive the PUT
    staff = teacher(browser, platform, live_tool)

    save_settings(browser, staff)
    run_jobs()

    assert (item.label, item.score_maximum) == (NEW_TITLE, 20)
    assert (item.resource_id, item.tag, item.resource_link_id) == ("essay-1", "final", "rl-1")
    assert len(puts(platform)) == 1
    update = last_update()
    assert (update.status, update.attempts, update.http_status) == ("sent", 1, 200)
    # The released grade was sent again on the new maximum.
    assert platform.scores[-1]["scoreGiven"] == 16 and platform.scores[-1]["scoreMaximum"] == 20
    assert platform.grade_for("2")["grade"] == 16
    # The next grade goes on the new maximum too.
    graded(browser, platform, llm, live_tool, user="4", reply="Final score: 12/20")
    assert platform.grade_for("4")["scoreGiven"] == 12
    assert platform.scores[-1]["scoreMaximum"] == 20
    page = browser.get(staff).text
    assert "gradebook column" not in page and "Maximum score: 20" in page


def test_saving_the_same_title_and_maximum_sends_nothing(browser, platform, llm, live_tool):
    graded(browser, platform, llm, live_tool)
    staff = teacher(browser, platform, live_tool)
    save_settings(browser, staff)
    run_jobs()
    sent = len(platform.scores)
    save_settings(browser, staff)  # unchanged
    run_jobs()
    assert len(puts(platform)) == 1 and len(platform.scores) == sent
    assert db.session.query(LineItemUpdate).count() == 1


def test_a_title_change_alone_resends_no_grade(browser, platform, llm, live_tool):
    graded(browser, platform, llm, live_tool)
    staff = teacher(browser, platform, live_tool)
    sent = len(platform.scores)
    save_settings(browser, staff, max_score="10")
    run_jobs()
    assert (column(platform).label, column(platform).score_maximum) == (NEW_TITLE, 10)
    assert len(platform.scores) == sent


def test_without_a_column_nothing_is_sent_and_the_first_grade_makes_it(
    browser, platform, llm, live_tool
):
    page = open_activity(browser, platform, live_tool, lineitem=False)  # lineitems only
    staff = teacher(browser, platform, live_tool, lineitem=False)
    save_settings(browser, staff)
    run_jobs()
    assert puts(platform) == [] and db.session.query(LineItemUpdate).count() == 0

    llm.reply("Clear and accurate.\n\nFinal score: 16/20")  # asked on the new maximum
    upload(browser, page, "essay.txt", essay("2"))
    run_jobs()
    item = column(platform)
    assert (item.label, item.score_maximum) == (NEW_TITLE, 20)
    assert platform.grade_for("2")["scoreGiven"] == 16
    assert puts(platform) == []


def test_a_server_error_is_retried(browser, platform, llm, live_tool):
    graded(browser, platform, llm, live_tool)
    staff = teacher(browser, platform, live_tool)
    platform.fail_next("lineitem", 500)
    save_settings(browser, staff)
    run_jobs()
    update = last_update()
    assert (update.status, update.attempts) == ("sent", 2)
    assert column(platform).score_maximum == 20


def test_a_column_that_keeps_failing_is_reported_and_grades_use_its_own_maximum(
    browser, platform, llm, live_tool
):
    graded(browser, platform, llm, live_tool)
    staff = teacher(browser, platform, live_tool)
    platform.fail_next("lineitem", 503, times=4)  # every attempt: 1 + 3 retries
    save_settings(browser, staff)
    run_jobs()
    update = last_update()
    assert (update.status, update.attempts, update.http_status) == ("failed", 4, 503)
    assert column(platform).score_maximum == 10
    page = browser.get(staff).text
    assert "The LMS gradebook column was not updated" in page and "HTTP 503" in page
    assert "Update the gradebook column again" in page

    # Meanwhile grades go on the column's real maximum; the teacher's setting is kept.
    graded(browser, platform, llm, live_tool, user="4", reply="Final score: 12/20")
    assert platform.scores[-1]["scoreMaximum"] == 10 and platform.scores[-1]["scoreGiven"] == 6
    assert activity().max_score == 20

    response = browser.post(staff + "gradebook-column/retry")
    assert response.status_code == 303
    run_jobs()
    assert last_update().status == "sent" and column(platform).score_maximum == 20
    assert platform.grade_for("4")["scoreGiven"] == 12  # released grades follow
    assert platform.grade_for("2")["scoreGiven"] == 16
    assert "gradebook column" not in browser.get(staff).text


def test_a_deleted_column_is_reported_at_once(browser, platform, llm, live_tool):
    graded(browser, platform, llm, live_tool)
    staff = teacher(browser, platform, live_tool)
    platform.delete_lineitem(platform.lineitem_for_link())
    save_settings(browser, staff)
    run_jobs()
    update = last_update()
    assert (update.status, update.attempts, update.http_status) == ("failed", 1, 404)
    page = browser.get(staff).text
    assert "no longer has this grade column" in page
    assert "Update the gradebook column again" in page
    assert puts(platform) == []  # the GET found nothing to write back


def test_a_slow_platform_is_retried_after_the_timeout(browser, platform, llm, live_tool):
    graded(browser, platform, llm, live_tool)
    staff = teacher(browser, platform, live_tool)
    platform.fail_next("lineitem", None, delay=3)  # the tool waits 2 s (EVALUAITOR_AGS_TIMEOUT)
    save_settings(browser, staff)
    run_jobs()
    update = last_update()
    assert (update.status, update.attempts) == ("sent", 2)
    assert column(platform).score_maximum == 20


@pytest.mark.parametrize(
    ("body", "reason"),
    [("<html>Moodle is upgrading</html>", "not JSON"), (["not", "an", "item"], "not an object")],
    ids=["html", "list"],
)
def test_a_line_item_that_is_not_one_is_refused(browser, platform, llm, live_tool, body, reason):
    graded(browser, platform, llm, live_tool)
    staff = teacher(browser, platform, live_tool)
    platform.fail_next("lineitem", 200, body=body)
    save_settings(browser, staff)
    run_jobs()
    update = last_update()
    assert (update.status, update.attempts) == ("failed", 1) and reason in update.last_error
    assert puts(platform) == [] and column(platform).score_maximum == 10


def test_a_held_grade_is_not_resent_and_goes_out_on_the_new_maximum_when_released(
    browser, platform, llm, live_tool
):
    _, submission = graded(browser, platform, llm, live_tool, policy="hold_all")
    staff = teacher(browser, platform, live_tool)
    sent = len(platform.scores)
    response = browser.post(
        staff + "settings",
        data=valid_form(title=NEW_TITLE, max_score="20", release_policy="hold_all"),
    )
    assert response.status_code == 303
    run_jobs()
    assert column(platform).score_maximum == 20 and len(platform.scores) == sent
    browser.post(f"{staff}submissions/{submission.id}/release")
    run_jobs()
    assert platform.grade_for("2")["scoreGiven"] == 16


def test_another_activitys_teacher_cannot_retry_this_update(browser, platform, llm, live_tool):
    graded(browser, platform, llm, live_tool)
    staff = teacher(browser, platform, live_tool)
    platform.delete_lineitem(platform.lineitem_for_link())
    save_settings(browser, staff)
    run_jobs()
    other = teacher(browser, platform, live_tool, resource_link_id="rl-2")
    assert browser.post(other + "gradebook-column/retry").status_code == 403
    update = last_update()
    assert (update.status, update.attempts) == ("failed", 1)
    assert "gradebook column" not in browser.get(other).text


def test_an_expired_token_is_refreshed_once(browser, platform, llm, live_tool):
    graded(browser, platform, llm, live_tool)
    staff = teacher(browser, platform, live_tool)
    tokens = platform.token_requests
    platform.expire_tokens()
    save_settings(browser, staff)
    run_jobs()
    update = last_update()
    assert (update.status, update.attempts) == ("sent", 1)
    assert platform.token_requests == tokens + 1
    assert column(platform).score_maximum == 20


def test_a_401_that_persists_fails_without_looping(browser, platform, llm, live_tool):
    graded(browser, platform, llm, live_tool)
    staff = teacher(browser, platform, live_tool)
    tokens = platform.token_requests
    platform.fail_next("lineitem", 401, times=2)
    save_settings(browser, staff)
    run_jobs()
    update = last_update()
    assert (update.status, update.http_status, update.attempts) == ("failed", 401, 1)
    assert platform.token_requests == tokens + 1  # one fresh token, then it gives up


def test_without_the_lineitem_scope_the_teacher_is_told_what_to_do(
    browser, platform, llm, live_tool
):
    graded(browser, platform, llm, live_tool)
    n = platform.lineitem_for_link()
    limited = {
        "scope": [SCOPE_LINEITEM_READONLY, SCOPE_SCORE],
        "lineitem": platform.lineitem_url(n),
    }
    staff = teacher(browser, platform, live_tool, extra_claims={AGS_CLAIM: limited})
    save_settings(browser, staff)
    run_jobs()
    assert puts(platform) == []
    update = last_update()
    assert update.status == "failed" and update.attempts == 0
    page = browser.get(staff).text
    assert "did not allow Evaluaitor to change its gradebook column" in page
    assert "column management" in page

    browser.post(staff + "gradebook-column/retry")  # still no permission: still explained
    run_jobs()
    assert last_update().status == "failed" and puts(platform) == []

    staff = teacher(browser, platform, live_tool)  # the LMS now grants the scope
    browser.post(staff + "gradebook-column/retry")
    run_jobs()
    assert last_update().status == "sent" and column(platform).score_maximum == 20


def test_only_a_failed_update_can_be_retried_and_only_by_staff(browser, platform, llm, live_tool):
    graded(browser, platform, llm, live_tool)
    staff = teacher(browser, platform, live_tool)
    assert browser.post(staff + "gradebook-column/retry").status_code == 403  # nothing failed
    save_settings(browser, staff)
    run_jobs()
    assert browser.post(staff + "gradebook-column/retry").status_code == 403  # it was sent
    student = open_activity(browser, platform, live_tool)
    assert browser.post(student + "gradebook-column/retry").status_code == 403
    assert len(puts(platform)) == 1


def test_a_newer_change_supersedes_a_waiting_one(browser, platform, llm, live_tool):
    graded(browser, platform, llm, live_tool)
    staff = teacher(browser, platform, live_tool)
    save_settings(browser, staff, max_score="20")
    save_settings(browser, staff, max_score="30")
    run_jobs()
    db.session.expire_all()
    statuses = [u.status for u in db.session.query(LineItemUpdate).order_by(LineItemUpdate.id)]
    assert statuses == ["superseded", "sent"]
    assert column(platform).score_maximum == 30 and len(puts(platform)) == 1
    assert platform.grade_for("2")["scoreGiven"] == 24


def test_an_update_redis_lost_is_sent_by_the_sweeper(browser, platform, llm, live_tool):
    graded(browser, platform, llm, live_tool)
    staff = teacher(browser, platform, live_tool)
    save_settings(browser, staff)
    redis_connection().flushdb()  # the job is gone; the row still says pending
    assert sweeper.sweep(timedelta(0)) == 1
    run_jobs()
    assert last_update().status == "sent" and column(platform).score_maximum == 20


def test_an_upload_after_the_change_is_graded_on_the_new_maximum(browser, platform, llm, live_tool):
    page = open_activity(browser, platform, live_tool)
    staff = teacher(browser, platform, live_tool)
    save_settings(browser, staff)
    run_jobs()
    llm.reply("Final score: 15/20")
    upload(browser, page, "essay.txt", essay("2"))
    run_jobs()
    assert platform.grade_for("2")["scoreGiven"] == 15


# -- the fake Moodle's line item PUT, through the tool's own AGS client -------------------


@pytest.fixture
def ags(browser, platform, live_tool):
    open_activity(browser, platform, live_tool)
    with passback.ags_client(activity()) as client:
        yield client


@pytest.mark.parametrize(
    ("label", "maximum"), [("  ", 20), ("Essay", -5)], ids=["blank-label", "negative-maximum"]
)
def test_moodle_refuses_an_invalid_line_item(platform, ags, label, maximum):
    with pytest.raises(AgsError) as refused:
        ags.update_lineitem(activity().lineitem_url, label=label, score_maximum=maximum)
    assert refused.value.status == 400 and not refused.value.retryable
    assert column(platform).label == "Essay 1"


def test_moodle_keeps_the_line_items_id_and_answers_with_it(platform, ags):
    url = activity().lineitem_url
    body = {"id": platform.lineitem_url(99), "label": "Renamed", "scoreMaximum": 12}
    response = ags._call(
        "PUT",
        url,
        [claims.SCOPE_LINEITEM],
        json=body,
        headers={"Content-Type": claims.LINEITEM_CONTENT_TYPE},
    )
    assert response.json()["id"] == url and response.json()["scoreMaximum"] == 12
    assert ags.get_lineitem(url)["label"] == "Renamed"


def test_moodle_answers_404_for_a_deleted_line_item(platform, ags):
    url = activity().lineitem_url
    platform.delete_lineitem(platform.lineitem_for_link())
    with pytest.raises(AgsError) as gone:
        ags.update_lineitem(url, label="Essay", score_maximum=20)
    assert gone.value.status == 404 and not gone.value.retryable
