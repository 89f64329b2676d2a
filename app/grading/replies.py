"""Structured grader replies: a JSON object with per-criterion scores, a total and feedback.

Many graders answer so whatever their prompt asks (LAMB assistants among them): a list such as
``{"criteria": [{"name": …, "score": …, "max_score": …, "comment": …}], "total": …,
"feedback": …}``, or the same keyed by criterion name, wrapped in one outer object, fenced or
between prose. :func:`read_breakdown` turns that into :class:`CriterionResult` rows and a text a
student can read; the total itself is read by :func:`app.grading.scores.read_score`, and
:func:`contradiction` says when the two, or the criteria and the activity's rubric, disagree.

This module is also the one place that decides whether a reply's words can be shown to a
person, for every strategy: :func:`reply_text` takes a field that should hold text (feedback,
a reason, an explanation, evidence, an issue) and raises :class:`Unreadable` for anything else
(an object, a number, a boolean: shown with ``str()`` they would be a Python dict to a student)
and for a copy of its own prompt's placeholder text ("one or two sentences" from the format
example: the model filled in the template, not the grade). Each prompt keeps its placeholders
beside it; :func:`shown_feedback` never shows a JSON reply's raw text. A strategy that meets
:class:`Unreadable` asks again when it can, else sends the work to a teacher with its message.
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from app.catalogue import N_
from app.grading.base import CriterionResult, GradingResult, Outcome
from app.grading.rubric import Rubric
from app.grading.scores import fold_key, read_number
from app.llm.jsonreply import parse_json_reply, preview

log = logging.getLogger(__name__)

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


#: Placeholders at least this many words long are recognised inside a longer text too; shorter
#: ones ("one or two sentences") only as the whole text, as a real reason may use their words.
LONG_PLACEHOLDER_WORDS = 6


class Unreadable(ValueError):
    """A reply, or a field of it, that cannot be used as it is: its message says which field
    and why, for the teacher who reviews the work and for the model when it is asked again."""


#: The review reason of a reply that cannot be used, for strategies that do not ask again.
UNREADABLE = N_(
    "The grader's reply could not be used: %(problem)s. Nothing of it was shown to the "
    "student; a teacher needs to review it."
)


def reply_text(value: Any, field: str, placeholders: Sequence[str] = ()) -> str:
    """The text a reply gives in ``field``: a string, or a list of strings as Markdown bullets;
    "" when the field is absent or empty. Raises :class:`Unreadable` for any other value and
    for text that copies one of ``placeholders``, the prompt's own format example."""
    if value is None:
        return ""
    if isinstance(value, str):
        text = value.strip()
    elif isinstance(value, list) and all(isinstance(item, str) for item in value):
        text = "\n".join(f"- {item.strip()}" for item in value if item.strip())
    else:
        raise Unreadable(f'the "{field}" is {_kind(value)}, not text')
    if text and (copied := echoed(text, placeholders)):
        raise Unreadable(f'the "{field}" copies the example of the prompt ("{copied}")')
    return text


def echoed(text: str, placeholders: Sequence[str]) -> str | None:
    """The placeholder ``text`` copies: all of it, case, punctuation and spacing aside (so a
    "..." placeholder matches any text without a letter or digit), or a long placeholder found
    inside it; None when it copies none."""
    words = _words(text)
    for placeholder in placeholders:
        wanted = _words(placeholder)
        if words == wanted or (
            len(wanted.split()) >= LONG_PLACEHOLDER_WORDS and f" {wanted} " in f" {words} "
        ):
            return placeholder
    return None


