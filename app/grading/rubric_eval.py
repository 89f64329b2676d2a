"""``rubric_eval``: one chat-completions call with the task and the student's text.

The model is asked for Markdown feedback ending in a ``Final score: X/MAX`` line; the
score is then read from whatever it actually wrote (:mod:`app.grading.scores`). Many graders
answer with JSON instead, criterion by criterion (LAMB assistants among them): that is read
into criteria and a feedback text (:mod:`app.grading.replies`), and must add up. No
trustworthy score, a score on another scale than the one asked for, or criteria that
contradict the total or the rubric mean ``needs_review``, never a guessed or converted number.
"""

from __future__ import annotations

import logging
from typing import Any, ClassVar

from pydantic import Field

from app.catalogue import N_
from app.grading.base import (
    GradingInput,
    GradingPlugin,
    GradingResult,
    ModelParams,
    Outcome,
    PlannedCall,
    PluginParams,
    Progress,
)
from app.grading.pipeline_prompts import rubric_listing
from app.grading.prompts import DATA_RULES, clip, examples_block, fence
from app.grading.replies import contradiction, grade_with_feedback, hold_cut_short, show
from app.grading.rubric import Rubric
from app.grading.scores import ScoreReading, read_score
from app.llm.jsonreply import preview
from app.llm.session import LLMSession

log = logging.getLogger(__name__)

SYSTEM_PROMPT = f"""\
You are an experienced teacher grading one student's submission against the assignment \
instructions you are given.

{DATA_RULES}

Write concise, specific feedback in Markdown: what is done well, what is missing or wrong, \
and how to improve. Write it in the language of the assignment instructions. If you score \
the rubric's criteria one by one, give each criterion's points with the passage of the \
submission that earns them, copied exactly: points without such a passage are not counted. \
Finish with one last line in exactly this form, with a number between 0 and {{maximum}}:
Final score: X/{{maximum}}"""

USER_PROMPT = """\
Assignment instructions:
{instructions}
{rubric}
Maximum score: {maximum}
{examples}
Student submission ({kind}):
{fenced}"""


#: Reply cap (tokens) unless the activity sets one: a score, a criterion breakdown and a few
#: Reply cap (tokens) unless the activity sets one: a few paragraphs of feedback and the score
#: line, and a line of breakdown for each rubric criterion, which graders such as LAMB's add.
REPLY_TOKENS = 600
CRITERION_TOKENS = 80


def reply_tokens(rubric: Rubric | None) -> int:
    """The reply cap for a rubric of that many criteria (none: the feedback alone)."""
    return REPLY_TOKENS + CRITERION_TOKENS * (len(rubric.criteria) if rubric else 0)


def _format_number(value: float) -> str:
    return f"{value:g}"


class RubricEvalParams(ModelParams):
    max_tokens: int | None = Field(None, ge=16, le=32_000, description=N_("Reply length cap."))


class RubricEval(GradingPlugin):
    name: ClassVar[str] = "rubric_eval"
    description: ClassVar[str] = N_(
        "One model call grades the submission against the activity's instructions; "
        "the score is read from the reply."
    )
    version: ClassVar[str] = "1.0.0"
    steps: ClassVar[int] = 2
    Params = RubricEvalParams

    @classmethod
    def planned_calls(cls, params: PluginParams, rubric: Rubric | None) -> list[PlannedCall]:
        return [PlannedCall(fixed_chars=len(SYSTEM_PROMPT) + len(USER_PROMPT))]

    def grade(self, job: GradingInput, llm: LLMSession, progress: Progress) -> GradingResult:
        params: RubricEvalParams = job.params  # type: ignore[assignment]
        text, truncated = clip(job.text, params.max_chars)
        marker = llm.marker(text)
        maximum = _format_number(job.max_score)
        kind = job.filename.rsplit(".", 1)[-1].lower() if "." in job.filename else "text"
        examples = examples_block(job.examples, marker, job.max_score)
        messages = [
            {"role": "system", "content": SYSTEM_PROMPT.format(marker=marker, maximum=maximum)},
            {
                "role": "user",
                "content": USER_PROMPT.format(
                    instructions=job.instructions.strip() or "(no instructions were given)",
                    rubric=f"\n{rubric_listing(job.rubric)}\n" if job.rubric else "",
                    maximum=maximum,
                    examples=f"\n{examples}\n" if examples else "",
                    kind=f".{kind} file",
                    fenced=fence(text, marker),
                ),
            },
        ]
        progress(1, self.steps, N_("Asking the grader model"))
        cap = params.max_tokens or llm.reply_cap(reply_tokens(job.rubric))
        completion = llm.complete(
            messages, model=job.model, temperature=params.temperature, max_tokens=cap
        )
        progress(2, self.steps, N_("Reading the score"))
        result = _result(completion.content, job, {"truncated_input": truncated})
        if completion.truncated:
            hold_cut_short(result, cap)
        return result


def _result(reply: str, job: GradingInput, provenance: dict[str, Any]) -> GradingResult:
    """The reply as a result: its criteria and feedback when it is structured, its score when
    that is unambiguous, on the scale asked for and consistent with its criteria; a reply
    with a field that cannot be shown goes to review with neither."""
    result = GradingResult(
        outcome=Outcome.NEEDS_REVIEW,
        score=None,
        scale=None,
        feedback="",
        raw_replies=[reply],
        provenance=provenance,
    )
    breakdown = show(result, reply, "rubric_eval")  # its prompt's only example: the score line
    if result.error:
        return result
    reading = read_score(reply, job.max_score)
    if reading is None and breakdown and breakdown.criteria and not breakdown.unusable:
        earned, possible = breakdown.points
        reading = ScoreReading(earned, possible, "criteria", "sum of the criteria's scores")
    if reading is None:
        log.warning("rubric_eval: no clear score in the reply: %s", preview(reply))
        result.error = N_("The grader's reply has no clear score; a teacher needs to review it.")
        return result
    provenance["score_marker"] = reading.marker
    provenance["score_evidence"] = reading.text
    scale = reading.scale or job.max_score
    result.error = reading.mismatch(job.max_score)
    if result.error is None and breakdown is not None:
        result.error = contradiction(breakdown, reading.score, scale, job.rubric)
    if not result.error:
        grade_with_feedback(result, reading.score, scale)
    return result
