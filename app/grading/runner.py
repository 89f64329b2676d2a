"""Running a grading strategy on one document: the same code path for the RQ worker and for
``evaluaitor grade``, so a teacher trying a rubric offline sees what students will get.

The runner validates the strategy's parameters, cleans and (optionally) masks the text,
flags attempts to instruct the grader, calls the plugin, applies score caps, and assembles
the provenance. It touches neither Flask nor the database.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from app.catalogue import N_
from app.grading import registry, safety
from app.grading.base import (
    Assignment,
    Flag,
    GradingInput,
    GradingResult,
    InputFile,
    Outcome,
    Progress,
)
from app.llm.session import LLMSession, llm_session

#: Flags that mean the text tried to steer the grader: such grades wait for a teacher.
HOLD_FOR_REVIEW = frozenset({"PromptInjection", "HiddenText", "ScoreClaim"})


@dataclass(frozen=True)
class Job:
    """What to grade, as plain data: a strategy with its settings, what the file is graded
    against, and the file."""

    plugin: str
    assignment: Assignment
    document: InputFile
    params: dict[str, Any] | None = None
    #: Names of the student (from the launch) to mask if they appear in the text.
    names: Sequence[str] = field(default_factory=tuple)
    mask_pii: bool = True

    @classmethod
    def for_text(
        cls,
        plugin: str,
        text: str,
        filename: str,
        kind: str,
        *,
        params: dict[str, Any] | None = None,
        names: Sequence[str] = (),
        mask_pii: bool = True,
        **assignment: Any,
    ) -> Job:
        """A job for one document's text; ``assignment`` holds :class:`Assignment`'s fields."""
        document = InputFile(filename, kind, text)
        return cls(plugin, Assignment(**assignment), document, params, names, mask_pii)


def grade_with_model(
    job: Job,
    config: Mapping[str, Any],
    progress: Progress,
    *,
    tenant_folder: str,
    fresh: bool = False,
) -> GradingResult:
    """Grade ``job`` in a model session made from ``config``, recording the wall time in the
    provenance: the path of every background job (submissions and API evaluations). Model
    replies are cached in the tenant's folder (app.tenants), so they go with the tenant;
    ``fresh`` asks the model again instead (a person's regrade)."""
    started = time.monotonic()
    model = job.assignment.model
    with llm_session(config, model=model, cache_scope=tenant_folder, force=fresh) as llm:
        result = grade(job, llm, progress)
    result.provenance["grading_ms"] = int((time.monotonic() - started) * 1000)
    return result


def grade(job: Job, llm: LLMSession, progress: Progress) -> GradingResult:
    """Grade ``job``. Raises registry.PluginError for configuration problems and
    app.llm.LLMError for model failures; everything else is in the result."""
    plugin = registry.get(job.plugin)
    params = registry.validate_params(plugin, job.params)
    document = job.document
    flags = [
        Flag(f.code, f"{f.message} Evidence: {f.evidence}") for f in safety.inspect(document.text)
    ]
    text = safety.strip_invisible(document.text)
    masked: dict[str, int] = {}
    if job.mask_pii:  # numbers are masked in prose only: in code they are the program
        text, report = safety.mask_pii(text, names=job.names, kind=document.kind)
        masked = dict(report.counts)
    assignment = {f.name: getattr(job.assignment, f.name) for f in fields(Assignment)}
    result = plugin.grade(
        GradingInput(
            **assignment, text=text, filename=document.name, params=params, files=(document,)
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
