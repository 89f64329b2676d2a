"""The plugin contract: one plain input, an LLM handle, a progress callback, one result.

Plugins never see Flask, the request or the database; the grading service builds the
input from stored rows and stores the result. That is what lets the same plugin run in
the RQ worker, in ``evaluaitor grade`` and in tests.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from app.catalogue import N_
from app.grading.examples import Example
from app.grading.prompts import DEFAULT_MAX_CHARS

if TYPE_CHECKING:
    from app.grading.rubric import Rubric
    from app.llm.session import LLMSession

#: ``progress(step, total, message)``: called by plugins as they go.
Progress = Callable[[int, int, str], None]


class Outcome(StrEnum):
    GRADED = "graded"
    NEEDS_REVIEW = "needs_review"


class PluginParams(BaseModel):
    """Base of every plugin's parameter schema: unknown keys are mistakes, not extras."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class ModelParams(PluginParams):
    """Settings every strategy that sends the submission to a model shares."""

    temperature: float = Field(
        0.1, ge=0, le=1, description=N_("Sampling temperature (low: steady).")
    )
    max_chars: int = Field(
        DEFAULT_MAX_CHARS, ge=1000, le=1_000_000, description=N_("Longer submissions are cut.")
    )


@dataclass(frozen=True)
class InputFile:
    """One file of the submission: its name, detected kind, extracted text, stored path."""

    name: str
    kind: str
    text: str
    path: Path | None = None


@dataclass(frozen=True, kw_only=True)
class Assignment:
    """What a file is graded against: the teacher's activity settings, or what an API client
    sent in their place."""

    max_score: float
    instructions: str = ""
    #: The teacher's guidelines for the grader (never shown to students); the runner adds
    #: them to ``instructions``, so every strategy's prompt carries them.
    guidelines: str = ""
    rubric: Rubric | None = None
    reference: str = ""
    model: str | None = None


@dataclass(frozen=True, kw_only=True)
class GradingInput(Assignment):
    """Everything a plugin may use, as the runner prepared it (app.grading.runner): ``text``
    is the main document's text, ``files`` every file (the main document first), ``comment``
    the student's note with the upload, ``examples`` the teacher's graded submissions of the
    same activity chosen for this grading (calibration, app.grading.examples; none for API
    evaluations). All of them, and ``reference``, are already cleaned of invisible characters
    and, when the activity asks for it, masked of obvious personal data; so whatever a plugin
    sends to a model is safe to send."""

    text: str
    filename: str
    params: PluginParams
    files: tuple[InputFile, ...] = ()
    comment: str = ""
    examples: tuple[Example, ...] = ()


@dataclass
class CriterionResult:
    name: str
    score: float | None
    max: float
    verdict: str | None = None  # e.g. "MET" / "UNMET", "pass" / "fail"
    reason: str = ""
    evidence: str = ""
    #: A model gave these points: they count only with a quote found in the work
    #: (app.grading.grounding); checks, tests and teachers' fallbacks need none.
    model_judged: bool = False
    #: Whether ``evidence`` was found in the work (None: not checked).
    evidence_verified: bool | None = None


@dataclass
class Flag:
    """Something a teacher should know; ``cap`` (percent of the maximum, 0..100, as the
    design seed writes caps) limits the score."""

    code: str
    message: str
    cap: float | None = None


@dataclass
class GradingResult:
    """What a plugin decided. ``score`` is on ``scale``; ``normalized`` is score / scale.

    Provenance of model calls (models, prompt hashes, tokens, timings) is added by the
    service from the :class:`~app.llm.session.LLMSession`; plugins add their own details.
    """

    outcome: Outcome
    score: float | None
    scale: float | None
    feedback: str
    raw_replies: list[str] = field(default_factory=list)
    criteria: list[CriterionResult] = field(default_factory=list)
    flags: list[Flag] = field(default_factory=list)
    provenance: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    #: The distinct prompts sent, as sent (masked): added by the runner from the session.
    prompts: list[dict[str, Any]] = field(default_factory=list)

    @property
    def normalized(self) -> float | None:
        if self.score is None or not self.scale:
            return None
        return max(0.0, min(1.0, self.score / self.scale))

    def record(self) -> dict[str, Any]:
        """The result as JSON-ready data, named as it is stored (app.models.jobs): the one
        serialisation the worker, the API and ``evaluaitor grade`` share."""
        return {
            "score": self.score,
            "scale": self.scale,
            "normalized": self.normalized,
            "feedback": self.feedback,
            "criteria": [asdict(c) for c in self.criteria],
            "flags": [asdict(f) for f in self.flags],
            "provenance": self.provenance,
            "raw_replies": self.raw_replies,
            "review_reason": None if self.outcome == Outcome.GRADED else self.error,
            "prompts": self.prompts,
        }


@dataclass(frozen=True)
class PlannedCall:
    """One model call a grading will make, known before it runs (a regrade's estimate):
    which model (None: the activity's) and how many characters of its prompt are the
    strategy's own wording, beside the submission and the teacher's instructions it carries."""

    model: str | None = None
    fixed_chars: int = 0


class GradingPlugin(ABC):
    """A grading strategy. Subclasses set the class attributes and implement :meth:`grade`."""

    name: ClassVar[str]
    description: ClassVar[str]
    version: ClassVar[str]
    #: Extraction kinds it can grade (see :class:`app.extract.Kind`).
    file_types: ClassVar[tuple[str, ...]] = ("pdf", "docx", "text", "markdown", "code")
    Params: ClassVar[type[PluginParams]] = PluginParams
    #: How many progress steps ``grade`` reports, so callers can show "step i of n".
    steps: ClassVar[int] = 1
    #: False when the plugin can grade without any model (e.g. only deterministic tests).
    needs_llm: ClassVar[bool] = True

    @classmethod
    def planned_calls(cls, params: PluginParams, rubric: Rubric | None) -> list[PlannedCall]:
        """The model calls one grading with ``params`` makes when every reply reads well (a
        re-ask after an unreadable reply is not foreseen): one call, or none without a model.
        Strategies that make several say so."""
        return [PlannedCall()] if cls.needs_llm else []

    def wording(self, job: GradingInput) -> tuple[str, ...]:
        """What the strategy asks the model about in the assignment's own words, besides the
        instructions: quoted back, it is no evidence of the work
        (app.grading.grounding). By default the rubric's criteria."""
        criteria = job.rubric.criteria if job.rubric else ()
        return tuple(text for c in criteria for text in (c.name, c.requirement))

    def rescore(self, job: GradingInput, result: GradingResult, dropped: float) -> None:
        """Set ``result.score`` again after grounding took ``dropped`` points away from its
        model-judged criteria (already at 0 in ``result.criteria``; app.grading.grounding).
        By default the total is the model's own, written beside its criteria: the dropped
        points' share of the criteria's maxima comes off the scale, never below 0. Strategies
        that add the criteria up themselves add them up again."""
        possible = sum(c.max for c in result.criteria)
        if result.score is None or not result.scale or possible <= 0:
            return
        result.score = round(max(0.0, result.score - dropped / possible * result.scale), 6)

    @abstractmethod
    def grade(self, job: GradingInput, llm: LLMSession, progress: Progress) -> GradingResult:
        """Grade one submission. Raise :class:`app.llm.LLMError` subclasses for model
        failures; return ``Outcome.NEEDS_REVIEW`` when no trustworthy score exists."""
