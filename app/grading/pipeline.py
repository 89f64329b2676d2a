"""``pipeline``: summary → reference retrieval → analysis → final grade, each step auditable.

1. *Summary* (off unless configured): the model summarises the submission.
2. *Retrieval*: the teacher's reference material is cut into passages and the ones most
   relevant to the submission are picked (:mod:`app.grading.retrieval`, BM25).
3. *Analysis* (off unless configured): the model compares the submission with the task, the
   rubric and those passages, reading the summary.
4. *Final grade* (always): the model answers with JSON holding the score, the feedback and
   per-criterion results, reading the analysis and the student's upload comment (the seed's
   ``additional_comments``) and the teacher's graded examples of the activity (calibration,
   app.grading.examples). A step that is off is replaced in later prompts by a sentence
   saying so.

As in the seed, only the final step is required: one call unless the teacher turns the
others on (activities set up while they were on by default keep them, see migration 0006).

Every prompt must fit ``context_tokens``: its estimated size plus ``reserved_tokens`` is
checked before the call. When it is over, the graded examples go first (least similar
first), then the reference passages (lowest rank first), then the earlier step's notes are
cut, then the submission, never the task. What was cut, the intermediate replies and the
passages used are all kept in the provenance.

The score is read from the JSON, else from the reply's text
(:func:`app.grading.scores.read_score`), its criteria and feedback by
:func:`app.grading.replies.read_breakdown`; no score, a score outside 0..max, or one on
another scale than the prompt's maximum sends the submission to a teacher without one.
"""

from __future__ import annotations

import logging
from typing import Any, ClassVar

from pydantic import Field, model_validator

from app.catalogue import N_
from app.grading.base import (
    Flag,
    GradingInput,
    GradingPlugin,
    GradingResult,
    Outcome,
    PlannedCall,
    PluginParams,
    Progress,
)
from app.grading.pipeline_prompts import (
    ANALYSIS_INSTRUCTIONS,
    CHARS_PER_TOKEN,
    CUT_NOTE,
    FINAL_FORMAT,
    FINAL_INSTRUCTIONS,
    NO_ANALYSIS,
    NO_MATCH,
    NO_REFERENCE,
    NO_ROOM,
    NO_SUMMARY,
    PLACEHOLDERS,
    SAFETY_RULES,
    SUMMARY_INSTRUCTIONS,
    _fit,
    _format_number,
    _Prompt,
    _prompt_tokens,
    _task_text,
    estimate_tokens,
)
from app.grading.replies import grade_with_feedback, hold_cut_short, show
from app.grading.retrieval import chunk, rank
from app.grading.rubric import Rubric
from app.grading.scores import read_score
from app.llm.jsonreply import preview
from app.llm.session import LLMSession

log = logging.getLogger(__name__)

#: Reply cap (tokens) of each step unless the activity sets one: a summary of a paragraph or
#: Reply cap (tokens) of each step unless the activity sets one: a summary of a paragraph or
#: two, an analysis of a few paragraphs, the grade's JSON with its feedback, and in it a line
#: (a score and a sentence) for each rubric criterion.
STEP_TOKENS = {"summary": 250, "analysis": 400, "final": 400}
CRITERION_TOKENS = 60


def step_tokens(step: str, rubric: Rubric | None) -> int:
    """The reply cap of ``step`` for a rubric of that many criteria."""
    per_criterion = CRITERION_TOKENS * len(rubric.criteria) if rubric and step == "final" else 0
    return STEP_TOKENS[step] + per_criterion


# The prompt texts and the token estimate live in pipeline_prompts; they stay importable here.
__all__ = [
    "ANALYSIS_INSTRUCTIONS",
    "CHARS_PER_TOKEN",
    "CUT_NOTE",
    "FINAL_FORMAT",
    "FINAL_INSTRUCTIONS",
    "NO_ANALYSIS",
    "NO_MATCH",
    "NO_REFERENCE",
    "NO_ROOM",
    "NO_SUMMARY",
    "SAFETY_RULES",
    "SUMMARY_INSTRUCTIONS",
    "Pipeline",
    "PipelineParams",
    "estimate_tokens",
]


