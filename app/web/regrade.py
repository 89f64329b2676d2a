"""The bulk regrade: the teacher picks submissions on the class list (or takes all), reads
what grading them again would take (model calls, tokens, cost: app.spend.estimate), and
confirms; each is then regraded as one alone is (app.lms.review.regrade), audited.

The page token names one activity: only that activity's students' latest submissions can be
chosen, and any other id answers 404 rather than being skipped quietly.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from flask import current_app, redirect, render_template, request, url_for
from flask_babel import lazy_gettext as _l
from werkzeug.datastructures import MultiDict

from app import spend, tenants
from app.errors import NotFound
from app.extensions import db
from app.grading.registry import PluginError
from app.grading.rubric import RubricError
from app.i18n import localize
from app.lms import gradebook, review
from app.lti.nrps import Roster
from app.models import Activity
from app.web.blueprint import bp, staff_session

NOTHING_CHOSEN = _l("Choose at least one submission on the class list, or regrade all.")
NO_MODEL = _l(
    "No language model is configured (EVALUAITOR_LLM_BASE_URL), and this strategy needs one: "
    "grading again would only fail. Ask an administrator to set it first."
)


@dataclass
class Choice:
    """The chosen students' latest submissions: those a regrade can start, those being
    graded already, and (when taking all) those the teacher graded, which are their
    reference and the activity's calibration examples; the last two are shown, then left
    alone."""

    ready: list[gradebook.StudentRow] = field(default_factory=list)
    busy: list[gradebook.StudentRow] = field(default_factory=list)
    kept: list[gradebook.StudentRow] = field(default_factory=list)


@dataclass
class Plan:
    """What the confirmation page shows: the choice, its estimate, or why it cannot go on."""

    choice: Choice
    estimate: spend.Estimate | None = None
    error: str | None = None
    #: This month's limited budgets of the activity and its school, with what is left.
    budgets: list[spend.Budget] = field(default_factory=list)

    @property
    def can_confirm(self) -> bool:
        return self.error is None and bool(self.choice.ready)

    @property
    def over_budget(self) -> list[spend.Budget]:
        """The budgets the estimate does not fit in: some regrades will wait for budget
        (checked again at each start: app.evaluation.budget)."""
        if self.estimate is None:
            return []
        tokens = self.estimate.prompt_tokens + self.estimate.completion_tokens
        return [b for b in self.budgets if not b.allows(self.estimate.cost, tokens)]


@bp.get("/regrade")
def regrade_estimate(token: str):
    session = staff_session(token)
    activity = db.session.get(Activity, session.activity_id)
    return _page(token, activity, _plan(activity, request.args))


@bp.post("/regrade")
def regrade_chosen(token: str):
    session = staff_session(token)
    activity = db.session.get(Activity, session.activity_id)
    plan = _plan(activity, request.form)
    if not plan.can_confirm:
        return _page(token, activity, plan)[0], 400
    submissions = [row.submission for row in plan.choice.ready]
    started, skipped = review.regrade_many(submissions, session.user_id)
    done = "regrading_some" if skipped or not started else "regrading_all"
    return redirect(url_for("web.activity", token=token, done=done), code=303)


def _plan(activity: Activity, values: MultiDict) -> Plan:
    """The plan for the submissions ``values`` name (``scope=all``: every student's latest)."""
    config = current_app.config
    plan = Plan(_choose(activity, values))
    if not plan.choice.ready and not plan.choice.busy and not plan.choice.kept:
        plan.error = str(NOTHING_CHOSEN)
        return plan
    submissions = [row.submission for row in plan.choice.ready]
    plan.budgets = spend.activity_budgets(activity)
    try:
        plan.estimate = spend.estimate(activity, submissions, config)
    except (PluginError, RubricError) as exc:
        plan.error = str(exc)
        return plan
    if plan.estimate.calls and not config.get("EVALUAITOR_LLM_BASE_URL"):
        plan.error = str(NO_MODEL)
    elif plan.estimate.calls:  # every regrade would fail without sending: say it now
        forbidden = tenants.forbidden_model(activity.platform.organization, config)
        plan.error = localize(forbidden) if forbidden else None
    return plan


def _page(token: str, activity: Activity, plan: Plan) -> tuple[str, int]:
    html = render_template("regrade.html", token=token, activity=activity, plan=plan)
    return html, 200 if plan.error is None else 400


def _choose(activity: Activity, values: MultiDict) -> Choice:
    """The latest submissions named by ``submission`` values, or all with ``scope=all``
    except those the teacher graded (a regrade would replace their grade: they must be
    chosen one by one). Raises NotFound for any id that is not one of this activity's
    students' latest."""
    rows = gradebook.student_rows(activity, Roster(()))
    latest = {row.submission.id: row for row in rows if row.submission is not None}
    choice = Choice()
    if values.get("scope") == "all":
        ids = []
        for row in latest.values():
            if row.grade and row.grade.is_teacher_graded:
                choice.kept.append(row)
            else:
                ids.append(row.submission.id)
    else:
        raw = values.getlist("submission")
        ids = [int(value) for value in raw if value.isascii() and value.isdigit()]
        if len(ids) != len(raw) or not set(ids) <= set(latest):
            raise NotFound(_l("Only this activity's students' latest submissions can be chosen."))
    for submission_id in dict.fromkeys(ids):
        row = latest[submission_id]
        (choice.ready if row.submission.status in review.REGRADABLE else choice.busy).append(row)
    return choice
