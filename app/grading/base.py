"""The plugin contract: one plain input, a progress callback, one result.

Plugins never see Flask, the request or the database; the grading service builds the
input from stored rows and stores the result. That is what lets the same plugin run in
the RQ worker, in ``evaluaitor grade`` and in tests.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, ClassVar, Protocol

from app.llm import LLMClient

#: ``progress(step, total, message)``: called by plugins as they go.
Progress = Callable[[int, int, str], None]


class Outcome(StrEnum):
    GRADED = "graded"
    NEEDS_REVIEW = "needs_review"


@dataclass(frozen=True)
class GradingInput:
    text: str
    filename: str
    instructions: str
    max_score: float
    model: str | None = None
    params: dict[str, Any] = field(default_factory=dict)


@dataclass
class GradingResult:
    """What a plugin decided. ``score`` is on ``scale``; ``normalized`` is score / scale."""

    outcome: Outcome
    score: float | None
    scale: float | None
    feedback: str
    raw_replies: list[str] = field(default_factory=list)
    criteria: list[dict[str, Any]] = field(default_factory=list)
    flags: list[dict[str, Any]] = field(default_factory=list)
    provenance: dict[str, Any] = field(default_factory=dict)
    error: str | None = None

    @property
    def normalized(self) -> float | None:
        if self.score is None or not self.scale:
            return None
        return max(0.0, min(1.0, self.score / self.scale))


class GradingPlugin(Protocol):
    name: ClassVar[str]
    description: ClassVar[str]
    version: ClassVar[str]
    #: How many progress steps ``grade`` reports, so callers can show "step i of n".
    steps: ClassVar[int]

    def grade(self, job: GradingInput, llm: LLMClient, progress: Progress) -> GradingResult: ...
