"""The ``rubric_eval`` strategy against the scripted model server: the score it asked for,
structured replies read criterion by criterion, and what goes to a teacher instead."""

from __future__ import annotations

import json
import logging

import pytest

from app.grading.base import GradingInput, GradingResult, Outcome
from app.grading.registry import validate_params
from app.grading.replies import NO_FEEDBACK
from app.grading.rubric import Rubric, parse_rubric
from app.grading.rubric_eval import RubricEval

RUBRIC = parse_rubric(
    [
        {"name": "Code Structure", "requirement": "Clear functions.", "weight": 10},
        {"name": "Algorithm Correctness", "requirement": "Right results.", "weight": 10},
    ]
)


def grade(session, rubric: Rubric | None = None, max_score: float = 10) -> GradingResult:
    job = GradingInput(
        text="def add(a, b): return a + b",
        filename="main.py",
        instructions="Write a function that adds two numbers.",
        max_score=max_score,
        params=validate_params(RubricEval(), None),
        rubric=rubric,
        model="fake-model",
    )
    return RubricEval().grade(job, session, lambda *_: None)


def criteria_reply(*rows: tuple[str, float, float], **extra) -> str:
    items = [
        {"name": name, "score": score, "max_score": top, "comment": f"About {name}."}
        for name, score, top in rows
    ]
    return json.dumps({"criteria": items, **extra})


# --- a scale the prompt did not ask for -----------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "written"),
    [
        pytest.param("Well done.\n\nFinal score: 5/5", "5", id="five-of-five"),
        pytest.param("Buen trabajo.\n\nNota final: 8/100", "100", id="eight-of-hundred"),
        pytest.param("Good.\n\nOverall: 85%", "100", id="percent"),
        pytest.param('{"score": 4, "max_score": 5, "feedback": "Good."}', "5", id="json"),
    ],
)
def test_a_score_on_another_scale_goes_to_review_unconverted(
    fake_llm, session, reply: str, written: str
) -> None:
    fake_llm.reply(reply)
    result = grade(session)
    assert result.outcome == Outcome.NEEDS_REVIEW
    assert result.score is None and result.normalized is None
    assert f"out of {written}, but it was asked for a score out of 10" in result.error


def test_the_asked_scale_and_no_scale_are_trusted(fake_llm, session) -> None:
    fake_llm.reply("Good.\n\nFinal score: 7/10")
    fake_llm.reply("Good.\n\nNota final: 7")
    assert [(r.score, r.scale) for r in (grade(session), grade(session))] == [(7, 10), (7, 10)]


def test_a_percentage_is_the_asked_scale_of_a_hundred_point_activity(fake_llm, session) -> None:
    fake_llm.reply("Good.\n\nOverall: 85%")
    result = grade(session, max_score=100)
    assert (result.outcome, result.score, result.scale) == (Outcome.GRADED, 85, 100)


def test_the_prompt_states_the_scale_and_the_rubric(fake_llm, session) -> None:
    fake_llm.reply("Final score: 7/10")
    grade(session, RUBRIC)
    system, user = (m["content"] for m in fake_llm.requests[0]["messages"])
    assert "Final score: X/10" in system
    assert "- Code Structure (requirement, weight 10): Clear functions." in user


# --- structured replies ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "wrap",
    [
        pytest.param(lambda body: body, id="bare"),
        pytest.param(lambda body: f"Here is my evaluation:\n```json\n{body}\n```", id="fenced"),
        pytest.param(lambda body: json.dumps({"evaluation": json.loads(body)}), id="wrapped"),
    ],
)
def test_a_json_reply_becomes_criteria_and_readable_feedback(fake_llm, session, wrap) -> None:
    body = criteria_reply(
        ("Code Structure", 9, 10),
        ("Algorithm Correctness", 8, 10),
        total=8.5,
        feedback="Excellent work on the algorithm.",
    )
    fake_llm.reply(wrap(body))
    result = grade(session, RUBRIC)
    assert (result.outcome, result.score, result.scale) == (Outcome.GRADED, 8.5, 10)
    assert result.feedback == "Excellent work on the algorithm."
    assert [(c.name, c.score, c.max, c.reason) for c in result.criteria] == [
        ("Code Structure", 9, 10, "About Code Structure."),
        ("Algorithm Correctness", 8, 10, "About Algorithm Correctness."),
    ]
    assert result.raw_replies == [wrap(body)]


def test_the_proposals_feedback_structured_shape_is_read(fake_llm, session) -> None:
    reply = {
        "score": 8.5,
        "max_score": 10,
        "feedback": "Well-structured.",
        "feedback_structured": {
            "criteria": [
                {"name": "Code Structure", "score": 9, "max_score": 10, "comment": "Clear."},
                {"name": "Algorithm Correctness", "score": 8, "max_score": 10, "comment": "Ok."},
            ]
        },
    }
    fake_llm.reply(json.dumps(reply))
    result = grade(session, RUBRIC)
    assert (result.outcome, result.score, result.feedback) == (
        Outcome.GRADED,
        8.5,
        "Well-structured.",
    )
    assert [c.reason for c in result.criteria] == ["Clear.", "Ok."]


