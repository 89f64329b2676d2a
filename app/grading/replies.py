"""Structured grader replies: a JSON object with per-criterion scores, a total and feedback.

Many graders answer so whatever their prompt asks (LAMB assistants among them): a list such as
``{"criteria": [{"name": …, "score": …, "max_score": …, "comment": …}], "total": …,
"feedback": …}``, or the same keyed by criterion name, wrapped in one outer object, fenced or
between prose. :func:`read_breakdown` turns that into :class:`CriterionResult` rows and a text a
student can read; the total itself is read by :func:`app.grading.scores.read_score`, and
:func:`contradiction` says when the two, or the criteria and the activity's rubric, disagree.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from app.catalogue import N_
from app.grading.base import CriterionResult, GradingResult, Outcome
from app.grading.rubric import Rubric
from app.grading.scores import fold_key, read_number
from app.llm.jsonreply import parse_json_reply

#: How far the total may lie from the criteria's share of their points, as a share of the
#: scale: rounding a total to one decimal (8.45 → 8.5 of 10) passes, a different grade does not.
TOLERANCE = 0.02

_CRITERIA_KEYS = frozenset(
    (
        "criteria",
        "criterios",
        "criteris",
        "rubric",
        "rubrica",
        "breakdown",
        "criteria_scores",
        "criterion_scores",
        "rubric_scores",
        "scores",
        "puntuaciones",
    )
)
_FEEDBACK_KEYS = (  # in order of preference: the first one present is the feedback
    "feedback",
    "overall_feedback",
    "general_feedback",
    "feedback_general",
    "retroalimentacion",
    "comentario_general",
    "comments",
    "comentarios",
    "comment",
    "comentario",
    "summary",
    "resumen",
    "justification",
    "justificacion",
    "explanation",
    "observaciones",
)
_NAME_KEYS = ("name", "criterion", "criterio", "criteri", "title", "nombre", "nom", "label")
_SCORE_KEYS = ("score", "points", "puntuacion", "puntos", "nota", "grade", "mark", "awarded")
_MAX_KEYS = ("max_score", "max", "max_points", "maximum", "out_of", "puntuacion_maxima", "scale")
_REASON_KEYS = ("comment", "comments", "feedback", "reason", "justification", "comentario")
_REASON_KEYS += ("justificacion", "explanation", "rationale")
_EVIDENCE_KEYS = ("evidence", "quote", "evidencia", "cita")


#: Why a reply that stopped at its token cap is not graded.
CUT_SHORT = N_(
    "The grader's reply was cut off at its length limit (%(tokens)s tokens), so no score was "
    "taken from it. A teacher needs to review it."
)


def hold_cut_short(result: GradingResult, tokens: int) -> None:
    """Send ``result``, read from a reply that stopped at its cap of ``tokens``, to a teacher
    without a score: the score that ends the reply may be missing, and what was read may be an
    earlier criterion's or a draft the model would have corrected. Its feedback stays."""
    result.outcome, result.score, result.scale = Outcome.NEEDS_REVIEW, None, None
    result.error = CUT_SHORT % {"tokens": tokens}


@dataclass(frozen=True)
class Breakdown:
    """What a structured reply says, criterion by criterion."""

    criteria: list[CriterionResult]
    feedback: str  # Markdown for the student; "" when the reply has neither feedback nor criteria
    unusable: list[str]  # criteria whose score is missing or outside 0..their maximum

    @property
    def points(self) -> tuple[float, float]:
        """(points earned, points possible) over the criteria."""
        return sum(c.score or 0.0 for c in self.criteria), sum(c.max for c in self.criteria)


def read_breakdown(reply: str) -> Breakdown | None:
    """The reply's criteria and feedback, or None when it is no JSON object holding either
    (a prose reply, or JSON with a score only)."""
    try:
        data = parse_json_reply(reply)
    except ValueError:
        return None
    data = _holder(data)
    if data is None:
        return None
    items = next((v for k, v in data.items() if k in _CRITERIA_KEYS), None)
    criteria = _criteria(items)
    unusable = [c.name for c in criteria if c.score is None]
    feedback = _text(next((data[k] for k in _FEEDBACK_KEYS if k in data), None))
    if not feedback:
        feedback = "\n".join(
            f"- **{c.name}**" + (f": {c.reason}" if c.reason else "") for c in criteria
        )
    return Breakdown(criteria, feedback, unusable)


