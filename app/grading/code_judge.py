"""``code_judge``: compile and run the student's program against the teacher's tests in the
sandbox (:mod:`app.judge`); the score is the weighted share of tests passed. No model."""

from __future__ import annotations

import logging
from typing import ClassVar

from pydantic import Field, field_validator

from app.catalogue import N_
from app.grading.base import (
    CriterionResult,
    GradingInput,
    GradingPlugin,
    GradingResult,
    Outcome,
    PluginParams,
    Progress,
)
from app.judge import runner as judge_runner
from app.judge.languages import LANGUAGES, UnsupportedLanguage
from app.judge.sandbox import SandboxUnavailable
from app.judge.spec import LimitsSpec, TestSpec
from app.llm.session import LLMSession

log = logging.getLogger(__name__)

STATUS_TEXT = {
    "passed": "passed",
    "wrong_answer": "wrong output",
    "compile_error": "did not compile",
    "runtime_error": "crashed",
    "timeout": "ran out of time",
    "memory_limit": "used too much memory",
    "output_limit": "printed too much",
}


class JudgeSettings(PluginParams):
    """What the judge needs; also part of the ensemble's settings."""

    tests: tuple[TestSpec, ...] = Field((), max_length=200)
    language: str | None = Field(None, description=N_("e.g. java, python, c, cpp, javascript."))
    limits: LimitsSpec = LimitsSpec()
    entry: str | None = Field(None, description=N_("Main file or Java main class, if not found."))
    harness: dict[str, str] = Field(
        default_factory=dict, description=N_("Teacher files added next to the student's.")
    )

    @field_validator("language")
    @classmethod
    def _known(cls, language: str | None) -> str | None:
        if language is not None and language.lower() not in LANGUAGES:
            raise ValueError(f"unknown language; known: {', '.join(sorted(LANGUAGES))}")
        return language


class CodeJudgeParams(JudgeSettings):
    tests: tuple[TestSpec, ...] = Field(min_length=1, max_length=200)


def run_judge(job: GradingInput, params: JudgeSettings) -> judge_runner.JudgeReport:
    """The submission's files (or its main text), plus the teacher's harness, judged."""
    files: dict[str, str] = {f.name: f.text for f in job.files} or {job.filename: job.text}
    files |= params.harness
    return judge_runner.judge(
        files,
        params.language,
        [test.to_case() for test in params.tests],
        params.limits.to_limits(),
        entry=params.entry,
    )


class CodeJudge(GradingPlugin):
    name: ClassVar[str] = "code_judge"
    description: ClassVar[str] = N_(
        "Compiles and runs the program in a sandbox against the teacher's tests; the score "
        "is the weighted share of tests passed."
    )
    version: ClassVar[str] = "1.0.0"
    file_types: ClassVar[tuple[str, ...]] = ("code",)
    steps: ClassVar[int] = 1
    needs_llm: ClassVar[bool] = False
    Params = CodeJudgeParams

    def grade(self, job: GradingInput, llm: LLMSession, progress: Progress) -> GradingResult:
        params: CodeJudgeParams = job.params  # type: ignore[assignment]
        progress(1, self.steps, N_("Running your program against the tests"))
        try:
            report = run_judge(job, params)
        except UnsupportedLanguage as exc:
            message = N_(
                "This submission is not a program this activity can run (%(problem)s)."
            ) % {"problem": exc}
            return GradingResult(Outcome.NEEDS_REVIEW, None, job.max_score, message, error=message)
        except SandboxUnavailable as exc:
            return sandbox_unavailable(job, exc)
        return GradingResult(
            outcome=Outcome.GRADED,
            score=report.fraction * job.max_score,
            scale=job.max_score,
            feedback=feedback(report),
            criteria=[
                CriterionResult(
                    name=t.name,
                    score=t.score,
                    max=t.weight,
                    verdict=t.status,
                    reason=_reason(t),
                    evidence=t.stdout[:300],
                )
                for t in report.tests
            ],
            provenance={"judge": report.to_dict()},
        )


def _reason(test: judge_runner.TestResult) -> str:
    """A test's comment: why it failed, in the words the feedback's list uses. A compile
    error is the program's, not the test's: the compiler's messages are in the feedback once,
    not again on every test."""
    if test.status == "compile_error" or not test.message:
        return STATUS_TEXT.get(test.status, test.status)
    return test.message


def sandbox_unavailable(job: GradingInput, exc: SandboxUnavailable) -> GradingResult:
    """The server cannot sandbox: the teacher grades (and is told why), the admin fixes it;
    bwrap's own error (paths, kernel messages) goes to the log, not to a page."""
    log.error("code judge unavailable: %s", exc)
    message = exc.user_message  # the sandbox, or the language's toolchain (CompilerMissing)
    return GradingResult(Outcome.NEEDS_REVIEW, None, job.max_score, message, error=message)


def feedback(report: judge_runner.JudgeReport) -> str:
    """Markdown for the student: what compiled, which tests passed, why others failed."""
    passed = sum(t.status == "passed" for t in report.tests)
    lines = [f"**{passed} of {len(report.tests)} tests passed.**", ""]
    if not report.compiled:
        lines += ["The program did not compile:", "", "```", report.compile_output.strip(), "```"]
        return "\n".join(lines)
    for test in report.tests:
        mark = "✓" if test.status == "passed" else "✗"
        detail = f": {test.message}" if test.message and test.status != "passed" else ""
        lines.append(f"- {mark} {test.name} — {STATUS_TEXT.get(test.status, test.status)}{detail}")
    return "\n".join(lines)
