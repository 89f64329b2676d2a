"""How the ensemble's replies become one grade: each reply read, each grader's grade, the
agreement band between graders, and the feedback (see :mod:`app.grading.ensemble`).

Only the independent rounds (direct and reverse) say what the graders agree on: in the
mutual-critique round each grader has read the others' issues, so an issue it repeats there
is not a second opinion. The revised grades count in a grader's mean only when the activity
asks for it (``critique_in_mean``); the design seed averages direct and reverse.

Each category's reconciled points are model-judged (app.grading.grounding): they count only
with a passage of the work. A grade remembers the runs it is made of (a grader's counted
runs, or its lower run when it swung; every grader's in the agreement band, one grader's
otherwise), and a category's evidence is the first passage those runs quoted for it, among
the runs that gave it points, that is found in the work (:func:`evidence`); when none is,
the first quoted, so the review shows what was claimed and why it failed.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal
from typing import TYPE_CHECKING, Any

from app.catalogue import N_
from app.grading.base import CriterionResult, Flag, GradingInput, GradingResult, Outcome
from app.grading.replies import Unreadable, reply_text
from app.grading.scores import misfit
from app.llm.jsonreply import parse_json_reply, preview

if TYPE_CHECKING:
    from app.grading.ensemble import Category, EnsembleParams

log = logging.getLogger(__name__)

#: The rounds in which a grader has not seen the others' grades.
INDEPENDENT = ("direct", "reverse")
#: A list marker a model may put before an issue ("- ", "* ", "• ", "2. ", "3) ").
_BULLET = re.compile(r"^(?:[-*•]|\d{1,2}[.)])\s+")


def half_up(value: float, digits: int = 0) -> float:
    """``value`` rounded with halves going up, as a teacher rounds (Python's ``round`` sends
    82.5 to 82). Float noise is settled at nine decimals first, so 82.49999999999999, which
    is what some means of 82.5 come out as, rounds like 82.5."""
    exact = Decimal(repr(round(value, 9)))
    return float(exact.quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP))


@dataclass
class Run:
    """One grader's answer to one framing; ``total`` is on 0..100, None when the reply could
    not be read (``problem`` says why); ``evidence`` the passages it quoted by category."""

    model: str
    framing: str
    total: float | None
    categories: dict[str, float]
    issues: list[str]
    reply: str
    problem: str = ""
    evidence: dict[str, tuple[str, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class GraderGrade:
    """A grade on 0..100 and the runs it is made of (whose quotes back its categories)."""

    total: float
    categories: dict[str, float]
    runs: tuple[Run, ...]


def parse_run(
    model: str,
    framing: str,
    reply: str,
    categories: tuple[Category, ...],
    placeholders: Sequence[str] = (),
) -> Run:
    """A run's scores and issues; a reply that does not follow the requested shape, or whose
    issues copy ``placeholders`` (its prompt's example), counts as no run, rather than as a
    grade read from whatever it holds."""
    try:
        data = parse_json_reply(reply)
        if not isinstance(data, dict):
            raise ValueError("the reply is not a JSON object")
        scores = _category_scores(data.get("categories"), categories)
        issues = _issues(data.get("issues"), placeholders)
        quotes = _evidence(data.get("evidence"), categories, placeholders)
    except ValueError as exc:
        log.info(
            "ensemble: %s's %s reply is unreadable (%s): %s", model, framing, exc, preview(reply)
        )
        return Run(model, framing, None, {}, [], reply, str(exc))
    return Run(
        model, framing, category_total(scores, categories), scores, issues, reply, evidence=quotes
    )


def category_total(scores: dict[str, float], categories: tuple[Category, ...]) -> float:
    """The categories' points as a total on 0..100: a run's, and a reconciled grade's again
    when grounding drops some (app.grading.ensemble.Ensemble.rescore)."""
    return 100 * sum(scores.values()) / sum(c.points for c in categories)


def _category_scores(given: object, categories: tuple[Category, ...]) -> dict[str, float]:
    """Each category's points, matched by its words (case and punctuation aside); a number
    or a numeric text within the category's points, never a boolean or a list, nor a value
    that reads as a fraction of the whole (:func:`app.grading.scores.misfit`)."""
    if not isinstance(given, dict):
        raise ValueError("'categories' is not an object")
    by_key = {_key(str(name)): value for name, value in given.items()}
    scores = {}
    for category in categories:
        value = by_key.get(_key(category.name))
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            raise ValueError(f"no score for {category.name!r}")
        points = float(value)  # a text that is not a number raises ValueError
        if not 0 <= points <= category.points:  # also refuses nan
            raise ValueError(f"{category.name!r} scored {value!r} of {category.points:g}")
        if why := misfit(points, None, category.points):
            raise ValueError(f"{category.name!r}: {why}")
        scores[category.name] = points
    return scores


def _evidence(
    given: object, categories: tuple[Category, ...], placeholders: Sequence[str]
) -> dict[str, tuple[str, ...]]:
    """The passages quoted for each category, matched by its words like the scores: a text,
    or a list of texts (several passages); absent, none (a reply in the shape asked before
    quotes were: its points then count for nothing, app.grading.grounding). Any other value,
    or a copy of the prompt's example, is refused."""
    if given is None:
        return {}
    if not isinstance(given, dict):
        raise Unreadable("'evidence' is not an object")
    by_key = {_key(str(name)): value for name, value in given.items()}
    quotes = {}
    for category in categories:
        value = by_key.get(_key(category.name))
        items = value if isinstance(value, list) else [value]
        if any(isinstance(item, list) for item in items):
            raise Unreadable(f"the evidence for {category.name!r} is not a list of texts")
        texts = (reply_text(item, "evidence", placeholders) for item in items)
        quotes[category.name] = tuple(text for text in texts if text)
    return quotes


def _issues(value: object, placeholders: Sequence[str]) -> list[str]:
    """The issues as texts: a list of texts, or one text holding one issue a line. Anything
    else is refused (iterating a text would make each of its letters an issue), and so is an
    issue that copies the prompt's example."""
    if value is None:
        return []
    if isinstance(value, str):
        items = value.splitlines()
    elif isinstance(value, list) and all(isinstance(item, str) for item in value):
        items = value
    else:
        raise Unreadable("'issues' is not a list of texts")
    issues = [_BULLET.sub("", item.strip()).strip() for item in items if item.strip()]
    for issue in issues:
        reply_text(issue, "issues", placeholders)  # raises on a copied example
    return [issue for issue in issues if issue]


def grader_grades(
    runs: list[Run], params: EnsembleParams
) -> tuple[dict[str, GraderGrade], list[Flag]]:
    """Each grader's grade: the mean of its direct and reverse runs (and of its revised one
    when ``critique_in_mean``), or its lower framing when the two differ by more than
    ``swing``; with an ``UnstableGrader`` flag for each grader that swung."""
    grades: dict[str, GraderGrade] = {}
    flags: list[Flag] = []
    for model in dict.fromkeys(r.model for r in runs):
        readable = [r for r in runs if r.model == model and r.total is not None]
        framed = [r for r in readable if r.framing in INDEPENDENT]
        counted = readable if params.critique_in_mean else framed
        if not counted:
            continue
        totals = [r.total for r in framed]
        if totals and max(totals) - min(totals) > params.swing:
            lowest = min(framed, key=lambda r: r.total)
            grades[model] = GraderGrade(lowest.total, lowest.categories, (lowest,))
            flags.append(
                Flag(
                    "UnstableGrader",
                    f"{model} changed its grade by more than "
                    f"{params.swing:g} points between framings.",
                )
            )
        else:
            grades[model] = _mean([GraderGrade(r.total, r.categories, (r,)) for r in counted])
    return grades, flags


def _mean(grades: list[GraderGrade]) -> GraderGrade:
    return GraderGrade(
        sum(g.total for g in grades) / len(grades),
        {
            name: sum(g.categories[name] for g in grades) / len(grades)
            for name in grades[0].categories
        },
        tuple(run for g in grades for run in g.runs),
    )


def deltas(runs: list[Run]) -> dict[str, float | None]:
    """Each grader's direct total minus its reverse one (None without both): how much the
    framing alone moved it."""
    result: dict[str, float | None] = {}
    for model in dict.fromkeys(r.model for r in runs):
        by_framing = {r.framing: r.total for r in runs if r.model == model}
        direct, reverse = by_framing.get("direct"), by_framing.get("reverse")
        result[model] = None if direct is None or reverse is None else direct - reverse
    return result


def reconcile(
    job: GradingInput,
    params: EnsembleParams,
    runs: list[Run],
    policy_flags: list[Flag],
    found: Callable[[str], bool],
) -> GradingResult:
    """One grade from the graders' runs: bands on the spread of their grades, the lowest grade
    when a policy rule fired; fewer than two readable graders send the work to a teacher.
    ``found`` says whether a quote is in the work: it picks each category's evidence."""
    grades, flags = grader_grades(runs, params)
    flags = [*policy_flags, *flags]
    provenance: dict[str, Any] = {
        "runs": [
            {
                "model": r.model,
                "framing": r.framing,
                "total": r.total,
                "categories": r.categories,
                **({"problem": r.problem} if r.problem else {}),
            }
            for r in runs
        ],
        "model_totals": {model: grade.total for model, grade in grades.items()},
        "deltas": deltas(runs),
    }
    raw = [r.reply for r in runs]
    if len(grades) < 2:
        message = N_("Fewer than two graders gave a readable grade; a teacher needs to grade this.")
        return GradingResult(
            Outcome.NEEDS_REVIEW,
            None,
            job.max_score,
            message,
            raw,
            flags=flags,
            provenance=provenance,
            error=message,
        )
    totals = [grade.total for grade in grades.values()]
    spread = max(totals) - min(totals)
    lowest = min(grades.values(), key=lambda grade: grade.total)
    if policy_flags:
        band, chosen = "policy", lowest
    elif spread <= params.agree:
        band, chosen = "agree", _mean(list(grades.values()))
        chosen = GraderGrade(half_up(chosen.total), chosen.categories, chosen.runs)
    elif spread <= params.disagree:
        band, chosen = "disagree", lowest
    else:
        band, chosen = "unstable", lowest
        message = N_("The graders differ by %(points)s points.") % {
            "points": f"{half_up(spread):g}"
        }
        flags.append(Flag("Instability", message))
    provenance |= {"band": band, "spread": spread, "categories": chosen.categories}
    return GradingResult(
        outcome=Outcome.GRADED,
        score=chosen.total * job.max_score / 100,
        scale=job.max_score,
        feedback=feedback(policy_flags, params.categories, chosen, runs, list(grades)),
        raw_replies=raw,
        criteria=[
            CriterionResult(
                c.name,
                half_up(chosen.categories[c.name], 2),
                c.points,
                evidence=evidence(c.name, chosen.runs, found),
                model_judged=True,
            )
            for c in params.categories
        ],
        flags=flags,
        provenance=provenance,
    )


def evidence(category: str, runs: Sequence[Run], found: Callable[[str], bool]) -> str:
    """The passage backing ``category``'s points: the first quote, of the runs that gave it
    points, that ``found`` finds in the work; else the first quoted (to be shown as failed);
    "" when none was."""
    quotes = [
        q for r in runs if r.categories.get(category, 0) > 0 for q in r.evidence.get(category, ())
    ]
    return next((q for q in quotes if found(q)), quotes[0] if quotes else "")


def feedback(
    policy_flags: list[Flag],
    categories: tuple[Category, ...],
    chosen: GraderGrade,
    runs: list[Run],
    graders: list[str],
) -> str:
    """Policy violations with their fix, the points of each category and what was deducted,
    then the issues every grader raised, then each grader's own, under its name."""
    sections = []
    if policy_flags:
        cap = min(f.cap for f in policy_flags if f.cap is not None)
        sections += [
            "### Must fix",
            *(f"- **{f.code}**: {f.message}" for f in policy_flags),
            f"\nThese rules limit the grade to {cap:g}% of the maximum.",
            "",
        ]
    lines = (category_line(c, chosen.categories[c.name]) for c in categories)
    sections += ["### Points by category", *lines, ""]
    by_grader = {model: _own_issues(runs, model) for model in graders}
    shared = set.intersection(*(set(issues) for issues in by_grader.values()))
    if shared:
        heading = "Both graders noted" if len(graders) == 2 else "Every grader noted"
        first = by_grader[graders[0]]
        sections += [f"### {heading}", *(f"- {t}" for key, t in first.items() if key in shared), ""]
    for model, issues in by_grader.items():
        own = [text for key, text in issues.items() if key not in shared]
        if own:
            sections += [f"### Noted only by {model}", *(f"- {text}" for text in own), ""]
    return "\n".join(sections).strip()


def category_line(category: Category, points: float, unearned: float = 0.0) -> str:
    """A category's line of the feedback; ``unearned``: points a grader gave that grounding
    did not count (app.grading.ensemble.Ensemble.rescore)."""
    points = half_up(points, 1)
    lost = half_up(category.points - points, 1)
    line = f"- {category.name}: {points:g}/{category.points:g}" + (f" (-{lost:g})" if lost else "")
    if unearned:
        line += (
            f"; {half_up(unearned, 1):g} points given were not counted: no passage of the work"
            " was quoted for them"
        )
    return line


def _own_issues(runs: list[Run], model: str) -> dict[str, str]:
    """A grader's issues from its independent rounds, by their words, first wording kept."""
    issues: dict[str, str] = {}
    for run in runs:
        if run.model == model and run.framing in INDEPENDENT:
            for issue in run.issues:
                issues.setdefault(_key(issue), issue)
    return issues


def _key(text: str) -> str:
    """Texts are the same when their words are (case, punctuation and spacing aside)."""
    return " ".join(re.findall(r"\w+", text.lower()))
