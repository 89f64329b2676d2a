"""The ``program`` test kind: compile and run the submission in the sandboxed code judge.

The leaf scores the weighted share of the teacher's test cases the program passes (0..100),
and never asks the model. Sources are the submitted files whose extension belongs to a
language the judge knows; the main document counts under the job's filename.

Each ``program`` leaf makes its own judge call (one compilation, then its tests). Leaves are
not cached against each other: identical leaves are a configuration mistake, and a cache
across gradings would replay a flaky timeout on regrade. To avoid compiling twice, put the
test cases in one leaf (their weights already give partial credit).
"""

from __future__ import annotations

import logging
from pathlib import PurePosixPath
from typing import Annotated, Literal

from pydantic import Field, StringConstraints, field_validator

from app.grading.tree.model import Check, CheckContext, LeafResult, register_test_kind
from app.judge.languages import LANGUAGES, UnsupportedLanguage, detect_language
from app.judge.runner import JudgeReport, judge
from app.judge.sandbox import SandboxUnavailable
from app.judge.spec import LimitsSpec, TestSpec

_EXTENSIONS = frozenset(ext for lang in LANGUAGES.values() for ext in lang.extensions)
_EVIDENCE_CHARS = 1000

Entry = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200)]

log = logging.getLogger(__name__)


@register_test_kind
class ProgramTest(Check):
    """The submitted program prints the expected output for the teacher's test cases."""

    kind: Literal["program"] = "program"
    language: str | None = Field(
        None, description="java, python, c, cpp or javascript; none: detect by file extension."
    )
    tests: list[TestSpec] = Field(min_length=1, max_length=200)
    limits: LimitsSpec = LimitsSpec()
    entry: Entry | None = Field(None, description="Main file, or Java main class.")

    @field_validator("language")
    @classmethod
    def _known_language(cls, language: str | None) -> str | None:
        """Refuse a language the judge cannot run now, not at grading time."""
        if language is None or not language.strip():
            return None
        try:
            return detect_language([], language.strip()).name
        except UnsupportedLanguage:
            known = ", ".join(sorted(LANGUAGES))
            raise ValueError(f"unknown language {language!r}; known languages: {known}") from None

    def run(self, ctx: CheckContext) -> LeafResult:
        sources = {
            f.name.replace("\\", "/"): f.text
            for f in ctx.files()
            if PurePosixPath(f.name).suffix.lower() in _EXTENSIONS
        }
        if not sources:
            return LeafResult(0.0, "fail", "No source file of a supported language was submitted.")
        cases = [test.to_case() for test in self.tests]
        try:
            report = judge(sources, self.language, cases, self.limits.to_limits(), entry=self.entry)
        except SandboxUnavailable as exc:  # the server's fault, not the student's
            log.error("code judge unavailable: %s", exc)  # bwrap's paths and errors: log only
            return LeafResult(None, "error", SandboxUnavailable.user_message)
        except ValueError as exc:  # no source for the language, or an unsafe file name
            return LeafResult(0.0, "fail", f"The program could not be judged: {exc}")
        return _result(report)


def _result(report: JudgeReport) -> LeafResult:
    """Score by weight; the evidence is what the student should fix first."""
    passed = sum(1 for test in report.tests if test.status == "passed")
    total = len(report.tests)
    verdict = "pass" if passed == total else "partial" if passed else "fail"
    if not report.compiled:
        output = report.compile_output.strip() or "(no compiler output)"
        return LeafResult(
            0.0,
            "fail",
            f"The {report.language} program did not compile; 0/{total} tests passed.",
            output[:_EVIDENCE_CHARS],
        )
    failed = next((test for test in report.tests if test.status != "passed"), None)
    evidence = ""
    if failed is not None:
        detail = failed.message or failed.status.replace("_", " ")
        evidence = f"{failed.name}: {failed.status} ({detail})"
        if failed.stderr.strip():
            evidence += "\n" + failed.stderr.strip()
    reason = f"{passed}/{total} tests passed."
    return LeafResult(round(report.fraction * 100, 2), verdict, reason, evidence[:_EVIDENCE_CHARS])
