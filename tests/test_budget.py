"""Monthly spend limits (app.spend, app.evaluation.budget): a grading that would pass one
waits for budget, never fails, and is graded once the limit is raised or the month turns."""

from __future__ import annotations

import html
import time
from datetime import UTC, datetime, timedelta

import pytest
from redis.exceptions import LockError

from app import spend
from app.api.statuses import shown_as
from app.evaluation import budget, lifecycle, pipeline, sweeper
from app.extensions import db, redis_connection
from app.lms import activities
from app.models import Activity, GradingJob, JobStatus, ModelUsage, Submission
from tests.conftest import run_jobs
from tests.fakes.llm_server import _completion
from tests.test_admin import admin, admin_app, csrf_token  # noqa: F401  (fixtures)
from tests.test_core_loop import GOOD_REPLY, open_activity, status, upload
from tests.test_reliability import stack  # noqa: F401  (the fixture: real workers)
from tests.test_review import essay, teacher

#: What the fake model reports for every call: 1,000 tokens, so a budget counts exactly.
USAGE = {"prompt_tokens": 900, "completion_tokens": 100, "total_tokens": 1000}


def fixed_usage(request: dict):
    return _completion(request, GOOD_REPLY, USAGE)


def slow_fixed_usage(request: dict):
    """A reply that takes a moment, so that two workers' gradings overlap."""
    time.sleep(0.5)
    return fixed_usage(request)


def the_activity() -> Activity:
    db.session.expire_all()
    return db.session.query(Activity).one()


def with_history(activity: Activity, when: datetime) -> None:
    """A ledger row from ``when``: the activity's mean per call becomes USAGE, so estimates
    are exact (one that old counts in no budget of this month)."""
    db.session.add(
        ModelUsage(
            activity_id=activity.id,
            organization_id=activity.platform.organization_id,
            model="fake-model",
            calls=1,
            prompt_tokens=USAGE["prompt_tokens"],
            completion_tokens=USAGE["completion_tokens"],
            created_at=when,
        )
    )
    db.session.commit()


def per_grading(activity: Activity, config) -> int:
    """Tokens one grading takes: the planned calls, each USAGE."""
    return spend.estimate(activity, [], config).per_submission * USAGE["total_tokens"]


def month_tokens(activity: Activity) -> int:
    used = spend.budget(activity)
    return used.spent.prompt_tokens + used.spent.completion_tokens


def jobs_by_state() -> dict[str, int]:
    db.session.expire_all()
    found: dict[str, int] = {}
    for job in db.session.query(GradingJob).all():
        key = f"{job.status}:{job.waiting_for}" if job.waiting_for else str(job.status)
        found[key] = found.get(key, 0) + 1
    return found


CLASS = [str(n) for n in range(30, 36)]


def test_a_class_reaching_its_limit_mid_batch_waits_with_two_real_workers(
    app,
    stack,  # noqa: F811
    browser,
    platform,
    llm,
    live_tool,
):
    """Six students upload at once to an activity whose month leaves room for three
    gradings; two worker processes grade them, each reply 1,000 tokens per call. Exactly
    three are graded (the two workers never both start into the last of the budget), three
    wait for budget with a message for the student, and the month's ledger stays within the
    limit. Raising the limit (the teacher's settings) grades the rest."""
    llm.set_default(slow_fixed_usage)
    for sub in CLASS:
        platform.enrol(sub)
    pages = {sub: open_activity(browser, platform, live_tool, user=sub) for sub in CLASS}
    activity = the_activity()
    with_history(activity, spend.month_start() - timedelta(days=3))
    each = per_grading(activity, app.config)
    limit = 3 * each + each // 2
    activities.configure(activity, monthly_token_limit=str(limit))
    stack.start_worker()
    stack.start_worker()
    for sub in CLASS:
        assert upload(browser, pages[sub], "essay.txt", essay(sub)).status_code == 303

    def settled() -> dict[str, int] | None:
        found = jobs_by_state()
        busy = found.get("pending", 0) + found.get("processing", 0)
        return found if sum(found.values()) == len(CLASS) and not busy else None

    found = stack.wait_for("every upload graded or waiting", settled, seconds=120)
    assert found == {"completed": 3, "waiting:budget": 3}, "graded past the budget"
    assert month_tokens(the_activity()) == 3 * each <= limit
    waiting = [sub for sub in CLASS if status(browser, pages[sub])["waiting_for"] == spend.BUDGET]
    assert len(waiting) == 3
    seen = status(browser, pages[waiting[0]])
    assert seen["status"] == "waiting" and "budget" in seen["message"]
    assert seen["retry_at"] == spend.next_month().isoformat()
    page = browser.get(pages[waiting[0]]).text
    assert "this month&#39;s spending limit is reached" in page

    activities.configure(the_activity(), monthly_token_limit=str(6 * each))
    stack.wait_for("all graded", lambda: jobs_by_state() == {"completed": 6}, seconds=120)
    assert month_tokens(the_activity()) == 6 * each