def show(
    result: GradingResult, reply: str, strategy: str, placeholders: Sequence[str] = ()
) -> Breakdown | None:
    """Give ``result`` what a student may read of ``reply`` (feedback, criteria) and return
    the reply's breakdown, if it has one. A reply with a field that cannot be shown gives it
    neither: the reason goes to ``result.error``, for the teacher who reviews it."""
    try:
        breakdown = read_breakdown(reply, placeholders)
    except Unreadable as problem:
        log.warning("%s: unreadable reply (%s): %s", strategy, problem, preview(reply))
        result.error = UNREADABLE % {"problem": problem}
        return None
    result.feedback = shown_feedback(reply, breakdown)
    result.criteria = breakdown.criteria if breakdown else []
    return breakdown


def shown_feedback(reply: str, breakdown: Breakdown | None) -> str:
    """What a student may read of a reply: its feedback when it is structured, a prose reply as
    it is, and nothing of a JSON reply that has no feedback (its raw text is no feedback)."""
    if breakdown is not None and breakdown.feedback:
        return breakdown.feedback
    return "" if _is_json(reply) else reply


def _is_json(reply: str) -> bool:
    text = reply.strip()
    if text.startswith("```"):  # one fenced block and nothing else
        text = re.sub(r"^```[a-zA-Z]*\s*|\s*```$", "", text)
    try:
        return isinstance(json.loads(text), dict | list)
    except (ValueError, RecursionError):
        return False


def _words(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.casefold()))


def _kind(value: Any) -> str:
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list of more than texts"
    if isinstance(value, bool):
        return "true or false"
    return "a number" if isinstance(value, int | float) else "no text"


#: Why a reply that stopped at its token cap is not graded.
CUT_SHORT = N_(
    "The grader's reply was cut off at its length limit (%(tokens)s tokens), so no score was "
    "taken from it. A teacher needs to review it."
)


#: Why a score with no word of feedback waits for a teacher: a student would read a bare number.
NO_FEEDBACK = N_("The grader gave a score but no feedback; a teacher must review it.")


def grade_with_feedback(result: GradingResult, score: float, scale: float) -> None:
    """Grade ``result`` with ``score``, unless the reply gave no feedback to show with it:
    then the score waits for a teacher (a real model's JSON reply can leave it out)."""
    result.score, result.scale = score, scale
    if result.feedback.strip():
        result.outcome = Outcome.GRADED
    else:
        result.error = NO_FEEDBACK


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


def read_breakdown(reply: str, placeholders: Sequence[str] = ()) -> Breakdown | None:
    """The reply's criteria and feedback, or None when it is no JSON object holding either
    (a prose reply, or JSON with a score only). Raises :class:`Unreadable` when its feedback,
    or a criterion's reason or evidence, is no text or copies one of ``placeholders``."""
    try:
        data = parse_json_reply(reply)
    except ValueError:
        return None
    data = _holder(data)
    if data is None:
        return None
    items = next((v for k, v in data.items() if k in _CRITERIA_KEYS), None)
    criteria = _criteria(items, placeholders)
    unusable = [c.name for c in criteria if c.score is None]
    key = next((k for k in _FEEDBACK_KEYS if k in data), "feedback")
    feedback = reply_text(data.get(key), key, placeholders)
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


def _criteria(items: Any, placeholders: Sequence[str]) -> list[CriterionResult]:
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
        name = _name(_first(item, _NAME_KEYS))
        if name:
            rows.append(_criterion(name, item, placeholders))
    return rows


def _criterion(name: str, item: dict[str, Any], placeholders: Sequence[str]) -> CriterionResult:
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
        reason=reply_text(_first(item, _REASON_KEYS), f"reason of {name}", placeholders),
        evidence=reply_text(_first(item, _EVIDENCE_KEYS), f"evidence of {name}", placeholders),
        model_judged=True,  # its points need a quote found in the work (app.grading.grounding)
    )


def _first(item: dict[str, Any], keys: tuple[str, ...]) -> Any:
    return next((item[key] for key in keys if item.get(key) is not None), None)


def _name(value: Any) -> str:
    """A criterion's name: a string, or a number ("1" for the first); anything else is none."""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, int | float) and not isinstance(value, bool):
        return f"{value:g}"
    return ""
