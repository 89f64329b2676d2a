"""What model calls cost: prices, the spend ledger, and the estimate before a bulk regrade.

Prices come from the settings, per 1,000 tokens: EVALUAITOR_LLM_PRICES names models
(``{"model": [input, output]}``), and EVALUAITOR_LLM_PRICE_INPUT_PER_1K / _OUTPUT_PER_1K price
every other model (both 0: no price, so cost is unknown rather than a made-up zero).

Every run of a grading job adds one :class:`ModelUsage` row per model it called
(:func:`record_run`; a run that failed after some calls too), priced at that moment: the
ledger is what was spent, regrades included, and a later price change does not rewrite it.
Replies served from the cache cost nothing and are not in it. Statistics (:func:`totals`,
:func:`per_day`) read only the ledger, always scoped by one activity.

Monthly limits (:class:`Budget`): an organization (all its platforms and its API
evaluations) and an activity may each limit what is spent per calendar month in UTC, in money
(the priced calls only: a model without a price can only be held by a token limit) and in
tokens (input and output). What a month has used is its ledger rows plus what the gradings
being run now reserved when they started (their estimate, :func:`grading_estimate`): the
evaluation core checks a grading against both before starting it (app.evaluation.budget).
This module only reads and adds up; it knows no side of the app.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, case, func, select

from app import metrics
from app.extensions import db
from app.grading import cross_check, registry, runner
from app.grading.base import PlannedCall
from app.grading.pipeline_prompts import CHARS_PER_TOKEN, rubric_listing
from app.grading.rubric import parse_rubric
from app.models import (
    Activity,
    Evaluation,
    GradingJob,
    JobStatus,
    Organization,
    Platform,
    Submission,
)
from app.models.jobs import ModelUsage

#: How many days the statistics page shows spend for.
DAYS = 30


@dataclass(frozen=True)
class Price:
    input_per_1k: float
    output_per_1k: float

    def of(self, prompt_tokens: int, completion_tokens: int) -> float:
        return (prompt_tokens * self.input_per_1k + completion_tokens * self.output_per_1k) / 1000


def price_of(model: str, config: Mapping[str, Any]) -> Price | None:
    """The model's price from the settings; None when nothing prices it."""
    named = (config.get("EVALUAITOR_LLM_PRICES") or {}).get(model)
    if named is not None:
        return Price(float(named[0]), float(named[1]))
    fallback = Price(
        config["EVALUAITOR_LLM_PRICE_INPUT_PER_1K"], config["EVALUAITOR_LLM_PRICE_OUTPUT_PER_1K"]
    )
    return fallback if fallback.input_per_1k or fallback.output_per_1k else None


def cost(model: str, prompt_tokens: int, completion_tokens: int, config: Mapping[str, Any]):
    """What the tokens cost with the model's price; None when the model has none."""
    price = price_of(model, config)
    return None if price is None else price.of(prompt_tokens, completion_tokens)


# -- the ledger -------------------------------------------------------------------------


def record_run(
    job: GradingJob, calls: Iterable[Mapping[str, Any]], config: Mapping[str, Any]
) -> list[ModelUsage]:
    """Add (uncommitted) the ledger rows of one run of ``job`` from its call records
    (app.llm.session.CallRecord as stored in the provenance): the caller commits them with the
    run's result, so a run that cannot store its result adds nothing."""
    spent: dict[str, list[int]] = {}
    for call in calls:
        if not call.get("cached"):
            tally = spent.setdefault(str(call.get("model") or ""), [0, 0, 0])
            tally[0] += 1
            tally[1] += _tokens(call.get("prompt_tokens"))
            tally[2] += _tokens(call.get("completion_tokens"))
    owner: dict[str, int | None] = {
        "activity_id": job.submission.activity_id if job.submission else None,
        "organization_id": organization_of(job),
    }
    rows = [
        ModelUsage(
            job_id=job.id,
            model=model[:200],
            calls=n,
            prompt_tokens=prompt,
            completion_tokens=completion,
            cost=cost(model, prompt, completion, config),
            **owner,
        )
        for model, (n, prompt, completion) in sorted(spent.items())
    ]
    db.session.add_all(rows)
    for row in rows:
        _count(row)
    return rows


def organization_of(job: GradingJob) -> int | None:
    """The organization a grading is spent for: the API evaluation's, or the one its
    activity's platform belongs to (None for a platform of none)."""
    if job.evaluation is not None:
        return job.evaluation.organization_id
    return job.submission.activity.platform.organization_id if job.submission else None


