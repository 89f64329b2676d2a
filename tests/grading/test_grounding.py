"""Evidence grounding: whether a quote is in the work (app.grading.grounding), and every
strategy that lets a model give a criterion points, run by the runner against the scripted
model server: an invented quote loses its points and sends the grade to review, a real one
is graded."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from app.grading import grounding, registry, runner
from app.grading.base import (
    CriterionResult,
    GradingInput,
    GradingResult,
    Outcome,
    PluginParams,
)
from app.grading.grounding import Grounds, Text, Why
from app.grading.rubric import parse_rubric

ESSAY = """\
The French Revolution began in 1789 because of mounting royal debt and deep social inequal-
ity among the three estates. Modern historians stress the “fiscal crisis” — not the ideas
of the Enlightenment alone. Bread prices doubled in the spring of 1789, and the Third
Estate declared itself the National Assembly in June."""

INSTRUCTIONS = "Explain the causes of the French Revolution in one paragraph."
RUBRIC = parse_rubric(
    [
        {"name": "Thesis", "requirement": "States a clear thesis about the causes.", "weight": 6},
        {"name": "Dates", "requirement": "Gives the correct starting year.", "weight": 4},
    ]
)
REFERENCE = "The Estates-General met at Versailles in May 1789 for the first time since 1614."

GROUNDS = Grounds(
    Text(ESSAY),
    Text(INSTRUCTIONS, *(p for c in RUBRIC.criteria for p in (c.name, c.requirement))),
)

GOOD = {
    "Thesis": "because of mounting royal debt and deep social inequality",
    "Dates": "The French Revolution began in 1789",
}
INVENTED = "The revolution was sparked by the storming of the Bastille by angry peasants."


# --- whether a quote is in the work --------------------------------------------------------


@pytest.mark.parametrize(
    "quote",
    [
        "The French Revolution began in 1789",
        "the french revolution BEGAN in 1789.",  # case, a closing full stop
        '"because of mounting royal debt"',  # wrapped in quote marks
        "deep social inequality among the three estates",  # hyphenated at a line's end
        'the "fiscal crisis" - not the ideas',  # typographic quotes and dash made plain
        "Modem historians stress the fiscal crisis",  # OCR: "rn" read as "m"
        "The French Revolution began in l789",  # OCR: "l" for "1"
        "Bread prices doub1ed in the spring",  # OCR: "1" for "l"
        "the Third Estate declared itselfthe National Assembly",  # a space lost
        "the Third  Estate de clared itself",  # spaces added
        "Modern historians stress … not the ideas of the Enlightenment alone",  # ellipsis
        "Bread prices doubled [...] the National Assembly in June",
    ],
)
def test_real_quotes_count_despite_small_differences(quote):
    assert GROUNDS.check(quote) == Why.VERIFIED


def test_accents_are_folded_on_both_sides():
    grounds = Grounds(Text("La Revolución francesa empezó en 1789 por la deuda."), Text())
    assert grounds.check("la revolucion francesa empezo en 1789") == Why.VERIFIED
    assert grounds.check("La Revolución Francesa empezó en 1789") == Why.VERIFIED


@pytest.mark.parametrize(
    "quote",
    [
        INVENTED,
        "The French Revolution began in 1798 because of bread",  # a changed claim
        "The French Revolution began in 1789 because of hunger",  # a real start, invented end
        "mounting royal debt and the ideas of Rousseau",
        "the three estates … The French Revolution began",  # parts out of order
        "Napoleon … crowned himself emperor",
    ],
)
def test_invented_quotes_do_not_count(quote):
    assert GROUNDS.check(quote) == Why.NOT_FOUND


@pytest.mark.parametrize(
    "quote",
    [
        "Explain the causes of the French Revolution",  # the instructions
        "States a clear thesis about the causes.",  # the rubric
    ],
)
def test_the_assignments_own_wording_does_not_count(quote):
    assert GROUNDS.check(quote) == Why.ASSIGNMENT


def test_the_rubric_pasted_into_the_work_is_still_no_evidence():
    """A student can copy the rubric into the work for the model to quote back."""
    pasted = ESSAY + "\nThis essay states a clear thesis about the causes."
    grounds = Grounds(Text(pasted), GROUNDS.assignment)
    assert grounds.check("states a clear thesis about the causes") == Why.ASSIGNMENT
    # The student's own words around the assignment's still count.
    own = "Explain the causes of the French Revolution: it began in 1789 because of debt"
    work = Text("Explain the causes of the French Revolution: it began in 1789 because of debt.")
    assert Grounds(work, GROUNDS.assignment).check(own) == Why.VERIFIED


def test_the_teachers_reference_is_evidence_only_where_the_work_says_it_too():
    """A correct answer often says what the model answer says; a quote of the reference that
    the work does not contain is not found."""
    assert GROUNDS.check(REFERENCE) == Why.NOT_FOUND
    work = Text(ESSAY, "The Estates-General met at Versailles in May 1789.")
    assert Grounds(work, GROUNDS.assignment).check(REFERENCE[:50]) == Why.VERIFIED


@pytest.mark.parametrize("quote", ["in 1789", "1789", "royal debt", "…", "[...]", "   "])
def test_quotes_too_short_to_be_evidence_do_not_count(quote):
    assert GROUNDS.check(quote) in (Why.TOO_SHORT, Why.NO_QUOTE)


def test_a_short_quote_counts_when_the_whole_work_is_that_short():
    assert Grounds(Text("x = 42"), Text()).check("x = 42") == Why.VERIFIED
    assert Grounds(Text("x = 42"), Text()).check("y = 7") == Why.NOT_FOUND


def test_a_quote_longer_than_the_work_is_not_found_inside_it():
    """rapidfuzz's partial match would look for the work in the quote: the whole quote must
    be in the work."""
    grounds = Grounds(Text("The answer is forty-two."), Text())
    assert grounds.check("The answer is forty-two, as the author proves at length.") == (
        Why.NOT_FOUND
    )


def test_a_line_of_code_is_evidence_though_it_is_one_word():
    code = "def total(xs):\n    return sum(x for x in xs)\n"
    assert Grounds(Text(code), Text()).check("return sum(x for x in xs)") == Why.VERIFIED
    assert Grounds(Text(code), Text()).check("System.out.println(total);") == Why.NOT_FOUND


# --- every strategy, through the runner ----------------------------------------------------


@dataclass(frozen=True)
class Strategy:
    plugin: str
    params: dict[str, Any]
    #: The model's reply given each criterion's quote (by criterion name).
    reply: Callable[[dict[str, str]], Callable[[dict], str]]
    graded: float  # the score with both quotes real
    without_thesis: float  # the score once Thesis's points are dropped
    names: tuple[str, ...] = ("Thesis", "Dates")  # the criteria a model judged
    #: What the strategy asks the model about, in the assignment's words.
    asked: str = RUBRIC.criteria[0].requirement


def _per_criterion(quotes: dict[str, str]) -> Callable[[dict], str]:
    def reply(body: dict) -> str:
        asked = body["messages"][1]["content"]
        name = "Thesis" if RUBRIC.criteria[0].requirement in asked else "Dates"
        return json.dumps({"verdict": "MET", "reason": "Yes.", "evidence": quotes[name]})

    return reply


def _one_shot(quotes: dict[str, str]) -> Callable[[dict], str]:
    answer = {
        key: {"verdict": "MET", "reason": "Yes.", "evidence": quotes[name]}
        for key, name in (("C1", "Thesis"), ("C2", "Dates"))
    }
    return lambda _body: json.dumps(answer)


def _breakdown(quotes: dict[str, str]) -> Callable[[dict], str]:
    criteria = [
        {"name": name, "score": points, "max": points, "reason": "Yes.", "evidence": quotes[name]}
        for name, points in (("Thesis", 6), ("Dates", 4))
    ]
    reply = {"score": 10, "max_score": 10, "feedback": "Well argued.", "criteria": criteria}
    return lambda _body: json.dumps(reply)


def _tree_answers(quotes: dict[str, str]) -> Callable[[dict], str]:
    answer = {"q1": {"score": 100, "reason": "Yes.", "quote": quotes["Thesis"]}}
    return lambda _body: json.dumps(answer)


def _ensemble_replies(quotes: dict[str, str]) -> Callable[[dict], str]:
    reply = {"categories": {"Thesis": 6, "Dates": 4}, "evidence": quotes, "issues": []}
    return lambda _body: json.dumps(reply)


#: The ensemble scores categories; named like the rubric's criteria, both graders agree.
ENSEMBLE = {
    "models": ["g", "e"],
    "categories": [{"name": "Thesis", "points": 6}, {"name": "Dates", "points": 4}],
}

QUESTION = "Does the essay state a clear thesis about the causes?"
TREE = {
    "base": {
        "children": [
            {
                "name": "Thesis",
                "weight": 6,
                "test": {"kind": "ai", "question": QUESTION},
            },
            {"name": "Dates", "weight": 4, "test": {"kind": "regex", "pattern": "1789"}},
        ]
    }
}

STRATEGIES = [
    Strategy("criteria", {"mode": "per_criterion"}, _per_criterion, 10, 4),
    Strategy("criteria", {"mode": "one_shot"}, _one_shot, 10, 4),
    Strategy("rubric_eval", {}, _breakdown, 10, 4),
    Strategy("pipeline", {}, _breakdown, 10, 4),
    # The regex test is the application's own check: its points need no quote.
    Strategy("criteria_tree", {"tree": TREE}, _tree_answers, 10, 4, ("base/Thesis",), QUESTION),
    Strategy("ensemble", ENSEMBLE, _ensemble_replies, 10, 4),
]


def grade(fake_llm, session, strategy: Strategy, quotes: dict[str, str]):
    fake_llm.set_default(strategy.reply(quotes))
    job = runner.Job.for_text(
        strategy.plugin,
        ESSAY,
        "essay.txt",
        "text",
        params=strategy.params,
        max_score=10,
        instructions=INSTRUCTIONS,
        rubric=None if strategy.plugin == "criteria_tree" else RUBRIC,
        reference=REFERENCE,
        mask_pii=False,
    )
    return runner.grade(job, session, lambda *_: None)


@pytest.mark.parametrize("strategy", STRATEGIES, ids=lambda s: f"{s.plugin}-{s.params}"[:30])
def test_points_with_real_quotes_are_graded(fake_llm, session, strategy):
    result = grade(fake_llm, session, strategy, GOOD)
    assert result.outcome == Outcome.GRADED, result.error
    assert result.score == pytest.approx(strategy.graded)
    quotes = result.provenance["quotes"]
    assert [q["criterion"] for q in quotes] == list(strategy.names)
    assert all(q["verified"] and q["why"] == "verified" for q in quotes)
    # Every prompt that lets the model give points asks for the passage that earns them.
    assert all("copied" in json.dumps(r["messages"]) for r in fake_llm.requests)


@pytest.mark.parametrize("strategy", STRATEGIES, ids=lambda s: f"{s.plugin}-{s.params}"[:30])
@pytest.mark.parametrize("why", ["not found in the work", "the assignment's own wording"])
def test_points_without_a_real_quote_do_not_count(fake_llm, session, strategy, why):
    quote = INVENTED if why == "not found in the work" else strategy.asked
    result = grade(fake_llm, session, strategy, GOOD | {"Thesis": quote})
    assert result.outcome == Outcome.NEEDS_REVIEW
    assert result.score == pytest.approx(strategy.without_thesis)
    assert result.provenance["score_before_grounding"] == pytest.approx(strategy.graded)
    thesis = strategy.names[0]
    assert thesis in result.error and "without a passage of the work" in result.error
    assert "Dates" not in result.error
    assert "UngroundedEvidence" in {f.code for f in result.flags}
    checked = {q["criterion"]: q for q in result.provenance["quotes"]}
    assert checked[thesis] | {"quote": ""} == {
        "criterion": thesis,
        "quote": "",
        "verified": False,
        "why": why,
        "points_dropped": 6,
    }
    row = next(c for c in result.criteria if c.name == thesis)
    assert row.score == 0 and row.evidence_verified is False
    record = result.record()
    assert record["review_reason"] == result.error
    assert record["criteria"][0]["evidence_verified"] is False


def test_the_teachers_fallback_verdict_needs_no_quote(fake_llm, session):
    """A verdict the teacher set for unreadable replies is no model's claim about the work."""
    strategy = Strategy("criteria", {"mode": "one_shot", "max_retries": 0}, _one_shot, 10, 10)
    fake_llm.set_default("not JSON")
    job = runner.Job.for_text(
        "criteria",
        ESSAY,
        "essay.txt",
        "text",
        params=strategy.params | {"fallback_positive": "MET"},
        max_score=10,
        rubric=RUBRIC,
    )
    result = runner.grade(job, session, lambda *_: None)
    assert result.score == 10 and "quotes" not in result.provenance
    assert "UngroundedEvidence" not in {f.code for f in result.flags}