class PipelineParams(PluginParams):
    summary: bool = Field(
        False,
        description=N_("Summarise the submission first; the analysis step reads the summary."),
    )
    analysis: bool = Field(
        False,
        description=N_(
            "Compare the submission with the task and the reference before grading; "
            "the final step reads this analysis."
        ),
    )
    retrieval_top_k: int = Field(
        4, ge=0, le=50, description=N_("How many reference passages the model sees (0: none).")
    )
    chunk_words: int = Field(180, ge=20, le=2000, description=N_("Words per reference passage."))
    chunk_overlap: int = Field(
        40, ge=0, le=1000, description=N_("Words each passage shares with the one before it.")
    )
    context_tokens: int = Field(
        7000,
        ge=1000,
        le=2_000_000,
        description=N_(
            "Most tokens (estimated) a prompt may use, reserve included; larger "
            "inputs are trimmed: reference passages first, the submission last."
        ),
    )
    reserved_tokens: int = Field(
        300, ge=0, le=100_000, description=N_("Tokens kept free in every prompt as a margin.")
    )
    temperature: float = Field(0.1, ge=0, le=1, description=N_("Sampling temperature."))
    max_tokens: int | None = Field(
        None, ge=16, le=32_000, description=N_("Reply length cap for each step (not the prompt).")
    )
    analysis_model: str | None = Field(
        None,
        min_length=1,
        max_length=200,
        description=N_("Model for the summary and analysis steps; default: the activity's model."),
    )
    summary_prompt: str | None = Field(
        None,
        min_length=1,
        max_length=8000,
        description=N_("Replaces the summary step's instructions to the model."),
    )
    analysis_prompt: str | None = Field(
        None,
        min_length=1,
        max_length=8000,
        description=N_("Replaces the analysis step's instructions to the model."),
    )
    final_grade_prompt: str | None = Field(
        None,
        min_length=1,
        max_length=8000,
        description=N_(
            "Replaces the final step's instructions to the model; the rules about "
            "the submission's markers and the JSON answer are always added."
        ),
    )

    @model_validator(mode="after")
    def _consistent(self) -> PipelineParams:
        if self.chunk_overlap >= self.chunk_words:
            raise ValueError("chunk_overlap must be smaller than chunk_words")
        if self.reserved_tokens >= self.context_tokens:
            raise ValueError("reserved_tokens must be smaller than context_tokens")
        return self


