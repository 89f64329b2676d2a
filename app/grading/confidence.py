"""How far an AI result can be trusted, 0..1, with the reasons a teacher can read.

Nothing is asked of a model: the confidence is read from what the grading already recorded.
It starts at 1 and each doubt takes off a fixed, documented share (:data:`PENALTIES`); the
value is ``max(0, 1 - sum of penalties)``, rounded to two decimals. A sum rather than a
learned weighting so that a teacher can check it by hand against the listed reasons, and so
that each reason says how much it cost. The doubts:

- the ensemble's graders disagree (``spread``, points of 100 between their grades), or one
  grader moved between the direct and the reverse framing (``deltas``): twice the share of
  the scale, at most :data:`MOST_FOR_DISAGREEMENT` each;
- replies that had to be mended or were read weakly: an ensemble run that could not be read
  (``runs[].problem``), fallback verdicts standing in for unreadable criterion replies
  (``fallback_criteria``), a score read from a bare fraction or summed from the criteria
  instead of a labelled total (``score_marker`` / ``score_source``);
- criteria the grader left without a score;
- flags: text that may steer the grader, a rule that capped the score, any other flag (the
  flags that only repeat a doubt measured above are not counted twice);
- how close the nearest calibration example is (``examples[].similarity``, 0..1): for a
  model's grade, ``PENALTIES["example"] * (1 - best similarity)``, no example counting as
  similarity 0. Grades no model gave (the code judge's tests) skip this one.

A result without a score has confidence 0: a teacher has to grade it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

from app.catalogue import N_
from app.grading.base import GradingResult
from app.grading.runner import HOLD_FOR_REVIEW

#: What each doubt takes off; per item where it can repeat (capped at three items).
PENALTIES = {
    "disagreement": 2.0,  # times the share of the scale the grades are apart
    "unreadable_run": 0.1,
    "fallback": 0.15,
    "weak_reading": 0.15,
    "missing_criterion": 0.15,
    "steering": 0.5,
    "capped": 0.2,
    "flag": 0.1,
    "example": 0.2,
}
MOST_FOR_DISAGREEMENT = 0.5
MOST_REPEATS = 3
#: Score readings without a labelled total (app.grading.scores, app.grading.rubric_eval).
WEAK_READINGS = frozenset({"fraction", "criteria"})
#: Flags that only repeat a doubt measured from the provenance.
MEASURED = frozenset({"Instability", "UnstableGrader", "fallback_verdicts"})

NO_SCORE = N_("The grader gave no score to trust; a teacher grades it.")
SPREAD = N_("The graders' grades are %(points)s points of 100 apart.")
SWING = N_("A grader moved %(points)s points of 100 between the direct and reverse framing.")
UNREADABLE_RUNS = N_("Replies that could not be read: %(count)s.")
FALLBACKS = N_("Fallback verdicts replaced unreadable replies for: %(criteria)s.")
WEAK_READING = N_("The score was not written as a labelled total (read as: %(how)s).")
MISSING = N_("Criteria without a score: %(criteria)s.")
STEERING = N_("The submission may try to steer the grader.")
CAPPED = N_("A rule capped the score (from %(score)s).")
FLAGS = N_("Flags: %(codes)s.")
NO_EXAMPLE = N_("No graded example of this activity to compare with.")
NEAREST_EXAMPLE = N_("The nearest graded example is %(percent)s%% similar.")


@dataclass(frozen=True)
class Reason:
    code: str
    #: What it took off the confidence.
    penalty: float
    #: In English, shown through app.i18n.localize.
    text: str


@dataclass(frozen=True)
class Confidence:
    value: float
    reasons: tuple[Reason, ...]

    def record(self) -> dict[str, Any]:
        """As stored in ``provenance["confidence"]``."""
        return {"value": self.value, "reasons": [asdict(r) for r in self.reasons]}


def assess(result: GradingResult) -> Confidence:
    """The confidence of ``result`` and why (see the module docstring)."""
    if result.score is None:
        return Confidence(0.0, (Reason("no_score", 1.0, NO_SCORE),))
    reasons = [r for r in _doubts(result) if r.penalty > 0]
    value = max(0.0, 1.0 - sum(r.penalty for r in reasons))
    return Confidence(round(value, 2), tuple(reasons))


def _doubts(result: GradingResult) -> Iterable[Reason]:
    provenance = result.provenance
    spread = _number(provenance.get("spread"))
    if spread:
        yield _disagreement("spread", SPREAD, spread)
    swings = [abs(d) for d in (provenance.get("deltas") or {}).values() if _number(d)]
    if swings:
        yield _disagreement("swing", SWING, max(swings))
    unreadable = sum(1 for run in provenance.get("runs") or () if run.get("problem"))
    if unreadable:
        text = UNREADABLE_RUNS % {"count": unreadable}
        yield _repeated("unreadable_run", unreadable, text)
    fallen = list(provenance.get("fallback_criteria") or ())
    if fallen:
        yield _repeated("fallback", len(fallen), FALLBACKS % {"criteria": ", ".join(fallen)})
    how = provenance.get("score_marker") or str(provenance.get("score_source") or "")
    how = how.removeprefix("text:")
    if how in WEAK_READINGS:
        yield Reason("weak_reading", PENALTIES["weak_reading"], WEAK_READING % {"how": how})
    missing = [c.name for c in result.criteria if c.score is None]
    if missing:
        text = MISSING % {"criteria": ", ".join(missing)}
        yield _repeated("missing_criterion", len(missing), text)
    yield from _flags(result)
    if provenance.get("models"):
        yield _example(provenance.get("examples") or ())


def _flags(result: GradingResult) -> Iterable[Reason]:
    codes = [f.code for f in result.flags]
    if any(code in HOLD_FOR_REVIEW for code in codes):
        yield Reason("steering", PENALTIES["steering"], STEERING)
    capped = _number(result.provenance.get("capped_from"))
    if capped is not None:
        yield Reason("capped", PENALTIES["capped"], CAPPED % {"score": f"{capped:g}"})
    others = [c for c in dict.fromkeys(codes) if c not in HOLD_FOR_REVIEW and c not in MEASURED]
    if others:
        yield _repeated("flag", len(others), FLAGS % {"codes": ", ".join(others)})


def _example(examples: Iterable[dict[str, Any]]) -> Reason:
    similarities = [s for e in examples if (s := _number(e.get("similarity"))) is not None]
    if not similarities:
        return Reason("example", PENALTIES["example"], NO_EXAMPLE)
    best = max(0.0, min(1.0, max(similarities)))
    text = NEAREST_EXAMPLE % {"percent": f"{100 * best:.0f}"}
    return Reason("example", round(PENALTIES["example"] * (1 - best), 2), text)


def _disagreement(code: str, text: str, points: float) -> Reason:
    """Grades ``points`` of 100 apart: twice their share of the scale, at most half."""
    penalty = min(MOST_FOR_DISAGREEMENT, PENALTIES["disagreement"] * points / 100)
    return Reason(code, round(penalty, 2), text % {"points": f"{points:.0f}"})


def _repeated(code: str, count: int, text: str) -> Reason:
    return Reason(code, round(PENALTIES[code] * min(count, MOST_REPEATS), 2), text)


def _number(value: Any) -> float | None:
    """A number from the provenance (JSON), never a boolean."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)