def test_holistic_grading_gives_no_criterion_points_to_check(fake_llm, session):
    """Documented in docs/decisions.md: one overall score has no criterion to quote for."""
    fake_llm.set_default(json.dumps({"score": 80, "explanation": "Good."}))
    job = runner.Job.for_text(
        "criteria",
        ESSAY,
        "essay.txt",
        "text",
        params={"mode": "holistic"},
        max_score=10,
        rubric=RUBRIC,
    )
    result = runner.grade(job, session, lambda *_: None)
    assert result.outcome == Outcome.GRADED and result.score == 8
    assert "quotes" not in result.provenance


def test_a_grade_held_already_keeps_its_reason_and_names_the_criterion_in_a_flag():
    """The first reason a grade waits stays the reason; the points still go, and a flag
    names the criterion."""
    job = GradingInput(
        text=ESSAY, filename="essay.txt", params=PluginParams(), max_score=10, rubric=RUBRIC
    )
    held = GradingResult(
        Outcome.NEEDS_REVIEW,
        None,
        None,
        "",
        criteria=[CriterionResult("Thesis", 6, 6, evidence=INVENTED, model_judged=True)],
        error="Something else went wrong.",
    )
    grounding.enforce(held, job, registry.get("rubric_eval"))
    assert held.error == "Something else went wrong." and held.criteria[0].score == 0
    (flag,) = held.flags
    assert flag.code == "UngroundedEvidence" and "Thesis" in flag.message
    assert "score_before_grounding" not in held.provenance  # there was no score to lower


def test_a_hyphen_ends_a_word_only_after_a_letter():
    grounds = Grounds(Text("The range was 10 -\n20 degrees, and the tempera-\nture rose."), Text())
    assert grounds.check("the temperature rose") == Why.VERIFIED
    assert grounds.check("The range was 10 - 20 degrees") == Why.VERIFIED
