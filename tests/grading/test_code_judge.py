"""The code_judge strategy: sandboxed runs against teacher tests, through the runner."""

from __future__ import annotations

import pytest

from app.grading import registry, runner
from app.grading.code_judge import CodeJudge
from app.llm.session import LLMSession

TESTS = [
    {"name": "adds", "stdin": "2 3\n", "expected_stdout": "5", "weight": 3},
    {"name": "negatives", "stdin": "-2 -3\n", "expected_stdout": "-5", "weight": 1},
]
GOOD = "a, b = map(int, input().split())\nprint(a + b)\n"
POSITIVE_ONLY = "a, b = map(int, input().split())\nprint(abs(a) + abs(b))\n"


def grade(source: str, filename: str = "add.py", **params):
    job = runner.Job.for_text(
        plugin="code_judge",
        text=source,
        filename=filename,
        kind="code",
        instructions="Add two numbers.",
        max_score=10,
        params={"tests": TESTS, **params},
    )
    return runner.grade(job, LLMSession(None), lambda *_: None)


def test_a_correct_program_gets_full_marks_without_any_model():
    result = grade(GOOD)
    assert result.outcome.value == "graded" and result.score == 10
    assert [c.verdict for c in result.criteria] == ["passed", "passed"]
    assert "2 of 2 tests passed" in result.feedback


def test_partial_credit_follows_the_weights():
    result = grade(POSITIVE_ONLY)
    assert result.score == pytest.approx(7.5)
    assert [c.verdict for c in result.criteria] == ["passed", "wrong_answer"]


def test_a_compile_error_scores_zero_and_shows_the_compiler():
    result = grade("a, b = map(int, input().split()\nprint(a + b\n")
    assert result.score == 0
    assert "did not compile" in result.feedback and "```" in result.feedback
    # The compiler's messages are the program's: in the feedback once, not on every test.
    assert [c.reason for c in result.criteria] == ["did not compile", "did not compile"]


def test_a_file_that_is_not_a_program_goes_to_the_teacher():
    result = grade("Dear teacher, here is my essay.", filename="essay.txt")
    assert result.outcome.value == "needs_review" and result.score is None


def test_settings_are_checked():
    with pytest.raises(registry.InvalidParams, match="tests"):
        registry.validate_params(CodeJudge(), {"tests": []})
    with pytest.raises(registry.InvalidParams, match="unknown language"):
        registry.validate_params(CodeJudge(), {"tests": TESTS, "language": "cobol"})


def test_a_server_without_the_compiler_does_not_blame_the_program(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")  # no python3 (nor anything) on the worker's PATH
    result = grade(GOOD)
    assert result.outcome.value == "needs_review" and result.score is None
    assert "no compiler or interpreter for this language" in result.feedback
