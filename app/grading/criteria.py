"""``criteria``: a weighted rubric judged by the model, criterion by criterion or as a whole.

Positive criteria earn their weight when MET; negative ones (faults) subtract theirs when MET.
The score is the weighted sum over the rubric's total positive weight, clamped to [0, 1], or
the raw weighted sum when ``normalize`` is off. Three modes ask the model differently:
``per_criterion`` (one call per criterion, run concurrently), ``one_shot`` (one call for all
criteria) and ``holistic`` (one call for a 0–100 score, read as that share of the positive
weight; a score on another scale, or one that reads as a fraction of the whole, goes to
review rather than being converted: :func:`app.grading.scores.misfit`). A reply is unreadable
when it is no JSON of the shape asked, or when a reason, evidence or explanation is no text or
copies the prompt's own example (:data:`PLACEHOLDERS`, :func:`app.grading.replies.reply_text`).
Unreadable replies are logged, retried, then replaced by the teacher's fallback verdicts: once
either sign has one, the other defaults to UNMET, as in the rubric seed; with neither, the
submission goes to review without a score. An optional length penalty is subtracted after all
that.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, Literal, TypeVar

from pydantic import Field

from app.catalogue import N_
from app.grading.base import (
    CriterionResult,
    Flag,
    GradingInput,
    GradingPlugin,
    GradingResult,
    ModelParams,
    Outcome,
    PlannedCall,
    PluginParams,
    Progress,
)
from app.grading.length_penalty import LengthPenalty
from app.grading.prompts import DATA_RULES, clip, examples_block, fence
from app.grading.replies import reply_text
from app.grading.rubric import Criterion, Rubric
from app.grading.scores import read_score
from app.llm.jsonreply import parse_json_reply, preview
from app.llm.session import LLMSession

log = logging.getLogger(__name__)

T = TypeVar("T")
Verdict = Literal["MET", "UNMET"]

#: Quotes longer than this are cut: evidence should point at the text, not repeat it.
MAX_EVIDENCE_CHARS = 300
#: How much of an unreadable reply is echoed back when asking again.
MAX_ECHO_CHARS = 2000
#: Reply caps (tokens), sized to each answer with room to spare: one verdict with its reason
#: and evidence, and the overall judgement; several verdicts add one's worth each.
VERDICT_TOKENS = 200
HOLISTIC_TOKENS = 300

SYSTEM_PROMPT = f"""\
You are a careful teacher checking one student's submission against a grading rubric.

{DATA_RULES}

A criterion is either a requirement, which is MET when the work does what it describes, or \
a fault, which is MET when the work makes the mistake it describes. Judge strictly on what \
the submission shows. A requirement is MET only with its evidence: the passage of the \
submission that shows it, copied exactly; a MET without such a passage earns nothing. \
Write reasons in the language of the assignment instructions, addressed to the student. \
Answer with JSON only."""

USER_PROMPT = """\
Assignment instructions:
{instructions}
{examples}
Student submission{note}:
{fenced}

{task}"""

# The format examples' placeholder texts, kept here so that PLACEHOLDERS knows them all: a
# reply that copies one filled in the template, not the judgement (app.grading.replies).
REASON_EXAMPLE = "one or two sentences"
EVIDENCE_EXAMPLE = (
    "the passage of the submission that earns the verdict, copied word for word (empty if "
    "there is none)"
)
SCORE_EXAMPLE = "a number from 0 to 100 for the overall quality against the rubric"
EXPLANATION_EXAMPLE = "Markdown feedback for the student: strengths, weaknesses and how to improve"
PLACEHOLDERS = (REASON_EXAMPLE, EVIDENCE_EXAMPLE, SCORE_EXAMPLE, EXPLANATION_EXAMPLE)

JUDGEMENT_SHAPE = (
    f'{{"verdict": "MET" or "UNMET", "reason": "{REASON_EXAMPLE}", '
    f'"evidence": "{EVIDENCE_EXAMPLE}"}}'
)

PER_CRITERION_TASK = """\
Judge this single criterion, a {kind}:
{requirement}

Reply with one JSON object: {shape}"""

ONE_SHOT_TASK = """\
Judge each of these criteria on its own:
{listing}