def _count(row: ModelUsage) -> None:
    """The run's calls in the process's counters (app.metrics): made, whether or not the run
    then stores its result."""
    model = metrics.model_label(row.model)
    metrics.MODEL_CALLS.labels(model).inc(row.calls)
    metrics.MODEL_TOKENS.labels(model, "prompt").inc(row.prompt_tokens)
    metrics.MODEL_TOKENS.labels(model, "completion").inc(row.completion_tokens)
    if row.cost is not None:
        metrics.MODEL_COST.labels(model).inc(row.cost)


def _tokens(value: Any) -> int:
    """A token count from a call record; servers that report no usage count as 0."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


# -- reading it -------------------------------------------------------------------------


@dataclass(frozen=True)
class Spend:
    """Calls, tokens and cost over some ledger rows. ``cost`` sums the priced rows; it is None
    when no row had a price, and ``unpriced`` counts the calls left out of it."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = None
    unpriced: int = 0

    def __add__(self, other: Spend) -> Spend:
        known = [c for c in (self.cost, other.cost) if c is not None]
        return Spend(
            self.calls + other.calls,
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            sum(known) if known else None,
            self.unpriced + other.unpriced,
        )

    @classmethod
    def of(cls, row: ModelUsage) -> Spend:
        return cls(
            row.calls,
            row.prompt_tokens,
            row.completion_tokens,
            row.cost,
            row.calls if row.cost is None else 0,
        )


@dataclass(frozen=True)
class Day:
    day: date
    total: Spend
    #: The day's spend per model, by name; the page lists them when several were used.
    models: dict[str, Spend]


def totals(activity_id: int) -> Spend:
    """Everything the activity's gradings spent, regrades included."""
    return _summed(ModelUsage.activity_id == activity_id)


def of_job(job_id: int) -> Spend:
    """Everything one grading job spent: its first grading, retries and regrades."""
    return _summed(ModelUsage.job_id == job_id)


def _summed(where: ColumnElement[bool]) -> Spend:
    """The ledger rows ``where`` holds, added up in the database (as :meth:`Spend.__add__`
    would: the cost of the priced rows, None when none is)."""
    calls, prompt, completion, cost_, unpriced = db.session.execute(
        select(
            func.coalesce(func.sum(ModelUsage.calls), 0),
            func.coalesce(func.sum(ModelUsage.prompt_tokens), 0),
            func.coalesce(func.sum(ModelUsage.completion_tokens), 0),
            func.sum(ModelUsage.cost),
            func.coalesce(func.sum(case((ModelUsage.cost.is_(None), ModelUsage.calls))), 0),
        ).where(where)
    ).one()
    return Spend(calls, prompt, completion, cost_, unpriced)


@dataclass(frozen=True)
class Days:
    """Spend on each day of a window, newest first, days without any left out."""

    days: list[Day]
    window: int

    @property
    def models(self) -> list[str]:
        """Every model used in the window: the page breaks days down by model when several."""
        return sorted({model for day in self.days for model in day.models})

    @property
    def most_tokens(self) -> int:
        """The largest day's input tokens: the chart's full bar."""
        return max((day.total.prompt_tokens for day in self.days), default=0)


def per_day(activity_id: int, *, days: int = DAYS, today: date | None = None) -> Days:
    """The activity's spend on each of the last ``days`` days (UTC)."""
    today = today or datetime.now(UTC).date()
    since = datetime.combine(today - timedelta(days=days - 1), datetime.min.time(), UTC)
    found: dict[date, dict[str, Spend]] = {}
    for row in _rows(activity_id, since=since):
        day = found.setdefault(row.created_at.date(), {})
        day[row.model] = day.get(row.model, Spend()) + Spend.of(row)
    return Days(
        [
            Day(day, sum(models.values(), Spend()), dict(sorted(models.items())))
            for day, models in sorted(found.items(), reverse=True)
        ],
        days,
    )


def _rows(activity_id: int, *, since: datetime | None = None) -> Sequence[ModelUsage]:
    query = select(ModelUsage).where(ModelUsage.activity_id == activity_id)
    if since is not None:
        query = query.where(ModelUsage.created_at >= since)
    return db.session.scalars(query.order_by(ModelUsage.id)).all()


def per_call(activity_id: int) -> tuple[float, float] | None:
    """The activity's mean prompt and completion tokens per model call, from its ledger
    (runs whose server reported no usage left out); None before it has any."""
    return _per_call(ModelUsage.activity_id == activity_id)