def test_a_grading_under_way_holds_its_share_of_the_budget(app, browser, platform, llm, live_tool):
    """The race, made deterministic: a grading another worker has started reserved its
    estimate, so a second start into what would be left without it waits; once the first
    is done its ledger rows take the reservation's place, and the month's turn frees it."""
    llm.set_default(fixed_usage)
    first = open_activity(browser, platform, live_tool, user="2")
    second = open_activity(browser, platform, live_tool, user="4")
    activity = the_activity()
    with_history(activity, spend.month_start() - timedelta(days=3))
    each = per_grading(activity, app.config)
    activities.configure(activity, monthly_token_limit=str(each))
    upload(browser, first, "a.txt", essay("2"))
    upload(browser, second, "b.txt", essay("4"))
    running, queued = db.session.query(GradingJob).order_by(GradingJob.id).all()
    # the first is being graded by a worker elsewhere: taken, with its estimate reserved
    assert pipeline._claim(running, running.job_id)
    assert (running.status, running.reserved_tokens) == (JobStatus.PROCESSING, each)
    assert spend.budget(the_activity()).tokens_left == 0

    pipeline.run(queued.id, queued.job_id)

    db.session.refresh(queued)
    assert (queued.status, queued.waiting_for) == (JobStatus.WAITING, spend.BUDGET)
    assert queued.retry_at.replace(tzinfo=UTC) == spend.next_month()
    assert queued.tries == 0  # not a failure of the service: no retry used up
    assert spend.budget(the_activity()).waiting == 1
    # the first one's worker dies and the sweeper hands it back: the reservation goes with
    # its run; graded again, its ledger rows take the reservation's place
    assert lifecycle.move(running, (JobStatus.PROCESSING,), JobStatus.PENDING)
    assert spend.budget(the_activity()).tokens_left == each
    pipeline.run(running.id, running.job_id)
    db.session.refresh(running)
    month = spend.budget(the_activity())
    assert running.status == JobStatus.COMPLETED
    assert (month.reserved_tokens, month.used_tokens, month.tokens_left) == (0, each, 0)
    # next month starts afresh
    assert spend.budget(the_activity(), now=spend.next_month()).tokens_left == each


def test_raising_the_limit_grades_what_waited_and_the_api_says_why(
    app, browser, platform, llm, live_tool
):
    """In this process: the limit is 0, so the upload waits for budget (the API word stays
    ``processing``); the teacher's settings page raises it and shows what is left; the
    sweeper queues the job and it is graded."""
    llm.set_default(fixed_usage)
    page = open_activity(browser, platform, live_tool, user="2")
    activity = the_activity()
    activities.configure(activity, monthly_token_limit="0")
    upload(browser, page, "essay.txt", essay("2"))
    run_jobs()
    job = db.session.query(GradingJob).one()
    db.session.refresh(job)
    assert (job.status, job.waiting_for) == (JobStatus.WAITING, spend.BUDGET)
    assert shown_as(job.status) == "processing"
    assert spend.budget_use() == [
        {
            "scope": "activity",
            "id": activity.id,
            "name": activity.title,
            "cost_limit": None,
            "token_limit": 0,
            "cost_used": 0.0,
            "tokens_used": 0,
            "cost_left": None,
            "tokens_left": 0,
            "waiting": 1,
        }
    ]
    sweeper.sweep(timedelta(0))
    run_jobs()
    db.session.refresh(job)
    assert job.status == JobStatus.WAITING  # not due before the month turns

    activities.configure(the_activity(), monthly_token_limit="1000000")

    assert sweeper.sweep(timedelta(seconds=60)) == 1
    run_jobs()
    db.session.refresh(job)
    assert job.status == JobStatus.COMPLETED and job.waiting_for is None
    assert spend.budget(the_activity()).tokens_left == 1_000_000 - month_tokens(the_activity())