Reply with one JSON object that has one key per criterion id ({ids}), each mapped to \
{shape}"""

HOLISTIC_TASK = f"""\
Weigh the whole submission against this rubric; weights say how much each criterion counts \
and faults subtract:
{{listing}}

Reply with one JSON object: {{{{"score": {SCORE_EXAMPLE}, \
"explanation": "{EXPLANATION_EXAMPLE}"}}}}"""

RETRY_PROMPT = """\
That reply could not be used: {problem}. Answer again with only the JSON object asked for."""

FALLBACK_REASON = "The grader's reply could not be read; the activity's fallback verdict was used."
UNREAD_REASON = "The grader's reply could not be read."
#: The one question of the modes that ask once for every criterion, as an error names it.
QUESTIONS = {
    "one_shot": N_("one-shot question (a verdict for every criterion in one call)"),
    "holistic": N_("holistic question (one overall score from 0 to 100 against the rubric)"),
}
DONE_WELL, MISSING, PROBLEMS = "What the work does well", "What is missing", "Problems found"


class CriteriaParams(ModelParams):
    mode: Literal["per_criterion", "one_shot", "holistic"] = Field(
        "per_criterion",
        description=N_(
            "per_criterion: one model call per criterion (most accurate); one_shot: "
            "one call judges all criteria; holistic: one call gives a 0-100 overall score."
        ),
    )
    normalize: bool = Field(
        True, description=N_("Score on the activity's scale; off gives the raw weighted sum.")
    )
    max_retries: int = Field(2, ge=0, le=5, description=N_("Re-asks after an unreadable reply."))
    fallback_positive: Verdict | None = Field(
        None,
        description=N_(
            "Verdict assumed for a requirement whose reply stays unreadable; empty: UNMET "
            "if faults have a fallback, else the submission goes to review."
        ),
    )
    fallback_negative: Verdict | None = Field(
        None,
        description=N_(
            "Verdict assumed for a fault whose reply stays unreadable; empty: UNMET "
            "if requirements have a fallback, else the submission goes to review."
        ),
    )
    length_penalty: LengthPenalty | None = Field(
        None, description=N_("Deduction for submissions longer than a free budget.")
    )


@dataclass(frozen=True)
class Judgement:
    verdict: str  # "MET" or "UNMET"
    reason: str
    evidence: str = ""
    #: False for the teacher's fallback verdict: its points need no quote.
    from_model: bool = True


@dataclass(frozen=True)
class Overall:
    """A holistic reply: the 0-100 score and the feedback; ``off_scale`` is the review reason
    when the model wrote its score on another scale."""

    score: float
    explanation: str
    off_scale: str | None = None


class Criteria(GradingPlugin):
    name: ClassVar[str] = "criteria"
    description: ClassVar[str] = N_(
        "The model judges each rubric criterion as met or not; the score is the weighted sum, "
        "with faults subtracting and an optional length penalty."
    )
    version: ClassVar[str] = "1.0.0"
    steps: ClassVar[int] = 2
    Params = CriteriaParams

    @classmethod
    def planned_calls(cls, params: PluginParams, rubric: Rubric | None) -> list[PlannedCall]:
        """One call per criterion (``per_criterion``) or one for all; none without a rubric,
        which sends the submission to review at once."""
        if rubric is None:
            return []
        mode = params.mode  # type: ignore[attr-defined]
        fixed = len(SYSTEM_PROMPT) + len(USER_PROMPT) + len(JUDGEMENT_SHAPE)
        if mode == "per_criterion":
            fixed += len(PER_CRITERION_TASK)
            return [PlannedCall(fixed_chars=fixed + len(c.requirement)) for c in rubric.criteria]
        task = ONE_SHOT_TASK if mode == "one_shot" else HOLISTIC_TASK
        listing = sum(len(c.name) + len(c.requirement) for c in rubric.criteria)
        return [PlannedCall(fixed_chars=fixed + len(task) + listing)]

    def grade(self, job: GradingInput, llm: LLMSession, progress: Progress) -> GradingResult:
        params: CriteriaParams = job.params  # type: ignore[assignment]
        rubric = job.rubric
        if rubric is None:
            error = N_(
                "The criteria strategy needs a rubric: add one to the activity, then grade again."
            )
            return GradingResult(Outcome.NEEDS_REVIEW, None, None, "", error=error)
        text, truncated = clip(job.text, params.max_chars)
        ask = _Asker(job, params, llm, text, truncated)
        progress(1, self.steps, N_("Asking the grader model"))
        judgements: list[Judgement | None] = [None] * len(rubric.criteria)
        holistic: Overall | None = None
        problem = ""  # why the one question of one_shot or holistic went unanswered
        if params.mode == "per_criterion":
            answers = llm.map(ask.criterion, rubric.criteria)
            judgements = [answer.value for answer in answers]
            replies = [reply for answer in answers for reply in answer.replies]
        elif params.mode == "one_shot":
            answer = ask.all_criteria(rubric)
            judgements = list(answer.value or judgements)
            replies, problem = answer.replies, answer.problem
        else:
            answer = ask.holistic(rubric)
            holistic, replies, problem = answer.value, answer.replies, answer.problem
        progress(2, self.steps, N_("Scoring"))
        result = GradingResult(Outcome.GRADED, None, None, "", raw_replies=replies)
        result.provenance = {"mode": params.mode, "truncated_input": truncated}
        if holistic is not None:
            result.feedback = holistic.explanation
            if holistic.off_scale:
                result.outcome, result.error = Outcome.NEEDS_REVIEW, holistic.off_scale
                return result
            raw = holistic.score / 100 * rubric.total_positive_weight
            _score(result, job, params, rubric, raw, llm_raw=holistic.score)
            return result

        judgements, fallen = _with_fallbacks(rubric, params, judgements)
        result.criteria = [_detail(c, j) for c, j in zip(rubric.criteria, judgements, strict=True)]
        result.feedback = _feedback(rubric, judgements)
        stuck = [c.name for c, j in zip(rubric.criteria, judgements, strict=True) if j is None]
        question = QUESTIONS.get(params.mode)  # one question asked for every criterion
        if stuck:
            result.outcome = Outcome.NEEDS_REVIEW
            result.feedback = ""  # nothing was read: no feedback either
            attempts = params.max_retries + 1
            if question:
                result.error = N_(
                    "The grader's reply to the %(question)s could not be read after "
                    "%(attempts)s attempts (%(problem)s). A teacher needs to review this "
                    "submission."
                ) % {"question": question, "attempts": attempts, "problem": problem}
            else:
                result.error = N_(
                    "The grader's replies could not be read for: %(criteria)s (%(attempts)s "
                    "attempts). A teacher needs to review this submission."
                ) % {"criteria": ", ".join(stuck), "attempts": attempts}
            return result
        if fallen:
            result.provenance["fallback_criteria"] = fallen
            if question:
                message = N_(
                    "The grader's reply to the %(question)s could not be read (%(problem)s); "
                    "the fallback verdicts were used for every criterion."
                ) % {"question": question, "problem": problem}
            else:
                message = N_(
                    "Fallback verdicts replaced unreadable grader replies for: %(criteria)s"
                ) % {"criteria": ", ".join(fallen)}
            result.flags.append(Flag("fallback_verdicts", message))
        raw = sum(d.score or 0.0 for d in result.criteria)
        # Holistic gets here only through fallbacks, when the model gave no number at all.
        _score(result, job, params, rubric, raw, llm_raw=None if params.mode == "holistic" else raw)
        return result

    def rescore(self, job: GradingInput, result: GradingResult, dropped: float) -> None:
        """The weighted sum of what is left, normalised and penalised as before."""
        raw = sum(c.score or 0.0 for c in result.criteria)
        llm_raw = result.provenance.get("llm_raw_score")
        _score(result, job, job.params, job.rubric, raw, llm_raw=llm_raw)  # type: ignore[arg-type]


@dataclass(frozen=True)
class _Answer(Generic[T]):
    """One question's parsed reply (None if it never parsed), every reply received, and
    why the last one could not be used ("" when one could)."""

    value: T | None
    replies: list[str]
    problem: str = ""


class _Asker:
    """The model calls of one grading: prompts, JSON mode, and re-asking on unreadable replies."""

    def __init__(
        self, job: GradingInput, params: CriteriaParams, llm: LLMSession, text: str, cut: bool
    ) -> None:
        self._job, self._params, self._llm, self._text = job, params, llm, text
        self._note = " (truncated)" if cut else ""
        # The same for every call of this grading (one per criterion in per-criterion mode).
        self._marker = llm.marker(text)
        examples = examples_block(job.examples, self._marker, job.max_score)
        self._examples = f"\n{examples}\n" if examples else ""

    def criterion(self, criterion: Criterion) -> _Answer[Judgement]:
        kind = "requirement" if criterion.weight > 0 else "fault"
        task = PER_CRITERION_TASK.format(
            kind=kind, requirement=criterion.requirement, shape=JUDGEMENT_SHAPE
        )
        return self._ask(task, lambda reply: _judgement(parse_json_reply(reply)), VERDICT_TOKENS)

    def all_criteria(self, rubric: Rubric) -> _Answer[list[Judgement]]:
        ids = [f"C{number}" for number in range(1, len(rubric.criteria) + 1)]
        listing = "\n".join(
            f"- {key} ({'requirement' if c.weight > 0 else 'fault'}) {c.name}: {c.requirement}"
            for key, c in zip(ids, rubric.criteria, strict=True)
        )
        task = ONE_SHOT_TASK.format(listing=listing, ids=", ".join(ids), shape=JUDGEMENT_SHAPE)
        tokens = VERDICT_TOKENS * len(ids)
        return self._ask(task, lambda reply: _judgements(parse_json_reply(reply), ids), tokens)

    def holistic(self, rubric: Rubric) -> _Answer[Overall]:
        listing = "\n".join(
            f"- {c.name} (weight {c.weight:g}): {c.requirement}" for c in rubric.criteria
        )
        return self._ask(HOLISTIC_TASK.format(listing=listing), _holistic, HOLISTIC_TOKENS)

    def _ask(self, task: str, parse: Callable[[str], T], tokens: int) -> _Answer[T]:
        """The parsed reply, or why the last one could not be parsed, and every reply; each
        reply capped at ``tokens``."""
        instructions = self._job.instructions.strip() or "(no instructions were given)"
        user = USER_PROMPT.format(
            instructions=instructions,
            examples=self._examples,
            note=self._note,
            fenced=fence(self._text, self._marker),
            task=task,
        )
        messages = [
            {"role": "system", "content": SYSTEM_PROMPT.format(marker=self._marker)},
            {"role": "user", "content": user},
        ]
        replies: list[str] = []
        problem = ""
        attempts = self._params.max_retries + 1
        for attempt in range(1, attempts + 1):
            reply = self._llm.complete(
                messages,
                model=self._job.model,
                temperature=self._params.temperature,
                max_tokens=self._llm.reply_cap(tokens),
                json_mode=True,
            ).content
            replies.append(reply)
            try:
                return _Answer(parse(reply), replies)
            except ValueError as error:
                problem = str(error)
                log.warning(
                    "criteria: unreadable reply (%s), attempt %d of %d: %s",
                    problem,
                    attempt,
                    attempts,
                    preview(reply),
                )
                # Echoing the reply with the problem also keeps a cache from replaying it.
                messages = [
                    *messages,
                    {"role": "assistant", "content": reply[:MAX_ECHO_CHARS]},
                    {"role": "user", "content": RETRY_PROMPT.format(problem=problem)},
                ]
        return _Answer(None, replies, problem)


def _judgement(data: Any) -> Judgement:
    if not isinstance(data, dict):
        raise ValueError("expected a JSON object with a verdict")
    verdict = str(data.get("verdict", "")).strip().upper()
    if verdict not in ("MET", "UNMET"):
        raise ValueError('the verdict must be "MET" or "UNMET"')
    reason = reply_text(data.get("reason"), "reason", PLACEHOLDERS)
    evidence = reply_text(data.get("evidence"), "evidence", PLACEHOLDERS)
    return Judgement(verdict, reason, evidence[:MAX_EVIDENCE_CHARS])


def _judgements(data: Any, ids: list[str]) -> list[Judgement]:
    if not isinstance(data, dict):
        raise ValueError(f"expected a JSON object keyed by criterion id ({', '.join(ids)})")
    missing = [key for key in ids if key not in data]
    if missing:
        raise ValueError(f"no judgement for {', '.join(missing)}")
    return [_judgement(data[key]) for key in ids]


def _holistic(reply: str) -> Overall:
    """The reply's 0-100 score and explanation; ValueError (asked again) when it has no score
    in that range or its explanation is no text of its own. A score that does not fit the
    scale unambiguously is kept as ``off_scale``, a definite answer held for review."""
    data = parse_json_reply(reply)
    reading = read_score(reply, 100)
    if not isinstance(data, dict) or reading is None:
        raise ValueError('expected a JSON object with a "score" between 0 and 100')
    explanation = reply_text(data.get("explanation"), "explanation", PLACEHOLDERS)
    return Overall(reading.score, explanation, reading.mismatch(100))


def _with_fallbacks(
    rubric: Rubric, params: CriteriaParams, judgements: list[Judgement | None]
) -> tuple[list[Judgement | None], list[str]]:
    """Unread criteria take the verdict the teacher set for their sign; once either sign has
    one, an unset sign means UNMET (the seed's default for both). With none, nothing is filled."""
    filled: list[Judgement | None] = []
    fallen: list[str] = []
    has_fallback = params.fallback_positive is not None or params.fallback_negative is not None
    for criterion, judgement in zip(rubric.criteria, judgements, strict=True):
        verdict = params.fallback_positive if criterion.weight > 0 else params.fallback_negative
        if judgement is None and has_fallback:
            verdict = verdict or "UNMET"
            judgement = Judgement(verdict, FALLBACK_REASON, from_model=False)
            fallen.append(criterion.name)
        filled.append(judgement)
    return filled, fallen


def _detail(criterion: Criterion, judgement: Judgement | None) -> CriterionResult:
    maximum = max(criterion.weight, 0.0)
    if judgement is None:
        return CriterionResult(criterion.name, None, maximum, reason=UNREAD_REASON)
    score = criterion.weight if judgement.verdict == "MET" else 0.0
    return CriterionResult(
        criterion.name,
        score,
        maximum,
        judgement.verdict,
        judgement.reason,
        judgement.evidence,
        model_judged=judgement.from_model,
    )


def _feedback(rubric: Rubric, judgements: list[Judgement | None]) -> str:
    """Met requirements, missed ones and faults found, each with the model's reason."""
    groups: dict[str, list[str]] = {DONE_WELL: [], MISSING: [], PROBLEMS: []}
    for criterion, judgement in zip(rubric.criteria, judgements, strict=True):
        if judgement is None:
            continue
        met = judgement.verdict == "MET"
        if criterion.weight > 0:
            title = DONE_WELL if met else MISSING
        elif met:
            title = PROBLEMS
        else:
            continue  # a fault not committed needs no comment
        line = f"- **{criterion.name}**: {judgement.reason or judgement.verdict}"
        groups[title].append(line + (f" — “{judgement.evidence}”" if judgement.evidence else ""))
    return "\n\n".join(
        f"### {title}\n" + "\n".join(lines) for title, lines in groups.items() if lines
    )


def _score(
    result: GradingResult,
    job: GradingInput,
    params: CriteriaParams,
    rubric: Rubric,
    raw: float,
    *,
    llm_raw: float | None,
) -> None:
    """Normalization, then the length penalty, then the scale the teacher sees."""
    total = rubric.total_positive_weight
    normalized = max(0.0, min(1.0, raw / total))
    score = normalized if params.normalize else raw
    penalty = 0.0
    if params.length_penalty is not None:
        length = params.length_penalty.count(job.text)
        penalty = params.length_penalty.penalty_for(length)
        result.provenance["length"] = length
        if penalty:
            points = penalty * job.max_score if params.normalize else penalty
            note = params.length_penalty.explain(length, points)
            result.feedback = "\n\n".join(part for part in (result.feedback, note) if part)
    # Raw scores are rewards that may go negative; normalized ones stop at 0.
    score = max(0.0, score - penalty) if params.normalize else score - penalty
    result.score = round(score * job.max_score if params.normalize else score, 6)
    result.scale = job.max_score if params.normalize else total
    result.provenance |= {
        "raw_score": raw,
        "llm_raw_score": llm_raw,
        "normalized_score": normalized,
        "penalty": penalty,
    }
