"""What model calls cost: prices, the spend ledger, and the estimate before a bulk regrade.

Prices come from the settings, per 1,000 tokens: EVALUAITOR_LLM_PRICES names models
(``{"model": [input, output]}``), and EVALUAITOR_LLM_PRICE_INPUT_PER_1K / _OUTPUT_PER_1K price
every other model (both 0: no price, so cost is unknown rather than a made-up zero).

Every run of a grading job adds one :class:`ModelUsage` row per model it called
(:func:`record_run`; a run that failed after some calls too), priced at that moment: the
ledger is what was spent, regrades included, and a later price change does not rewrite it.
Replies served from the cache cost nothing and are not in it. Statistics (:func:`totals`,
:func:`per_day`) read only the ledger, always scoped by one activity.
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
from app.models import Activity, GradingJob, Submission
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
        "organization_id": job.evaluation.organization_id if job.evaluation else None,
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
    calls, prompt, completion = db.session.execute(
        select(
            func.coalesce(func.sum(ModelUsage.calls), 0),
            func.coalesce(func.sum(ModelUsage.prompt_tokens), 0),
            func.coalesce(func.sum(ModelUsage.completion_tokens), 0),
        ).where(ModelUsage.activity_id == activity_id, ModelUsage.prompt_tokens > 0)
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


def estimate(
    activity: Activity, submissions: Sequence[Submission], config: Mapping[str, Any]
) -> Estimate:
    """The estimate for regrading ``submissions`` with the activity's strategy and model.
    Raises PluginError or RubricError when the activity's settings cannot grade."""
    plugin = registry.get(activity.plugin_name)
    params = registry.validate_params(plugin, activity.plugin_params)
    rubric = parse_rubric(activity.rubric) if activity.rubric else None
    grading = plugin.planned_calls(params, rubric)
    planned = list(grading)
    if grading and cross_check.Safeguards.from_config(config).steering_check:
        check = cross_check.CHECK_SYSTEM + cross_check.CHECK_USER
        planned.append(PlannedCall(fixed_chars=len(check)))
    history = per_call(activity.id)
    assignment = len(activity.instructions or "") + (len(rubric_listing(rubric)) if rubric else 0)
    default_model = activity.model or config["EVALUAITOR_LLM_MODEL"]
    tokens: dict[str, list[float]] = {}
    calls = ablations = 0
    for submission in submissions:
        text = len(submission.extracted_text or "") or submission.size_bytes
        ablated = bool(grading) and _flagged(submission)
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
        submissions=len(submissions),
        calls=calls,
        per_submission=len(planned),
        ablations=ablations,
        prompt_tokens=round(sum(prompt for prompt, _ in tokens.values())),
        completion_tokens=round(sum(reply for _, reply in tokens.values())),
        cost=None if None in costs else sum(costs),
        from_history=history is not None,
        models=tuple(sorted(tokens)),
    )


def _flagged(submission: Submission) -> bool:
    """Whether the submission's latest grading was flagged for steering the grader."""
    flags = submission.job.flags if submission.job is not None else None
    return any(isinstance(f, dict) and f.get("code") in runner.STEERING for f in flags or ())
