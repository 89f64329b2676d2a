"""Calibration examples in the grading layer: which candidates a grading uses, how the runner
masks and cuts them, and that every strategy that asks a model shows them in its prompt."""

from __future__ import annotations

import pytest

from app.grading import registry, runner
from app.grading.base import Assignment, Outcome
from app.grading.examples import MAX_EXAMPLE_CHARS, Candidate, ExampleCriterion, choose
from app.grading.pipeline import PipelineParams
from app.grading.pipeline_prompts import _fit, _Prompt
from app.grading.prompts import EXAMPLES_INTRO
from tests.grading.test_privacy import CASES, ESSAY, RUBRIC, Case

RIVERS = "Rivers carve valleys and carry sediment to the sea; floods renew the plains."
#: The intro's first words: present in a prompt exactly when the examples block is.
BLOCK = EXAMPLES_INTRO.split(":", 1)[0]
EXAMPLE_STUDENT = "Berenguer Oliveras"


def candidate(number: int, text: str, *, pinned: bool = False, **values) -> Candidate:
    return Candidate(submission_id=number, text=text, score=7, scale=10, pinned=pinned, **values)


def test_pinned_come_first_then_the_most_similar_up_to_the_count():
    pool = [
        candidate(1, "Volcanoes erupt lava and ash over the island."),
        candidate(2, RIVERS),
        candidate(3, "Deserts are dry and the wind moves the dunes.", pinned=True),
        candidate(4, "Rivers carry sediment; floods renew plains and valleys."),
    ]
    chosen = choose(RIVERS, pool, 3)
    assert [c.submission_id for c in chosen] == [3, 2, 4]
    assert chosen[1].similarity == 1.0 > chosen[2].similarity > chosen[0].similarity
    assert [c.submission_id for c in choose(RIVERS, pool, 1)] == [3]  # pinned before closer
    assert choose(RIVERS, pool, 0) == ()


def test_the_runner_masks_each_example_with_its_own_students_names_and_cuts_it():
    long_text = f"By {EXAMPLE_STUDENT}. " + RIVERS * 200
    job = runner.Job.for_text(
        "rubric_eval",
        RIVERS,
        "essay.txt",
        "text",
        names=["Ana Pérez"],
        max_score=10,
    )
    job = runner.Job(
        **{**job.__dict__, "examples": (
            candidate(
                1,
                long_text,
                names=(EXAMPLE_STUDENT,),
                feedback=f"Good, {EXAMPLE_STUDENT}; Ana Pérez helped you.",
                criteria=(ExampleCriterion("Content", 5, 6),),
            ),
        )}
    )  # fmt: skip
    params = registry.validate_params(registry.get("rubric_eval"), None)
    grading_input, masked = runner.model_input(job, params)
    (example,) = grading_input.examples
    assert EXAMPLE_STUDENT not in example.text + example.feedback
    assert "Ana Pérez" not in example.feedback  # the graded student's name, too
    assert example.text.startswith("By [name].")
    assert len(example.text) < MAX_EXAMPLE_CHARS + 60 < len(long_text)
    assert "truncated" in example.text
    assert (example.score, example.scale, example.criteria) == (
        7,
        10,
        (ExampleCriterion("Content", 5, 6),),
    )
    assert masked["example 1"]["name"] == 3


def test_pipeline_drops_examples_before_reference_passages_when_over_budget():
    params = PipelineParams(context_tokens=1500, reserved_tokens=100)
    examples = tuple(
        candidate(n, f"Example {n}: " + RIVERS * 20) for n in range(1, 5)
    )  # about 400 tokens each
    prompt = _Prompt("System.", "Task.", RIVERS, (), examples=examples, maximum=10)
    fitted, trimmed = _fit(prompt, "m4rk3r", params)
    assert 0 < len(fitted.examples) < 4
    assert trimmed == {"examples_dropped": 4 - len(fitted.examples)}
    assert fitted.examples == examples[: len(fitted.examples)]  # the most similar stay


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.plugin}-{c.params.get('mode', '')}")
def test_every_strategy_that_asks_a_model_shows_the_masked_examples(fake_llm, session, case: Case):
    fake_llm.set_default(case.reply)
    example = candidate(
        41,
        f"{EXAMPLE_STUDENT} wrote: {RIVERS} Sediment builds deltas.",
        names=(EXAMPLE_STUDENT,),
        feedback="Accurate, but name one real river.",
        criteria=(ExampleCriterion("Content", 5, 6),),
    )
    job = runner.Job(
        plugin=case.plugin,
        assignment=Assignment(
            max_score=10, instructions="Write about rivers.", rubric=RUBRIC, model="fake-model"
        ),
        document=ESSAY,
        params=case.params,
        examples=(example,),
    )
    result = runner.grade(job, session, lambda *_: None)
    assert result.outcome == Outcome.GRADED

    bodies = ["\n".join(m["content"] for m in body["messages"]) for body in fake_llm.requests]
    assert not [body for body in bodies if EXAMPLE_STUDENT.split()[1] in body]
    if not registry.get(case.plugin).needs_llm:
        assert result.provenance["examples"] == []
        return
    shown = [body for body in bodies if BLOCK in body]
    assert shown, "no prompt carried the examples"
    assert all(
        "Accurate, but name one real river." in body
        and "the teacher's score: 7 out of 10; per criterion: Content 5 of 6" in body
        and "<<<BEGIN EXAMPLE 1 " in body
        and "[name] wrote:" in body
        for body in shown
    )
    assert result.provenance["examples"] == [
        {"submission_id": 41, "similarity": 0.0, "pinned": False}
    ]