def test_a_money_limit_counts_priced_calls_and_the_organization_holds_every_activity(
    app, browser, platform, llm, live_tool
):
    """A limit in money on the organization: the price makes each grading cost something,
    and once the school's month is spent a grading of any of its activities waits."""
    app.config["EVALUAITOR_LLM_PRICES"] = {"fake-model": [1.0, 2.0]}  # per 1,000 tokens
    llm.set_default(fixed_usage)
    page = open_activity(browser, platform, live_tool, user="2")
    activity = the_activity()
    organization = activity.platform.organization
    with_history(activity, spend.month_start() - timedelta(days=3))
    calls = spend.estimate(activity, [], app.config).per_submission
    each = calls * (0.9 * 1.0 + 0.1 * 2.0)
    organization.monthly_cost_limit = each * 1.5
    db.session.commit()
    upload(browser, page, "a.txt", essay("2"))
    run_jobs()
    upload(browser, page, "b.txt", essay("2b"))
    run_jobs()
    db.session.expire_all()
    first, second = db.session.query(Submission).order_by(Submission.id).all()
    assert first.status == JobStatus.COMPLETED
    assert (second.status, second.waiting_for) == (JobStatus.WAITING, spend.BUDGET)
    month = spend.budget(organization)
    assert round(month.used_cost, 6) == round(each, 6)
    assert round(month.cost_left, 6) == round(each * 0.5, 6)
    # the ledger names the organization for LMS gradings too
    assert {row.organization_id for row in db.session.query(ModelUsage)} == {organization.id}


def test_months_are_utc_calendar_months() -> None:
    late = datetime(2026, 12, 31, 23, 30, tzinfo=UTC)
    assert spend.month_start(late) == datetime(2026, 12, 1, tzinfo=UTC)
    assert spend.next_month(late) == datetime(2027, 1, 1, tzinfo=UTC)
    # 00:30 on 1 March in Madrid is still February in UTC
    madrid = datetime(2027, 3, 1, 0, 30, tzinfo=UTC) - timedelta(hours=1)
    assert spend.month_start(madrid) == datetime(2027, 2, 1, tzinfo=UTC)


def test_a_start_waits_for_another_check_of_the_same_budget(
    app, browser, platform, llm, live_tool, monkeypatch
):
    """The check and the reservation run under the organization's budget lock: while
    another worker holds it, a start does not read the budget at all; it gives up after
    LOCK_SECONDS with the row untouched, for the sweeper to queue again."""
    llm.set_default(fixed_usage)
    page = open_activity(browser, platform, live_tool, user="2")
    activities.configure(the_activity(), monthly_token_limit="1000000")
    upload(browser, page, "essay.txt", essay("2"))
    job = db.session.query(GradingJob).one()
    monkeypatch.setattr(budget, "LOCK_SECONDS", 0.5)
    key = (
        f"{app.config['EVALUAITOR_QUEUE_PREFIX']}-budget:organization:{spend.organization_of(job)}"
    )
    held = redis_connection().lock(key, timeout=10)
    assert held.acquire(blocking=False)
    try:
        with pytest.raises(LockError):
            pipeline.run(job.id, job.job_id)
        db.session.refresh(job)
        assert job.status == JobStatus.PENDING
    finally:
        held.release()
    pipeline.run(job.id, job.job_id)
    db.session.refresh(job)
    assert job.status == JobStatus.COMPLETED


def test_the_admin_sets_an_organizations_limits_and_sees_what_is_left(
    admin,  # noqa: F811
    platform,
    llm,
    live_tool,
    browser,
):
    """The admin page: the school's limits (refused when not a number from 0), what its
    month used and has left, and how many gradings wait; raising it grades them."""
    llm.set_default(fixed_usage)
    page = open_activity(browser, platform, live_tool, user="2")
    organization = the_activity().platform.organization
    path = f"/admin/organizations/{organization.id}/limits"

    def post(**form):
        token = csrf_token(admin.get("/admin/").text)
        return admin.post(path, data=form | {"csrf_token": token})

    refused = post(tokens="-5", cost="")
    assert refused.status_code == 400 and 'aria-invalid="true"' in refused.text
    assert post(tokens="2.5", cost="").status_code == 400
    assert post(tokens="0", cost="12.5").status_code == 303
    db.session.expire_all()
    assert (organization.monthly_token_limit, organization.monthly_cost_limit) == (0, 12.5)
    upload(browser, page, "essay.txt", essay("2"))
    run_jobs()
    shown = admin.get("/admin/").text
    assert "0 of 0 tokens used this month, 0 left." in shown
    assert "1 grading waits for budget." in shown

    assert post(tokens="", cost="").status_code == 303
    sweeper.sweep(timedelta(seconds=60))
    run_jobs()
    db.session.expire_all()
    assert db.session.query(GradingJob).one().status == JobStatus.COMPLETED
    assert "grading waits for budget" not in admin.get("/admin/").text