def _per_call(where: ColumnElement[bool]) -> tuple[float, float] | None:
    calls, prompt, completion = db.session.execute(
        select(
            func.coalesce(func.sum(ModelUsage.calls), 0),
            func.coalesce(func.sum(ModelUsage.prompt_tokens), 0),
            func.coalesce(func.sum(ModelUsage.completion_tokens), 0),
        ).where(where, ModelUsage.prompt_tokens > 0)
    ).one()
    return (prompt / calls, completion / calls) if calls else None


# -- before a bulk regrade --------------------------------------------------------------


@dataclass(frozen=True)
class Estimate:
    """What grading ``submissions`` again would take. Calls follow the strategy's own plan
    (:meth:`GradingPlugin.planned_calls`, re-asks not foreseen), with the model-side check's
    call when it is on, and the plan once more for each submission whose latest grading was
    flagged for steering the grader (``ablations``: it will be graded again without the
    flagged passages, app.grading.cross_check); tokens per call are the activity's mean so far
    (``from_history``), else the prompt's characters at CHARS_PER_TOKEN plus REPLY_TOKENS.
    ``cost`` is None when a model has no price."""

    submissions: int
    calls: int
    #: Calls for each submission not flagged.
    per_submission: int
    ablations: int
    prompt_tokens: int
    completion_tokens: int
    cost: float | None
    from_history: bool
    models: tuple[str, ...]


#: Reply tokens assumed per call before an activity has a history: a page of feedback.
REPLY_TOKENS = 300


@dataclass(frozen=True)
class Grader:
    """What gradings are done with (an activity's settings, or an API evaluation's) and the
    mean tokens per call of its ledger so far (None before it has any)."""

    plugin_name: str
    plugin_params: Mapping[str, Any] | None
    rubric: Mapping[str, Any] | None
    instructions: str
    model: str | None
    history: tuple[float, float] | None

    @classmethod
    def of_activity(cls, activity: Activity) -> Grader:
        return cls(
            activity.plugin_name,
            activity.plugin_params,
            activity.rubric,
            activity.instructions or "",
            activity.model,
            per_call(activity.id),
        )

    @classmethod
    def of_evaluation(cls, evaluation: Evaluation) -> Grader:
        """An API evaluation's settings, with its organization's API gradings as history."""
        history = _per_call(
            (ModelUsage.organization_id == evaluation.organization_id)
            & ModelUsage.activity_id.is_(None)
        )
        return cls(
            evaluation.plugin_name,
            evaluation.plugin_params,
            evaluation.rubric,
            evaluation.instructions or "",
            evaluation.evaluator_id or None,
            history,
        )


def estimate(
    activity: Activity, submissions: Sequence[Submission], config: Mapping[str, Any]
) -> Estimate:
    """The estimate for regrading ``submissions`` with the activity's strategy and model.
    Raises PluginError or RubricError when the activity's settings cannot grade."""
    files = [(_chars(s.extracted_text, s.size_bytes), _flagged(s.job)) for s in submissions]
    return _estimate(Grader.of_activity(activity), files, config)


def grading_estimate(job: GradingJob, config: Mapping[str, Any]) -> Estimate:
    """The estimate for grading ``job`` once, by its owner's settings. Raises PluginError or
    RubricError when they cannot grade."""
    if job.evaluation is not None:
        grader = Grader.of_evaluation(job.evaluation)
    else:
        grader = Grader.of_activity(job.submission.activity)
    return _estimate(grader, [(_chars(job.extracted_text, job.size_bytes), _flagged(job))], config)


def _chars(text: str | None, size_bytes: int) -> int:
    """A file's length for the estimate: its text once read, else its size."""
    return len(text or "") or size_bytes