class Pipeline(GradingPlugin):
    name: ClassVar[str] = "pipeline"
    description: ClassVar[str] = N_(
        "Several steps: an optional summary, the most relevant passages of the teacher's "
        "reference material, an optional analysis, then a final grade with per-criterion "
        "feedback; every intermediate step is kept for review."
    )
    version: ClassVar[str] = "1.0.0"
    steps: ClassVar[int] = 4
    Params = PipelineParams

    @classmethod
    def planned_calls(cls, params: PluginParams, rubric: Rubric | None) -> list[PlannedCall]:
        """The summary and analysis steps when on (with ``analysis_model``), then the final."""
        steps: PipelineParams = params  # type: ignore[assignment]
        notes = [
            (steps.summary, steps.summary_prompt or SUMMARY_INSTRUCTIONS),
            (steps.analysis, steps.analysis_prompt or ANALYSIS_INSTRUCTIONS),
        ]
        final = (steps.final_grade_prompt or FINAL_INSTRUCTIONS) + SAFETY_RULES + FINAL_FORMAT
        return [
            *(
                PlannedCall(steps.analysis_model, len(text + SAFETY_RULES))
                for on, text in notes
                if on
            ),
            PlannedCall(fixed_chars=len(final)),
        ]

    def grade(self, job: GradingInput, llm: LLMSession, progress: Progress) -> GradingResult:
        params: PipelineParams = job.params  # type: ignore[assignment]
        task = _task_text(job)
        replies: list[str] = []
        budget: dict[str, Any] = {}
        trimmed: dict[str, Any] = {}

        cut: dict[str, int] = {}  # steps whose reply stopped at its cap, with the cap

        def ask(step: str, prompt: _Prompt, model: str | None, json_mode: bool = False) -> str:
            marker = llm.marker(job.text)
            prompt, cuts = _fit(prompt, marker, params)
            estimate = _prompt_tokens(prompt, marker)
            budget[step] = {"prompt_tokens": estimate, "total": estimate + params.reserved_tokens}
            if cuts:
                trimmed[step] = cuts
            cap = params.max_tokens or llm.reply_cap(step_tokens(step, job.rubric))
            completion = llm.complete(
                prompt.messages(marker),
                model=model,
                temperature=params.temperature,
                max_tokens=cap,
                json_mode=json_mode,
            )
            replies.append(completion.content)
            if completion.truncated:
                cut[step] = cap
            return completion.content.strip()

        notes_model = params.analysis_model or job.model
        summary: str | None = None
        analysis: str | None = None
        if params.summary:
            progress(1, self.steps, N_("Summarising the submission"))
            system = (params.summary_prompt or SUMMARY_INSTRUCTIONS) + "\n\n" + SAFETY_RULES
            summary = ask("summary", _Prompt(system, task, job.text), notes_model)
        else:
            progress(1, self.steps, N_("Summary step skipped"))

        progress(2, self.steps, N_("Finding the relevant reference passages"))
        all_passages = chunk(job.reference, params.chunk_words, params.chunk_overlap)
        retrieved = tuple(rank(job.text, all_passages, params.retrieval_top_k))
        no_passages = NO_MATCH if all_passages else NO_REFERENCE

        if params.analysis:
            progress(3, self.steps, N_("Analysing the submission"))
            system = (params.analysis_prompt or ANALYSIS_INSTRUCTIONS) + "\n\n" + SAFETY_RULES
            prompt = _Prompt(
                system,
                task,
                job.text,
                retrieved,
                no_passages,
                "Summary of the submission, written by an earlier step",
                NO_SUMMARY if summary is None else summary,
            )
            analysis = ask("analysis", prompt, notes_model)
        else:
            progress(3, self.steps, N_("Analysis step skipped"))

        progress(4, self.steps, N_("Grading"))
        maximum = _format_number(job.max_score)
        system = "\n\n".join(
            (
                params.final_grade_prompt or FINAL_INSTRUCTIONS,
                SAFETY_RULES,
                FINAL_FORMAT.replace("{maximum}", maximum),
            )
        )
        prompt = _Prompt(
            system,
            task,
            job.text,
            retrieved,
            no_passages,
            "Preliminary analysis, written by an earlier step",
            NO_ANALYSIS if analysis is None else analysis,
            job.comment.strip(),
            job.examples,
            job.max_score,
        )
        reply = ask("final", prompt, job.model, json_mode=True)

        provenance: dict[str, Any] = {
            "steps": {"summary": summary, "analysis": analysis},
            "retrieval": {"method": "bm25", "reference_passages": len(all_passages)},
            "retrieved": [
                {
                    "rank": p.rank,
                    "score": p.score,
                    "start_word": p.passage.start_word,
                    "end_word": p.passage.end_word,
                    "text": p.passage.text,
                }
                for p in retrieved
            ],
            "budget": {
                "estimator": f"1 token per {CHARS_PER_TOKEN} characters",
                "context_tokens": params.context_tokens,
                "reserved_tokens": params.reserved_tokens,
                "steps": budget,
            },
            "trimmed": trimmed,
        }
        cut_steps = [step for step, cuts in trimmed.items() if "submission" in cuts]
        message = N_(
            "The submission was too long for the model's context and was cut in these steps: "
            "%(steps)s. The model did not read all of it."
        ) % {"steps": ", ".join(cut_steps)}
        flags = [Flag("TrimmedSubmission", message)] if cut_steps else []
        result = self._result(reply, job.max_score, replies, provenance, flags)
        if "final" in cut:
            hold_cut_short(result, cut["final"])
        return result

    @staticmethod
    def _result(
        reply: str,
        max_score: float,
        replies: list[str],
        provenance: dict[str, Any],
        flags: list[Flag],
    ) -> GradingResult:
        """Read the final reply: its score on the asked scale, its criteria and feedback; a
        reply with a field that cannot be shown goes to review with neither."""
        result = GradingResult(
            outcome=Outcome.NEEDS_REVIEW,
            score=None,
            scale=None,
            feedback="",
            raw_replies=replies,
            flags=flags,
            provenance=provenance,
        )
        provenance["score_source"] = None
        show(result, reply, "pipeline", PLACEHOLDERS)
        if result.error:
            return result
        reading = read_score(reply, max_score)
        if reading is None:
            log.warning("pipeline: no usable score in the final reply: %s", preview(reply))
            result.error = N_(
                "The grader's final reply has no usable score; a teacher must review it."
            )
            return result
        json_read = reading.marker == "json"
        provenance["score_source"] = "json" if json_read else f"text:{reading.marker}"
        if not json_read:
            provenance["score_evidence"] = reading.text
        result.error = reading.mismatch(max_score)
        if result.error is None:
            grade_with_feedback(result, reading.score, max_score)
        return result
