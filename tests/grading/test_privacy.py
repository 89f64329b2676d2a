"""No personal value leaves the process: every registered strategy grades a submission full of
one student's name, e-mail and phone (in the text, in other files and their names, in the
upload comment, in the reference) against the recording model server, and no request body
holds any of them unmasked."""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from app.grading import registry, runner
from app.grading.base import Assignment, InputFile, Outcome
from app.grading.ensemble import DEFAULT_CATEGORIES
from app.grading.rubric import parse_rubric

NAME = "Núria Puig-Serra"
ESSAY = InputFile(
    "essay.md",
    "markdown",
    f"# Rivers\n\nBy {NAME} (nuria.puig@example.edu, 612 345 678).\n\n"
    "Rivers carve valleys and carry sediment to the sea; floods renew the plains.\n\n"
    "Written by NURIA PUIG-SERRA, phone 612345678.",
)
PROGRAM = InputFile(
    "main.py",
    "code",
    f"# Author: {NAME} <nuria.puig@example.edu>, tel. +34 612 345 678\n"
    "def total(values):\n    return sum(values)\n\n\n"
    "print(total([1, 2, 3]))  # ask nuria puig-serra on 612 345 678\n",
)
NOTES = InputFile(
    "Nuria_Puig-Serra_notes.txt",
    "text",
    "Notes: call +34 612 345 678 or write to NURIA.PUIG@EXAMPLE.EDU about the floods.",
)
COMMENT = f"{NAME} here: I was ill, call 612 345 678 or write to nuria.puig@example.edu."
RUBRIC = parse_rubric(
    [
        {"name": "Content", "requirement": "Explains how rivers shape land.", "weight": 6},
        {"name": "Program", "requirement": "The program adds the values.", "weight": 4},
    ]
)
#: Each value as it could show up once folded (no accents, lower case, no phone separators).
LEAKS = ("nuria puig-serra", "nuria_puig-serra", "nuria.puig@", "612345678")


def folded(body: dict) -> str:
    """A request body as :data:`LEAKS` is written: a leak in any spelling is caught."""
    text = unicodedata.normalize("NFKD", json.dumps(body, ensure_ascii=False)).casefold()
    text = "".join(c for c in text if not unicodedata.combining(c))
    return re.sub(r"(?<=\d)[\s().+-]+(?=\d)", "", text)


#: A passage of the essay: the points the model gives count (app.grading.grounding).
QUOTE = "Rivers carve valleys and carry sediment to the sea"


def tree_answers(body: dict) -> str:
    ids = re.findall(r"^- (q\d+) \(", body["messages"][1]["content"], re.MULTILINE)
    answer = {"score": 80, "pass": True, "reason": "Fine.", "quote": QUOTE}
    return json.dumps(dict.fromkeys(ids, answer))


def ensemble_scores(_body: dict) -> str:
    categories = {c.name: c.points * 0.8 for c in DEFAULT_CATEGORIES}
    evidence = {c.name: QUOTE for c in DEFAULT_CATEGORIES}
    issues = ["Name the variables better."]
    return json.dumps({"categories": categories, "evidence": evidence, "issues": issues})


VERDICTS = json.dumps(
    {
        "verdict": "MET",
        "reason": "Fine.",
        "evidence": QUOTE,
        "score": 80,
        "explanation": "Fine.",
        **{f"C{i}": {"verdict": "MET", "reason": "Fine.", "evidence": QUOTE} for i in (1, 2)},
    }
)
FINAL = json.dumps({"score": 8, "max_score": 10, "feedback": "Good.", "criteria": []})
AI_TREE = {
    "base": {
        "children": [
            {"name": "Essay", "test": {"kind": "ai", "question": "Is the essay clear?"}},
            {"name": "Code", "test": {"kind": "ai", "question": "Is it tidy?", "file": "*.py"}},
            {
                "name": "Notes",
                "test": {"kind": "ai", "question": "Any notes?", "answer": "pass_fail"},
            },
            {"name": "Floods", "test": {"kind": "regex", "pattern": "flood"}},
        ]
    }
}
AI_TREE["base"]["children"][2]["test"]["file"] = "*notes*"


@dataclass(frozen=True)
class Case:
    plugin: str
    reply: Callable[[dict], str] | str
    params: dict[str, Any] = field(default_factory=dict)
    program_first: bool = False


CASES = [
    Case("rubric_eval", "Final score: 8/10\nClear work."),
    Case("criteria", VERDICTS, {"mode": "per_criterion"}),
    Case("criteria", VERDICTS, {"mode": "one_shot"}),
    Case("criteria", VERDICTS, {"mode": "holistic"}),
    Case("pipeline", FINAL, {"summary": True, "analysis": True, "retrieval_top_k": 2}),
    Case("criteria_tree", tree_answers, {"tree": AI_TREE}),
    Case("ensemble", ensemble_scores, {"models": ["g", "e"], "critique": True}, True),
    Case(
        "code_judge",
        "",
        {"language": "python", "tests": [{"name": "sum", "expected_stdout": "6"}]},
        True,
    ),
]


def test_every_registered_strategy_has_a_case():
    assert {plugin.name for plugin in registry.all_plugins()} == {case.plugin for case in CASES}


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.plugin}-{c.params.get('mode', '')}")
def test_no_personal_value_reaches_the_model(fake_llm, session, case: Case):
    fake_llm.set_default(case.reply)
    files = (PROGRAM, ESSAY, NOTES) if case.program_first else (ESSAY, PROGRAM, NOTES)
    job = runner.Job(
        plugin=case.plugin,
        assignment=Assignment(
            max_score=10,
            instructions="Write about rivers and add a program that sums values.",
            rubric=RUBRIC,
            reference="Rivers erode valleys. Questions to nuria.puig@example.edu.",
            model="fake-model",
        ),
        document=files[0],
        params=case.params,
        names=[NAME],
        comment=COMMENT,
        attachments=files[1:],
    )
    result = runner.grade(job, session, lambda *_: None)
    assert result.outcome == Outcome.GRADED  # every step ran, not only the first call

    bodies = [folded(body) for body in fake_llm.requests]
    for leak in LEAKS:
        assert not [body for body in bodies if leak in body], leak
    if registry.get(case.plugin).needs_llm:
        assert bodies and all("[name]" in body or "[email]" in body for body in bodies)
    masked_in = result.provenance["masked_in"]
    assert masked_in["comment"] == {"name": 1, "phone": 1, "email": 1}
    assert masked_in["file names"] == {"name": 1}
    assert masked_in["file main.py"] == {"name": 2, "email": 1, "phone": 2}
    assert masked_in["reference"] == {"email": 1}
    assert result.provenance["masked"] == {"email": 5, "phone": 6, "id": 0, "name": 6}


def test_a_tree_question_about_a_file_sees_it_masked(fake_llm, session):
    """The reported fault: an AI test naming a file sent the file's raw text."""
    fake_llm.set_default(tree_answers)
    job = runner.Job(
        plugin="criteria_tree",
        assignment=Assignment(max_score=10),
        document=ESSAY,
        params={"tree": AI_TREE},
        names=[NAME],
        attachments=(PROGRAM, NOTES),
    )
    runner.grade(job, session, lambda *_: None)
    (prompt,) = [body["messages"][1]["content"] for body in fake_llm.requests]
    assert "# Author: [name] <[email]>, tel. [phone]" in prompt
    assert "Notes: call [phone] or write to [email]" in prompt