def _estimate(
    grader: Grader, files: Sequence[tuple[int, bool]], config: Mapping[str, Any]
) -> Estimate:
    """The estimate for grading ``files`` (characters, whether flagged for steering)."""
    plugin = registry.get(grader.plugin_name)
    params = registry.validate_params(plugin, dict(grader.plugin_params or {}))
    rubric = parse_rubric(dict(grader.rubric)) if grader.rubric else None
    grading = plugin.planned_calls(params, rubric)
    planned = list(grading)
    if grading and cross_check.Safeguards.from_config(config).steering_check:
        check = cross_check.CHECK_SYSTEM + cross_check.CHECK_USER
        planned.append(PlannedCall(fixed_chars=len(check)))
    history = grader.history
    assignment = len(grader.instructions) + (len(rubric_listing(rubric)) if rubric else 0)
    default_model = grader.model or config["EVALUAITOR_LLM_MODEL"]
    tokens: dict[str, list[float]] = {}
    calls = ablations = 0
    for text, flagged in files:
        ablated = bool(grading) and flagged
        ablations += ablated
        calls_of = [*planned, *grading] if ablated else planned
        calls += len(calls_of)
        for call in calls_of:
            tally = tokens.setdefault(call.model or default_model, [0.0, 0.0])
            if history:
                tally[0] += history[0]
                tally[1] += history[1]
            else:
                tally[0] += (call.fixed_chars + assignment + text) / CHARS_PER_TOKEN
                tally[1] += REPLY_TOKENS
    costs = [cost(model, prompt, reply, config) for model, (prompt, reply) in tokens.items()]
    return Estimate(
        submissions=len(files),
        calls=calls,
        per_submission=len(planned),
        ablations=ablations,
        prompt_tokens=round(sum(prompt for prompt, _ in tokens.values())),
        completion_tokens=round(sum(reply for _, reply in tokens.values())),
        cost=None if None in costs else sum(costs),
        from_history=history is not None,
        models=tuple(sorted(tokens)),
    )


def _flagged(job: GradingJob | None) -> bool:
    """Whether the latest grading of the job was flagged for steering the grader."""
    flags = job.flags if job is not None else None
    return any(isinstance(f, dict) and f.get("code") in runner.STEERING for f in flags or ())


# -- monthly limits ---------------------------------------------------------------------

#: What a job waits for when a spend limit holds it (GradingJob.waiting_for).
BUDGET = "budget"


#: Highest limits accepted: far above any school's month.
MAX_COST_LIMIT = 1e9
MAX_TOKEN_LIMIT = 10**13


def read_limit(text: str, *, whole: bool) -> float | None:
    """A limit as a person typed it: empty lifts it (None), else a number from 0 (which
    grades nothing) to the maximum, whole for tokens. Raises ValueError otherwise."""
    if not text.strip():
        return None
    value = float(text)
    high = MAX_TOKEN_LIMIT if whole else MAX_COST_LIMIT
    if not 0 <= value <= high or (whole and not value.is_integer()):  # also refuses nan
        raise ValueError(f"limit {text!r} is not a number from 0 to {high:g}")
    return int(value) if whole else value


def month_start(now: datetime | None = None) -> datetime:
    """The first moment of ``now``'s calendar month in UTC: where a month's spend begins."""
    now = (now or datetime.now(UTC)).astimezone(UTC)
    return datetime(now.year, now.month, 1, tzinfo=UTC)


