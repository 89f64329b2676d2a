"""Running a grading strategy on one document: the same code path for the RQ worker and for
``evaluaitor grade``, so a teacher trying a rubric offline sees what students will get.

The runner validates the strategy's parameters, cleans and (optionally) masks the text,
flags attempts to instruct the grader, calls the plugin, applies score caps, and assembles
the provenance. It touches neither Flask nor the database.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from app.grading import registry, safety
from app.grading.base import (
    Flag,
    GradingInput,
    GradingResult,
    InputFile,
    Outcome,
    Progress,
)
from app.grading.rubric import Rubric
from app.i18n import N_
from app.llm.session import LLMSession, llm_session

#: Flags that mean the text tried to steer the grader: such grades wait for a teacher.
HOLD_FOR_REVIEW = frozenset({"PromptInjection", "HiddenText", "ScoreClaim"})


@dataclass(frozen=True)
class Job:
    """What to grade, as plain data."""

    plugin: str
    text: str
    filename: str
    kind: str
    instructions: str
    max_score: float
    params: dict[str, Any] | None = None
    rubric: Rubric | None = None
    reference: str = ""
    files: tuple[InputFile, ...] = ()
    model: str | None = None
    #: Names of the student (from the launch) to mask if they appear in the text.
    names: Sequence[str] = field(default_factory=tuple)
    mask_pii: bool = True


def grade_with_model(
    job: Job, config: Mapping[str, Any], progress: Progress, *, tenant_folder: str
) -> GradingResult:
    """Grade ``job`` in a model session made from ``config``, recording the wall time in the
    provenance: the path of every background job (submissions and API evaluations). Model
    replies are cached in the tenant's folder (app.tenants), so they go with the tenant."""
    started = time.monotonic()
    with llm_session(config, model=job.model, cache_scope=tenant_folder) as llm:
        result = grade(job, llm, progress)
    result.provenance["grading_ms"] = int((time.monotonic() - started) * 1000)
    return result


def grade(job: Job, llm: LLMSession, progress: Progress) -> GradingResult:
    """Grade ``job``. Raises registry.PluginError for configuration problems and
    app.llm.LLMError for model failures; everything else is in the result."""
    plugin = registry.get(job.plugin)
    params = registry.validate_params(plugin, job.params)
    flags = [Flag(f.code, f"{f.message} Evidence: {f.evidence}") for f in safety.inspect(job.text)]
    text = safety.strip_invisible(job.text)
    masked: dict[str, int] = {}
    if job.mask_pii:  # numbers are masked in prose only: in code they are the program
        text, report = safety.mask_pii(text, names=job.names, kind=job.kind)
        masked = dict(report.counts)
    result = plugin.grade(
        GradingInput(
            text=text,
            filename=job.filename,
            instructions=job.instructions,
            max_score=job.max_score,
            params=params,
            rubric=job.rubric,
            reference=job.reference,
            files=job.files,
            model=job.model,
        ),
        llm,
        progress,
    )
    result.flags = [*flags, *result.flags]
    _apply_caps(result)
    if result.outcome == Outcome.GRADED and any(f.code in HOLD_FOR_REVIEW for f in result.flags):
        result.outcome = Outcome.NEEDS_REVIEW
        result.error = result.error or N_("The submission may try to steer the grader; check it.")
    result.provenance = {
        "plugin": plugin.name,
        "plugin_version": plugin.version,
        "params": params.model_dump(mode="json"),
        "masked": masked,
        **llm.provenance(),
        **result.provenance,
    }
    return result


def _apply_caps(result: GradingResult) -> None:
    """The lowest cap of any flag limits the score (caps are percentages of the scale)."""
    caps = [f.cap for f in result.flags if f.cap is not None]
    if not caps or result.score is None or not result.scale:
        return
    ceiling = min(caps) / 100 * result.scale
    if result.score > ceiling:
        result.provenance["capped_from"] = result.score
        result.score = ceiling


def as_dicts(items: Sequence[Any]) -> list[dict[str, Any]]:
    """Dataclass results (criteria, flags) as JSON-ready dicts."""
    return [asdict(item) for item in items]
