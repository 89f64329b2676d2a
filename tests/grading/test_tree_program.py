"""The ``program`` test kind of criteria_tree: real compilers in the real sandbox, no model."""

from __future__ import annotations

from typing import Any

import pytest

from app.grading.base import GradingInput, GradingResult, InputFile, Outcome
from app.grading.criteria_tree import CriteriaTree
from app.grading.registry import InvalidParams, validate_params
from app.judge.sandbox import SandboxUnavailable
from app.llm.session import LLMSession

PLUGIN = CriteriaTree()

ADD_TESTS = [
    {"name": "small", "stdin": "3 4\n", "expected_stdout": "7", "weight": 3},
    {"name": "negative", "stdin": "-2 -3\n", "expected_stdout": "-5", "weight": 1},
]
ADD_RIGHT = "a, b = map(int, input().split())\nprint(a + b)\n"
ADD_WRONG = "a, b = map(int, input().split())\nprint(abs(a) + abs(b))\n"  # fails negatives

SUM_JAVA = """public class SumCalculator {
    public static void main(String[] args) {
        int sum = 0;
        for (int i = 1; i <= 100; i++) {
            sum += i;
        }
        System.out.println(sum);
    }
}
"""


def program(**settings: Any) -> dict:
    return {"kind": "program", "tests": ADD_TESTS, **settings}


def config(test: dict) -> dict:
    return {"tree": {"base": {"children": [{"name": "runs", "test": test}]}}}


def grade(
    test: dict, files: dict[str, str], session: LLMSession, filename: str = "main.py"
) -> GradingResult:
    job = GradingInput(
        text=files.get(filename, ""),
        filename=filename,
        instructions="Add two numbers.",
        max_score=10,
        params=validate_params(PLUGIN, config(test)),
        files=tuple(InputFile(name, "code", text) for name, text in files.items()),
        model="fake-model",
    )
    return PLUGIN.grade(job, session, lambda *_: None)


def test_correct_python_scores_full_marks_without_the_model(fake_llm, session) -> None:
    result = grade(program(language="python"), {"main.py": ADD_RIGHT}, session)

    assert result.outcome is Outcome.GRADED
    assert result.score == 10
    [criterion] = result.criteria
    assert (criterion.verdict, criterion.reason) == ("pass", "2/2 tests passed.")
    assert fake_llm.requests == []


def test_wrong_python_gets_the_weighted_share(fake_llm, session) -> None:
    result = grade(program(), {"main.py": ADD_WRONG}, session)  # language detected

    assert result.score == 7.5  # 3 of 4 weight units
    [criterion] = result.criteria
    assert criterion.verdict == "partial"
    assert criterion.reason == "1/2 tests passed."
    assert criterion.evidence.startswith("negative: wrong_answer")
    assert fake_llm.requests == []


def test_compile_error_scores_zero_with_the_compiler_message(fake_llm, session) -> None:
    broken = "public class Main { public static void main(String[] a) { int x = } }\n"
    result = grade(program(language="java"), {"Main.java": broken}, session, "Main.java")

    assert result.score == 0
    [criterion] = result.criteria
    assert criterion.verdict == "fail"
    assert "did not compile" in criterion.reason
    assert "Main.java" in criterion.evidence and "error" in criterion.evidence
    assert fake_llm.requests == []


def test_java_sum_calculator_passes(fake_llm, session) -> None:
    test = {
        "kind": "program",
        "language": "java",
        "tests": [{"name": "sum 1..100", "expected_stdout": "5050"}],
    }
    files = {"SumCalculator.java": SUM_JAVA, "README.md": "Sums 1 to 100."}

    result = grade(test, files, session, "SumCalculator.java")

    assert result.score == 10, result.criteria
    assert fake_llm.requests == []


def test_no_source_file_fails_the_leaf(session) -> None:
    result = grade(program(), {"essay.md": "print(7)"}, session, "essay.md")

    assert result.score == 0
    assert "No source file" in result.criteria[0].reason


@pytest.mark.parametrize(
    ("test", "message"),
    [
        (program(language="cobol"), "unknown language 'cobol'"),
        (program(tests=[]), "children.0.test.tests: List should have at least 1 item"),
        ({"kind": "program"}, "children.0.test.tests: Field required"),
        (program(limits={"wall_seconds": 600}), "wall_seconds"),
    ],
)
def test_invalid_config_is_refused_readably(test: dict, message: str) -> None:
    with pytest.raises(InvalidParams) as raised:
        validate_params(PLUGIN, config(test))
    assert message in str(raised.value)


def test_language_aliases_are_normalized() -> None:
    params = validate_params(PLUGIN, config(program(language=" Py ")))
    assert params.tree.base.children[0].test.language == "python"  # type: ignore[attr-defined]


def test_a_server_without_a_sandbox_sends_the_work_to_the_teacher_without_details(
    fake_llm, session, monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:
    """No bwrap on PATH: the program test has no score, its reason is the administrator's fix,
    and nothing of the server (paths, bwrap's own error) reaches the feedback."""
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty folder: no bwrap, no compilers
    result = grade(program(language="python"), {"main.py": ADD_RIGHT}, session)
    assert result.outcome is Outcome.NEEDS_REVIEW
    reasons = [c.reason for c in result.criteria]
    assert SandboxUnavailable.user_message in reasons
    assert not any("bwrap" in (reason or "") for reason in reasons)
    assert str(tmp_path) not in result.feedback