def test_the_teacher_sets_the_limit_sees_what_is_left_and_raising_it_grades(
    app, browser, platform, llm, live_tool
):
    """The settings form takes the activity's limits (refusing what is no number from 0);
    the class list and the settings page say what is left and who waits for budget; the
    bulk regrade's estimate says when it does not fit; saving a higher limit grades the
    waiting work."""
    from tests.test_deep_linking import valid_form

    llm.set_default(fixed_usage)
    student = open_activity(browser, platform, live_tool, user="2")
    staff = teacher(browser, platform, live_tool)
    bad = browser.post(staff + "settings", data=valid_form(monthly_token_limit="-1"))
    assert bad.status_code == 400 and 'id="monthly_token_limit-error"' in bad.text
    assert (
        browser.post(staff + "settings", data=valid_form(monthly_token_limit="0")).status_code
        == 303
    )
    upload(browser, student, "essay.txt", essay("2"))
    run_jobs()

    listing = browser.get(staff).text
    assert "Waiting for budget (monthly spending limit)" in listing
    assert "0 of 0 tokens used this month, 0 left." in listing
    assert "1 grading waits for budget." in listing
    form = browser.get(staff + "settings").text
    assert 'name="monthly_token_limit" min="0" step="1" value="0"' in form
    assert "1 grading waits for budget." in form

    saved = browser.post(staff + "settings", data=valid_form(monthly_token_limit="100000"))
    assert saved.status_code == 303
    sweeper.sweep(timedelta(seconds=60))
    run_jobs()
    db.session.expire_all()
    assert db.session.query(GradingJob).one().has_result  # graded (valid_form may hold it)

    browser.post(staff + "settings", data=valid_form(monthly_token_limit="1"))
    estimate = browser.get(staff + "regrade", params={"scope": "all"}).text
    assert "This regrade does not fit in what is left this month" in estimate
    left = spend.budget(the_activity()).tokens_left
    assert f"of 1 tokens used this month, {left} left." in estimate


def test_a_spanish_student_reads_the_wait_in_spanish(browser, platform, llm, live_tool):
    from tests.test_i18n import in_locale

    llm.set_default(fixed_usage)
    student = open_activity(browser, platform, live_tool, **in_locale("es-ES"))
    activities.configure(the_activity(), monthly_cost_limit="0", monthly_token_limit="0")
    upload(browser, student, "essay.txt", essay("2"))
    run_jobs()
    spanish = "En espera de presupuesto de corrección: se ha alcanzado el límite de gasto"
    assert spanish in html.unescape(browser.get(student).text)
    assert status(browser, student)["message"].startswith(spanish)


def test_the_cli_sets_an_activitys_limits_with_the_same_rules(app, browser, platform, live_tool):
    from click.testing import CliRunner
    from flask.cli import ScriptInfo

    from app.cli import cli

    open_activity(browser, platform, live_tool, user="2")
    activity_id = str(the_activity().id)

    def invoke(*args: str):
        info = ScriptInfo(create_app=lambda: app)
        return CliRunner().invoke(cli, ["activity", "configure", activity_id, *args], obj=info)

    refused = invoke("--monthly-tokens", "1.5")
    assert refused.exit_code == 1 and "monthly_token_limit: Enter a whole number" in refused.output
    assert invoke("--monthly-tokens", "20000", "--monthly-cost", "3.5").exit_code == 0
    activity = the_activity()
    assert (activity.monthly_token_limit, activity.monthly_cost_limit) == (20000, 3.5)
    assert invoke("--monthly-cost", "").exit_code == 0
    assert the_activity().monthly_cost_limit is None