def next_month(now: datetime | None = None) -> datetime:
    """The first moment of the following month (UTC): when a month's limit starts afresh."""
    start = month_start(now)
    return datetime(start.year + start.month // 12, start.month % 12 + 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Budget:
    """One scope's month: its limits (None: none), what its ledger holds since the month
    began, and what the gradings it is running now reserved when they started."""

    #: ``organization`` or ``activity``.
    scope: str
    scope_id: int
    name: str
    cost_limit: float | None
    token_limit: int | None
    spent: Spend
    reserved_cost: float = 0.0
    reserved_tokens: int = 0
    #: Gradings that wait for this budget now.
    waiting: int = 0

    @property
    def limited(self) -> bool:
        return self.cost_limit is not None or self.token_limit is not None

    @property
    def used_cost(self) -> float:
        return (self.spent.cost or 0.0) + self.reserved_cost

    @property
    def used_tokens(self) -> int:
        return self.spent.prompt_tokens + self.spent.completion_tokens + self.reserved_tokens

    @property
    def cost_left(self) -> float | None:
        return None if self.cost_limit is None else max(0.0, self.cost_limit - self.used_cost)

    @property
    def tokens_left(self) -> int | None:
        return None if self.token_limit is None else max(0, self.token_limit - self.used_tokens)

    def allows(self, cost_: float | None, tokens: int) -> bool:
        """Whether a grading estimated at ``cost_`` and ``tokens`` fits in what is left
        (an unpriced estimate counts nothing against a money limit)."""
        cost_left, tokens_left = self.cost_left, self.tokens_left
        return (cost_left is None or (cost_ or 0.0) <= cost_left) and (
            tokens_left is None or tokens <= tokens_left
        )


def budget(owner: Organization | Activity, now: datetime | None = None) -> Budget:
    """The month of an organization (every platform's gradings and its API evaluations') or
    of an activity (its students' gradings and regrades)."""
    if isinstance(owner, Organization):
        scope, ledger, name = "organization", ModelUsage.organization_id == owner.id, owner.name
    else:
        scope, ledger, name = "activity", ModelUsage.activity_id == owner.id, owner.title
    reserved_cost, reserved_tokens = db.session.execute(
        select(
            func.coalesce(func.sum(GradingJob.reserved_cost), 0.0),
            func.coalesce(func.sum(GradingJob.reserved_tokens), 0),
        ).where(jobs_of(owner), GradingJob.status == JobStatus.PROCESSING)
    ).one()
    return Budget(
        scope,
        owner.id,
        name or "",
        owner.monthly_cost_limit,
        owner.monthly_token_limit,
        _summed(ledger & (ModelUsage.created_at >= month_start(now))),
        float(reserved_cost),
        int(reserved_tokens),
        waiting_for_budget(owner),
    )


def limited_scopes(job: GradingJob) -> list[Organization | Activity]:
    """The organization and activity of a grading that have a limit (no query for their
    month: most gradings have none, and this is asked before each one starts)."""
    if job.evaluation is not None:
        scopes = [job.evaluation.organization]
    elif job.submission is not None:
        scopes = _scopes_of(job.submission.activity)
    else:
        scopes = []
    return [scope for scope in scopes if _limited(scope)]


def budgets_of(job: GradingJob, now: datetime | None = None) -> list[Budget]:
    """The limited budgets a grading counts against: its organization's, its activity's."""
    return [budget(scope, now) for scope in limited_scopes(job)]


def activity_budgets(activity: Activity, now: datetime | None = None) -> list[Budget]:
    """The limited budgets the activity's gradings count against: its organization's (the
    school's, over all its platforms) and its own."""
    return [budget(scope, now) for scope in _scopes_of(activity) if _limited(scope)]


def _scopes_of(activity: Activity) -> list[Organization | Activity]:
    organization = activity.platform.organization
    return [organization, activity] if organization is not None else [activity]


def _limited(owner: Organization | Activity) -> bool:
    return owner.monthly_cost_limit is not None or owner.monthly_token_limit is not None


def budget_use(now: datetime | None = None) -> list[dict[str, Any]]:
    """Every limited budget this month, for monitoring (a Prometheus gauge per scope):
    ``scope``, ``id``, ``name``, the limits, what is used (ledger and reservations), what is
    left, and how many gradings wait for it."""
    owners: list[Organization | Activity] = [
        *db.session.scalars(
            select(Organization).where(
                Organization.monthly_cost_limit.isnot(None)
                | Organization.monthly_token_limit.isnot(None)
            )
        ),
        *db.session.scalars(
            select(Activity).where(
                Activity.monthly_cost_limit.isnot(None) | Activity.monthly_token_limit.isnot(None)
            )
        ),
    ]
    found = []
    for owner in owners:
        month = budget(owner, now)
        found.append(
            {
                "scope": month.scope,
                "id": month.scope_id,
                "name": month.name,
                "cost_limit": month.cost_limit,
                "token_limit": month.token_limit,
                "cost_used": month.used_cost,
                "tokens_used": month.used_tokens,
                "cost_left": month.cost_left,
                "tokens_left": month.tokens_left,
                "waiting": month.waiting,
            }
        )
    return found


def waiting_for_budget(owner: Organization | Activity) -> int:
    """How many gradings of the organization or the activity wait for budget."""
    return db.session.scalar(
        select(func.count())
        .select_from(GradingJob)
        .where(jobs_of(owner), GradingJob.waiting_for == BUDGET)
        .where(GradingJob.status == JobStatus.WAITING)
    )


def jobs_of(owner: Organization | Activity) -> ColumnElement[bool]:
    """The grading jobs of an organization (its platforms' and its API's) or an activity."""
    of_activities = select(GradingJob.id).join(
        Submission, Submission.id == GradingJob.submission_id
    )
    if isinstance(owner, Activity):
        return GradingJob.id.in_(of_activities.where(Submission.activity_id == owner.id))
    of_platforms = (
        of_activities.join(Activity, Activity.id == Submission.activity_id)
        .join(Platform, Platform.id == Activity.platform_id)
        .where(Platform.organization_id == owner.id)
    )
    of_api = (
        select(GradingJob.id)
        .join(Evaluation, Evaluation.id == GradingJob.evaluation_id)
        .where(Evaluation.organization_id == owner.id)
    )
    return GradingJob.id.in_(of_platforms.union_all(of_api))