def test_criteria_keyed_by_name_without_a_total_add_up(fake_llm, session) -> None:
    reply = {
        "criterios": {
            "Estructura": {"puntuacion": "3/4", "comentario": "Ordenado."},
            "Contenido": {"puntos": 5, "max": 6, "justificacion": "Falta un ejemplo."},
        },
        "retroalimentacion": ["Buen trabajo.", "Añada un ejemplo."],
    }
    fake_llm.reply(json.dumps(reply, ensure_ascii=False))
    result = grade(session)
    assert (result.outcome, result.score, result.scale) == (Outcome.GRADED, 8, 10)
    assert result.feedback == "- Buen trabajo.\n- Añada un ejemplo."
    assert [(c.name, c.score, c.max) for c in result.criteria] == [
        ("Estructura", 3, 4),
        ("Contenido", 5, 6),
    ]
    assert result.provenance["score_marker"] == "criteria"


def test_criteria_on_another_scale_without_a_total_go_to_review(fake_llm, session) -> None:
    fake_llm.reply(criteria_reply(("A", 4, 5), ("B", 5, 5), ("C", 8, 10)))
    result = grade(session)
    assert result.outcome == Outcome.NEEDS_REVIEW and result.score is None
    assert "gave 17 out of 20, but it was asked for a score out of 10" in result.error


def test_criteria_that_do_not_add_up_to_the_total_go_to_review(fake_llm, session) -> None:
    fake_llm.reply(criteria_reply(("A", 2, 5), ("B", 3, 5), total=9))
    result = grade(session)
    assert result.outcome == Outcome.NEEDS_REVIEW and result.score is None
    assert result.error == (
        "The grader's criteria add up to 5 out of 10, but its total is 9 out of 10. "
        "A teacher needs to review it."
    )
    assert len(result.criteria) == 2  # kept for the teacher who reviews


def test_a_rounded_total_agrees(fake_llm, session) -> None:
    fake_llm.reply(criteria_reply(("A", 4.25, 5), ("B", 4.2, 5), total=8.5))
    assert grade(session).outcome == Outcome.GRADED


def test_a_criterion_above_its_maximum_goes_to_review(fake_llm, session) -> None:
    fake_llm.reply(criteria_reply(("A", 7, 5), ("B", 3, 5), total=10))
    result = grade(session)
    assert result.outcome == Outcome.NEEDS_REVIEW
    assert "outside their own maximum, or not at all: A." in result.error


def test_criteria_that_are_not_the_rubric_go_to_review(fake_llm, session) -> None:
    fake_llm.reply(criteria_reply(("Code Structure", 4, 5), ("Style", 4, 5), total=8))
    result = grade(session, RUBRIC)
    assert result.outcome == Outcome.NEEDS_REVIEW
    assert "(not graded: Algorithm Correctness; not in the rubric: Style)" in result.error


def test_rubric_names_match_whatever_their_case_and_accents(fake_llm, session) -> None:
    rubric = parse_rubric([{"name": "Redacción", "requirement": "Clara.", "weight": 1}])
    fake_llm.reply(criteria_reply(("redaccion", 8, 10), total=8))
    assert grade(session, rubric).outcome == Outcome.GRADED


def test_json_with_feedback_and_no_criteria_shows_the_feedback(fake_llm, session) -> None:
    fake_llm.reply('{"score": 7, "max_score": 10, "feedback": "Solid work."}')
    result = grade(session)
    assert (result.score, result.feedback, result.criteria) == (7, "Solid work.", [])


def test_a_prose_reply_keeps_its_text_as_feedback(fake_llm, session) -> None:
    fake_llm.reply("Clear and correct.\n\nFinal score: 9/10")
    result = grade(session)
    assert result.feedback == "Clear and correct.\n\nFinal score: 9/10" and result.criteria == []


def test_an_unreadable_reply_is_logged_with_a_short_redacted_preview(
    fake_llm, session, caplog
) -> None:
    reply = "I cannot grade this. See https://tool.example/l/SECRET-TOKEN/status " + "x" * 500
    fake_llm.reply(reply)
    with caplog.at_level(logging.WARNING, logger="app.grading"):
        result = grade(session)
    assert result.outcome == Outcome.NEEDS_REVIEW
    [record] = [r for r in caplog.records if r.name == "app.grading.rubric_eval"]
    message = record.getMessage()
    assert "I cannot grade this." in message and "/l/[redacted]/status" in message
    assert "SECRET-TOKEN" not in message and len(message) < 250


# --- replies that cannot be shown (issue 21) ------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        {"score": 7, "max_score": 10, "feedback": {"good": "Clear.", "bad": "No tests."}},
        {"score": 7, "max_score": 10, "feedback": "Fine.", "criteria": [
            {"name": "A", "score": 7, "max": 10, "comment": ["Clear.", {"x": 1}]}]},
    ],
    ids=["feedback", "criterion-comment"],
)  # fmt: skip
def test_text_that_is_no_text_sends_to_review_and_shows_nothing(fake_llm, session, body) -> None:
    fake_llm.reply(json.dumps(body))
    result = grade(session)
    assert result.outcome == Outcome.NEEDS_REVIEW and result.score is None
    assert result.feedback == "" and result.criteria == []
    assert "not text" in result.error and "Nothing of it was shown" in result.error


def test_a_json_score_without_feedback_is_never_shown_raw(fake_llm, session) -> None:
    fake_llm.reply('{"score": 7, "max_score": 10}')
    result = grade(session)
    # Nor is a bare number released to the student: it waits, with its score, for a teacher.
    assert (result.outcome, result.score, result.feedback) == (Outcome.NEEDS_REVIEW, 7, "")
    assert result.error == NO_FEEDBACK


def test_a_fraction_for_a_score_out_of_ten_goes_to_review(fake_llm, session) -> None:
    fake_llm.reply('{"score": 0.75, "feedback": "Good."}')
    result = grade(session)
    assert result.outcome == Outcome.NEEDS_REVIEW and result.score is None
    assert "reads as a fraction of the whole" in result.error