def contradiction(
    breakdown: Breakdown, score: float, scale: float, rubric: Rubric | None
) -> str | None:
    """The review reason when the criteria cannot be what the total was made of: a criterion
    scored outside its maximum, criteria that are not the rubric's, or points that add up to
    another share of the scale than the total. None when they agree."""
    if breakdown.unusable:
        return N_(
            "The grader scored these criteria outside their own maximum, or not at all: "
            "%(criteria)s. A teacher needs to review it."
        ) % {"criteria": ", ".join(breakdown.unusable)}
    if rubric is not None and (reason := _against_rubric(breakdown.criteria, rubric)):
        return reason
    earned, possible = breakdown.points
    if not breakdown.criteria or possible <= 0:
        return None
    if abs(earned / possible - score / scale) <= TOLERANCE:
        return None
    return N_(
        "The grader's criteria add up to %(earned)s out of %(possible)s, but its total is "
        "%(score)s out of %(scale)s. A teacher needs to review it."
    ) % {
        "earned": f"{earned:g}",
        "possible": f"{possible:g}",
        "score": f"{score:g}",
        "scale": f"{scale:g}",
    }


def _against_rubric(criteria: list[CriterionResult], rubric: Rubric) -> str | None:
    expected = {fold_key(c.name): c.name for c in rubric.criteria}
    given = {fold_key(c.name): c.name for c in criteria}
    missing = [name for key, name in expected.items() if key not in given]
    unknown = [name for key, name in given.items() if key not in expected]
    if not missing and not unknown:
        return None
    return N_(
        "The grader's criteria are not the activity's rubric (not graded: %(missing)s; not in "
        "the rubric: %(unknown)s). A teacher needs to review it."
    ) % {"missing": ", ".join(missing) or "-", "unknown": ", ".join(unknown) or "-"}


def _folded(data: dict[str, Any]) -> dict[str, Any]:
    return {fold_key(key): value for key, value in data.items()}


def _holder(data: Any) -> dict[str, Any] | None:
    """The object holding criteria or feedback: the reply itself, or one object inside it
    (``{"evaluation": {...}}``, the proposal's ``feedback_structured``)."""
    if not isinstance(data, dict):
        return None
    data = _folded(data)
    if _CRITERIA_KEYS & data.keys():
        return data
    inner = [_folded(v) for v in data.values() if isinstance(v, dict)]
    with_criteria = [d for d in inner if _CRITERIA_KEYS & d.keys()]
    if len(with_criteria) == 1:  # outer feedback first: the proposal keeps it next to the score
        return {**with_criteria[0], **{k: v for k, v in data.items() if k in _FEEDBACK_KEYS}}
    if any(k in data for k in _FEEDBACK_KEYS):
        return data
    return None


def _criteria(items: Any) -> list[CriterionResult]:
    if isinstance(items, dict):  # keyed by name: {"Structure": {"score": 9, ...}} or {"A": 9}
        items = [
            {"name": name, **(_folded(v) if isinstance(v, dict) else {"score": v})}
            for name, v in items.items()
        ]
    rows = []
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict):
            continue
        item = _folded(item)
        name = _text(_first(item, _NAME_KEYS))
        if name:
            rows.append(_criterion(name, item))
    return rows


def _criterion(name: str, item: dict[str, Any]) -> CriterionResult:
    read = read_number(_first(item, _SCORE_KEYS))
    limit = read_number(_first(item, _MAX_KEYS))
    top = limit[0] if limit else read[1] if read else None
    if read and read[1] is not None and top is not None and not math.isclose(read[1], top):
        top = None  # "score": "8/10" with "max": 5 — which one?
    score = read[0] if read and top and 0 <= read[0] <= top else None
    return CriterionResult(
        name=name,
        score=score,
        max=top if top and top > 0 else 0.0,
        reason=_text(_first(item, _REASON_KEYS)),
        evidence=_text(_first(item, _EVIDENCE_KEYS)),
    )


def _first(item: dict[str, Any], keys: tuple[str, ...]) -> Any:
    return next((item[key] for key in keys if item.get(key) is not None), None)


def _text(value: Any) -> str:
    """A string as it is; a list of strings as Markdown bullets; anything else as nothing."""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, int | float) and not isinstance(value, bool):
        return f"{value:g}"
    if isinstance(value, list):
        return "\n".join(f"- {text}" for item in value if (text := _text(item)))
    return ""
