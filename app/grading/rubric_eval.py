"""``rubric_eval``: one chat-completions call with the task and the student's text.

The model is asked for Markdown feedback ending in a ``Final score: X/MAX`` line; the
score is then read from whatever it actually wrote (:mod:`app.grading.scores`). No
trustworthy score means ``needs_review``, never a guessed number.
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from app.catalogue import N_
from app.grading.base import (
    GradingInput,
    GradingPlugin,
    GradingResult,
    ModelParams,
    Outcome,
    Progress,
)
from app.grading.prompts import DATA_RULES, clip, fence
from app.grading.scores import read_score
from app.llm.session import LLMSession

SYSTEM_PROMPT = f"""\
You are an experienced teacher grading one student's submission against the assignment \
instructions you are given.

{DATA_RULES}

Write concise, specific feedback in Markdown: what is done well, what is missing or wrong, \
and how to improve. Write it in the language of the assignment instructions. \
Finish with one last line in exactly this form, with a number between 0 and {{maximum}}:
Final score: X/{{maximum}}"""

USER_PROMPT = """\
Assignment instructions:
{instructions}

Maximum score: {maximum}

Student submission ({kind}):
{fenced}"""


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

    def grade(self, job: GradingInput, llm: LLMSession, progress: Progress) -> GradingResult:
        params: RubricEvalParams = job.params  # type: ignore[assignment]
        text, truncated = clip(job.text, params.max_chars)
        marker = llm.marker(text)
        maximum = _format_number(job.max_score)
        kind = job.filename.rsplit(".", 1)[-1].lower() if "." in job.filename else "text"
        messages = [
            {"role": "system", "content": SYSTEM_PROMPT.format(marker=marker, maximum=maximum)},
            {
                "role": "user",
                "content": USER_PROMPT.format(
                    instructions=job.instructions.strip() or "(no instructions were given)",
                    maximum=maximum,
                    kind=f".{kind} file",
                    fenced=fence(text, marker),
                ),
            },
        ]
        progress(1, self.steps, N_("Asking the grader model"))
        completion = llm.complete(
            messages,
            model=job.model,
            temperature=params.temperature,
            max_tokens=params.max_tokens,
        )
        progress(2, self.steps, N_("Reading the score"))
        reading = read_score(completion.content, job.max_score)
        provenance: dict = {"truncated_input": truncated}
        if reading is None:
            return GradingResult(
                outcome=Outcome.NEEDS_REVIEW,
                score=None,
                scale=None,
                feedback=completion.content,
                raw_replies=[completion.content],
                provenance=provenance,
                error=N_("The grader's reply has no clear score; a teacher needs to review it."),
            )
        provenance["score_marker"] = reading.marker
        provenance["score_evidence"] = reading.text
        return GradingResult(
            outcome=Outcome.GRADED,
            score=reading.score,
            scale=reading.scale or job.max_score,
            feedback=completion.content,
            raw_replies=[completion.content],
            provenance=provenance,
        )
