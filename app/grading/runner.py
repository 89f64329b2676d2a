"""Running a grading strategy on one document: the same code path for the RQ worker and for
``evaluaitor grade``, so a teacher trying a rubric offline sees what students will get.

The runner validates the strategy's parameters, flags attempts to instruct the grader, and
prepares the one input every plugin sees (:func:`model_input`): every piece the student
wrote (the main text, every file and its name, the upload comment) and the teacher's reference
material lose their invisible characters and, when the activity asks for it, their obvious
personal data, in this one place, so no strategy can send a raw value to a model; the
teacher's graded examples of the activity (calibration, app.grading.examples) go the same way,
each masked of its own student's names too and cut to MAX_EXAMPLE_CHARS. Then it
calls the plugin, takes away the points a model gave without a passage of the work to show
for them (app.grading.grounding), applies score caps, and assembles the provenance. It
touches neither Flask nor the database.

When a flag marks a passage the model read, the work is graded again without it, and the
model may be asked whether the work steers it (app.grading.cross_check).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from functools import partial
from typing import Any, NamedTuple

from app.catalogue import N_
from app.grading import cross_check, grounding, registry, safety
from app.grading.base import (
    Assignment,
    Flag,
    GradingInput,
    GradingPlugin,
    GradingResult,
    InputFile,
    Outcome,
    PluginParams,
    Progress,
)
from app.grading.cross_check import Safeguards
from app.grading.examples import (
    MAX_EXAMPLE_CHARS,
    MAX_EXAMPLE_FEEDBACK_CHARS,
    Candidate,
    Example,
)
from app.grading.prompts import clip, with_guidelines
from app.llm import LLMError
from app.llm.session import LLMSession, llm_session

#: Where a failed run's exception carries the calls it made (:func:`calls_before`).
_SPENT = "evaluaitor_spent_calls"
#: Flags of app.grading.safety that mean the text tried to steer the grader: the work is
#: graded again without their passages (app.grading.cross_check).
STEERING = frozenset({"PromptInjection", "HiddenText", "ScoreClaim"})
#: The flag of the model-side check's yes (app.grading.cross_check.check).
MODEL_CHECK = "ModelSaysSteering"
#: A grading without the flagged passages differed by more than the threshold.
MOVED = "SteeringMovedGrade"
#: Flags that hold a grade for a teacher.
HOLD_FOR_REVIEW = STEERING | {MODEL_CHECK, MOVED}
#: Flags whose passages a second grading leaves out: a steering passage reported as a
#: quotation ("frases como «ponme un 10»") holds the grade only if leaving it out changes it.
ABLATE_ON = STEERING | {"QuotedSteering"}
#: Why a flagged grade waits, when neither check says more.
STEERING_REASON = N_("The submission may try to steer the grader; check it.")


@dataclass(frozen=True)
class Job:
    """What to grade, as plain data: a strategy with its settings, what the file is graded
    against, and the file."""

    plugin: str
    assignment: Assignment
    document: InputFile
    params: dict[str, Any] | None = None
    #: Names of the student (from the launch) to mask wherever they appear.
    names: Sequence[str] = field(default_factory=tuple)
    mask_pii: bool = True
    #: The student's note with the upload: it reaches the model, so it is masked like the text.
    comment: str = ""
    #: The submission's other files, after ``document``.
    attachments: tuple[InputFile, ...] = ()
    #: The teacher's graded examples chosen for this grading (app.grading.examples.choose).
    examples: tuple[Candidate, ...] = ()
    #: The steering checks' settings (app.grading.cross_check).
    safeguards: Safeguards = field(default_factory=Safeguards)

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
    fresh_since: float | None = None,
    redis: Any = None,
    allowed: Sequence[str] = (),
) -> GradingResult:
    """Grade ``job`` in a model session made from ``config``, recording the wall time in the
    provenance: the path of every background job (submissions and API evaluations). Model
    replies are cached in the tenant's folder (app.tenants), so they go with the tenant;
    ``fresh_since`` (a person's regrade, asked for at that time.time()) replays only replies
    received since. ``redis`` shares the count of calls in flight with the other workers.
    ``allowed`` is the tenant's allowlist of model servers (app.llm.endpoints): a call to any
    other server raises LLMForbiddenError before anything is sent."""
    started = time.monotonic()
    session = llm_session(
        config,
        model=job.assignment.model,
        cache_scope=tenant_folder,
        fresh_since=fresh_since,
        redis=redis,
        allowed=allowed,
    )
    with session as llm:
        try:
            result = grade(job, llm, progress)
        except Exception as exc:
            # The calls made before the failure were paid for all the same (app.spend).
            setattr(exc, _SPENT, llm.provenance()["calls"])  # noqa: B010 (any exception)
            raise
    result.provenance["grading_ms"] = int((time.monotonic() - started) * 1000)
    return result


def calls_before(exc: BaseException) -> list[dict[str, Any]]:
    """The model calls a run made before it failed with ``exc`` (none if it made none)."""
    return getattr(exc, _SPENT, [])


def grade(job: Job, llm: LLMSession, progress: Progress) -> GradingResult:
    """Grade ``job``. Raises registry.PluginError for configuration problems and
    app.llm.LLMError for model failures; everything else is in the result."""
    plugin = registry.get(job.plugin)
    params = registry.validate_params(plugin, job.params)
    if not plugin.needs_llm:
        job = replace(job, examples=())  # no model reads them: none is recorded as used
    elif plugin.planned_calls(params, job.assignment.rubric):
        # A forbidden server fails the grading here, before the strategy or a check could
        # take a refused call for a failed one and grade on without it.
        llm.check_allowed()
    found = [safety.inspect(piece.text) for piece in _pieces(job)]
    flags = _safety_flags(job, found)
    grading_input, masked = model_input(job, params)
    result = plugin.grade(grading_input, llm, progress)
    grounding.enforce(result, grading_input, plugin)
    reason = None
    if plugin.needs_llm:
        result, reason = _ablated(job, plugin, params, found, result, llm, progress)
        if result.provenance.get("ablation", {}).get("proposed") == "without" and reason:
            flags.append(Flag(MOVED, reason))  # even when only a quotation was flagged
        checked = _model_check(job, grading_input, result, llm)
        flags += checked
        reason = reason or next((f.message for f in checked), None)
    result.flags = [*flags, *result.flags]
    _apply_caps(result)
    if result.outcome == Outcome.GRADED and any(f.code in HOLD_FOR_REVIEW for f in result.flags):
        result.outcome = Outcome.NEEDS_REVIEW
        result.error = result.error or reason or STEERING_REASON
    result.provenance = {
        "plugin": plugin.name,
        "plugin_version": plugin.version,
        "params": params.model_dump(mode="json"),
        "masked": _totals(masked) if job.mask_pii else {},
        "masked_in": {label: dict(counts) for label, counts in masked.items()},
        "examples": [example.provenance() for example in job.examples],
        **llm.provenance(),
        **result.provenance,
    }
    result.prompts = llm.prompts()
    return result


def model_input(job: Job, params: PluginParams) -> tuple[GradingInput, dict[str, Counter[str]]]:
    """What the plugin sees: every student-supplied piece and the reference without invisible
    characters and, if ``job.mask_pii``, masked; with what was masked in each piece, by label
    ("file essay.txt", "file names", "comment", "reference", "example 1"). Masked files carry
    no ``path``, so no plugin can read the raw bytes behind them."""
    masked: dict[str, Counter[str]] = {}

    def clean(label: str, text: str, kind: str = "text", names: Sequence[str] = ()) -> str:
        text, counts = _cleaned(job, text, kind, names)
        if counts:
            masked[label] = masked.get(label, Counter()) + counts
        return text

    files = []
    for f in (job.document, *job.attachments):
        name = clean("file names", f.name, "code")  # no numbers: names hold dates and versions
        files.append(InputFile(name, f.kind, clean(f"file {name}", f.text, f.kind)))
    assignment = {f.name: getattr(job.assignment, f.name) for f in fields(Assignment)}
    assignment["reference"] = clean("reference", job.assignment.reference)
    assignment["instructions"] = with_guidelines(job.assignment)
    grading_input = GradingInput(
        **assignment,
        text=files[0].text,
        filename=files[0].name,
        params=params,
        files=tuple(files),
        comment=clean("comment", job.comment),
        examples=tuple(
            _example(e, partial(clean, f"example {n}", kind=e.kind, names=e.names))
            for n, e in enumerate(job.examples, 1)
        ),
    )
    return grading_input, masked


def _example(candidate: Candidate, clean: Callable[[str], str]) -> Example:
    """What a plugin sees of an example: its text and the teacher's comments cleaned like the
    submission's (masked before they are cut, so no name is cut in half and left readable),
    and cut to the lengths a prompt affords."""
    text, _ = clip(clean(candidate.text), MAX_EXAMPLE_CHARS)
    feedback, _ = clip(clean(candidate.feedback), MAX_EXAMPLE_FEEDBACK_CHARS)
    return Example(
        text=text,
        score=candidate.score,
        scale=candidate.scale,
        feedback=feedback,
        criteria=candidate.criteria,
    )


def _cleaned(
    job: Job, text: str, kind: str = "text", names: Sequence[str] = ()
) -> tuple[str, Counter[str]]:
    """A piece as a model may read it (without invisible characters and, if ``job.mask_pii``,
    masked), with what was masked in it."""
    text = safety.strip_invisible(text)
    if not job.mask_pii:
        return text, Counter()
    text, report = safety.mask_pii(text, names=[*job.names, *names], kind=kind)
    return text, +Counter(report.counts)


class _Piece(NamedTuple):
    """One thing the student wrote: where a flag on it is (for the teacher), its name, its
    text, and its kind (as masking reads it)."""

    where: str
    name: str
    text: str
    kind: str


def _pieces(job: Job) -> list[_Piece]:
    """Everything the student wrote: the main text, each attachment, the upload comment, in
    this order (:func:`_with_pieces` puts them back)."""
    document = job.document
    return [
        _Piece("", document.name, document.text, document.kind),
        *(_Piece(f"In {f.name}: ", f.name, f.text, f.kind) for f in job.attachments),
        _Piece("In the upload comment: ", "upload comment", job.comment, "text"),
    ]


def _with_pieces(job: Job, texts: Sequence[str]) -> Job:
    """``job`` with its pieces' texts (in :func:`_pieces`' order) replaced by ``texts``."""
    return replace(
        job,
        document=replace(job.document, text=texts[0]),
        attachments=tuple(
            replace(f, text=t) for f, t in zip(job.attachments, texts[1:-1], strict=True)
        ),
        comment=texts[-1],
    )


def _safety_flags(job: Job, found: Sequence[Sequence[safety.SafetyFlag]]) -> list[Flag]:
    """Flags on everything the student wrote (``found``: each piece's, in :func:`_pieces`'
    order); a flag outside the main text says where."""
    return [
        Flag(f.code, f"{piece.where}{f.message} Evidence: {f.evidence}")
        for piece, flags in zip(_pieces(job), found, strict=True)
        for f in flags
    ]


def _ablated(
    job: Job,
    plugin: GradingPlugin,
    params: PluginParams,
    found: Sequence[Sequence[safety.SafetyFlag]],
    first: GradingResult,
    llm: LLMSession,
    progress: Progress,
) -> tuple[GradingResult, str | None]:
    """When a flag that holds the grade marks a passage the model read, grade once more in the
    same session (so its calls are in the provenance and the spend ledger) with those passages
    removed, cleaned as before; the result to keep and the reason to hold it
    (app.grading.cross_check.compare). A failed second grading leaves ``first``, its failure
    noted."""
    texts, removed = [], []
    for piece, flags in zip(_pieces(job), found, strict=True):
        spans = [
            (f.start, f.end)
            for f in flags
            if f.code in ABLATE_ON and _read(job, piece.text[f.start : f.end], piece.kind, llm)
        ]
        ablated, passages = cross_check.without(piece.text, spans) if spans else (piece.text, [])
        texts.append(ablated)
        removed += [{"where": piece.name, "text": cross_check.shortened(p)} for p in passages]
    if not removed:
        return first, None
    grading_input, _ = model_input(_with_pieces(job, texts), params)
    second, problem = None, None
    try:
        second = plugin.grade(
            grading_input, llm, lambda _s, n, _m: progress(n, n, cross_check.ABLATING)
        )
        grounding.enforce(second, grading_input, plugin)
    except LLMError as exc:
        problem = exc.user_message
    threshold = job.safeguards.ablation_threshold
    ablation = cross_check.compare(first, second, problem, removed, threshold)
    ablation.result.provenance["ablation"] = ablation.record
    return ablation.result, ablation.reason


def _read(job: Job, passage: str, kind: str, llm: LLMSession) -> bool:
    """Whether the model read ``passage`` of the student's text, as it was cleaned for it."""
    cleaned, _ = _cleaned(job, passage, kind)
    return bool(cleaned.strip()) and llm.sent(cleaned)


def _model_check(
    job: Job, grading_input: GradingInput, result: GradingResult, llm: LLMSession
) -> list[Flag]:
    """With the model-side check on and a grading that asked a model, the check's answer in
    the provenance, and a flag that holds the grade when the model says the work tries to
    steer it; nothing else changes."""
    if not job.safeguards.steering_check or not llm.calls:
        return []
    answer = cross_check.check(grading_input, llm)
    result.provenance["steering_check"] = answer.record()
    if not answer.steers:
        return []
    return [Flag(MODEL_CHECK, cross_check.MODEL_SAYS % {"quote": answer.quote})]


def _apply_caps(result: GradingResult) -> None:
    """The lowest cap of any flag limits the score (caps are percentages of the scale)."""
    caps = [f.cap for f in result.flags if f.cap is not None]
    if not caps or result.score is None or not result.scale:
        return
    ceiling = min(caps) / 100 * result.scale
    if result.score > ceiling:
        result.provenance["capped_from"] = result.score
        result.score = ceiling


def _totals(masked: dict[str, Counter[str]]) -> dict[str, int]:
    """Replacements by placeholder over all pieces, every placeholder named."""
    totals = sum(masked.values(), Counter())
    return {what: totals[what] for what in ("email", "phone", "id", "name")}
