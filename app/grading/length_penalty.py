"""Length penalty: a score deduction that grows with a submission's length past a free budget.

The deduction is zero up to ``free_budget`` units, reaches ``penalty_at_cap`` at ``max_cap``
and follows ``penalty_at_cap * frac ** exponent`` in between, so a larger exponent is gentler
just past the budget. It is expressed on the score's own scale: a fraction when scores are
normalized (0.5 = half the marks), points when they are raw weighted sums.

Submissions may separate reasoning from the answer with ``<thinking>…</thinking>`` and
``<output>…</output>``; ``penalty_type`` picks which part is measured. Text without any
``<output>`` section is all answer except its ``<thinking>`` sections, so a plain submission
is measured whole under ``ALL`` and ``OUTPUT_ONLY`` and counts as zero under ``THINKING_ONLY``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

PenaltyType = Literal["ALL", "OUTPUT_ONLY", "THINKING_ONLY"]
Counter = Literal["words", "characters"]

_THINKING = re.compile(r"<thinking>(.*?)</thinking>", re.DOTALL | re.IGNORECASE)
_OUTPUT = re.compile(r"<output>(.*?)</output>", re.DOTALL | re.IGNORECASE)


@dataclass(frozen=True)
class Sections:
    """A submission split into its reasoning and its answer."""

    thinking: str
    output: str


def split_sections(text: str) -> Sections:
    """Reasoning and answer of ``text``; only closed tag pairs count, several are joined."""
    thinking = "\n".join(m.group(1) for m in _THINKING.finditer(text))
    outputs = [m.group(1) for m in _OUTPUT.finditer(text)]
    output = "\n".join(outputs) if outputs else _THINKING.sub("\n", text)
    return Sections(thinking=thinking, output=output)


class LengthPenalty(BaseModel):
    """How much to deduct for length; the defaults are calibrated for word counts."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    free_budget: int = Field(6000, ge=0, description="No penalty up to this length.")
    max_cap: int = Field(8000, ge=1, description="The full penalty applies from this length.")
    penalty_at_cap: float = Field(
        0.5,
        ge=0,
        description="Largest deduction: a fraction of the score when normalized (0.5 = half), "
        "points when raw.",
    )
    exponent: float = Field(
        1.6, gt=0, description="Curve steepness; higher is more lenient just past the budget."
    )
    counter: Counter = Field("words", description="Measure length in words or characters.")
    penalty_type: PenaltyType = Field(
        "ALL",
        description="Which part is measured: ALL, OUTPUT_ONLY (answer) or THINKING_ONLY "
        "(the <thinking> sections).",
    )

    @model_validator(mode="after")
    def _cap_after_budget(self) -> LengthPenalty:
        if self.max_cap <= self.free_budget:
            raise ValueError("max_cap must be larger than free_budget")
        return self

    def count(self, text: str) -> int:
        """The length of ``text`` in this penalty's unit, over the sections it measures."""
        sections = split_sections(text)
        measured = {
            "ALL": (sections.thinking, sections.output),
            "OUTPUT_ONLY": (sections.output,),
            "THINKING_ONLY": (sections.thinking,),
        }[self.penalty_type]
        return sum(self._units(part) for part in measured)

    def penalty_for(self, count: int) -> float:
        """The deduction for a length of ``count`` units."""
        if count <= self.free_budget:
            return 0.0
        if count >= self.max_cap:
            return self.penalty_at_cap
        fraction = (count - self.free_budget) / (self.max_cap - self.free_budget)
        return self.penalty_at_cap * fraction**self.exponent

    def explain(self, length: int, points: float) -> str:
        """A feedback paragraph telling the student why ``points`` were deducted."""
        part = {"ALL": "", "OUTPUT_ONLY": " in the answer", "THINKING_ONLY": " in the reasoning"}
        return (
            f"### Length\nThe submission has {length} {self.counter}{part[self.penalty_type]}, "
            f"more than the {self.free_budget} allowed without penalty: "
            f"{points:.2f} points were deducted."
        )

    def _units(self, text: str) -> int:
        return len(text.split()) if self.counter == "words" else len(text.strip())
