"""The ``criteria`` strategy against the scripted model server: scores, modes, failures."""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Callable

import pytest

from app.grading.base import GradingInput, GradingResult, Outcome
from app.grading.criteria import PLACEHOLDERS, QUESTIONS, Criteria
from app.grading.registry import InvalidParams, validate_params
from app.grading.rubric import Rubric, parse_rubric
from app.llm.errors import LLMRequestError
from app.llm.session import LLMSession

ESSAY = "The French Revolution began in 1789 because of debt and inequality."

RUBRIC = parse_rubric(
    [
        {"name": "Thesis", "requirement": "States a clear thesis about causes.", "weight": 10},
        {"name": "Dates", "requirement": "Gives the correct starting year.", "weight": 5},
        {"name": "Copying", "requirement": "Copies text without citation.", "weight": -3},
    ]
)


def verdict(value: str, reason: str = "Because.", evidence: str = "") -> str:
    return json.dumps({"verdict": value, "reason": reason, "evidence": evidence})


def judge_by(replies: dict[str, str], delay: float = 0.0) -> Callable[[dict], str]:
    """A default reply that answers each per-criterion call by the requirement it asks about."""

    def reply(body: dict) -> str:
        time.sleep(delay)
        prompt = body["messages"][1]["content"]
        return next(text for requirement, text in replies.items() if requirement in prompt)

    return reply


def by_name(rubric: Rubric, **replies: str) -> dict[str, str]:
    return {c.requirement: replies[c.name] for c in rubric.criteria}


def grade(
    session,
    params: dict | None = None,
    *,
    rubric: Rubric | None = RUBRIC,
    text: str = ESSAY,
    steps: list | None = None,
) -> GradingResult:
    job = GradingInput(
        text=text,
        filename="essay.txt",
        instructions="Explain the causes of the French Revolution.",
        max_score=10,
        params=validate_params(Criteria(), params),
        rubric=rubric,
        model="fake-model",
    )
    progress = (lambda *step: steps.append(step)) if steps is not None else lambda *_: None
    return Criteria().grade(job, session, progress)


# --- the seed's worked examples (weights 10, 5, -3) ---------------------------------------


def test_all_requirements_met_and_no_fault_scores_full_marks(fake_llm, session) -> None:
    replies = by_name(
        RUBRIC,
        Thesis=verdict("MET", "Clear causal thesis.", "because of debt and inequality"),
        Dates=verdict("MET", "1789 is right.", "1789"),
        Copying=verdict("UNMET", "Original wording."),
    )
    fake_llm.set_default(judge_by(replies))
    steps: list = []
    result = grade(session, steps=steps)

    assert result.outcome == Outcome.GRADED
    assert (result.score, result.scale, result.normalized) == (10, 10, 1.0)
    assert result.provenance["raw_score"] == 15
    assert result.provenance["llm_raw_score"] == 15
    assert result.provenance["normalized_score"] == 1.0
    assert result.provenance["penalty"] == 0.0
    assert result.provenance["mode"] == "per_criterion"
    assert [(c.name, c.score, c.max, c.verdict) for c in result.criteria] == [
        ("Thesis", 10, 10, "MET"),
        ("Dates", 5, 5, "MET"),
        ("Copying", 0, 0, "UNMET"),
    ]
    assert result.criteria[1].evidence == "1789"
    assert "Clear causal thesis." in result.feedback and "“1789”" in result.feedback
    assert "Copying" not in result.feedback  # a fault not committed is not mentioned
    assert len(result.raw_replies) == 3
    assert [step[:2] for step in steps] == [(1, 2), (2, 2)]


def test_a_committed_fault_subtracts_its_weight(fake_llm, session) -> None:
    replies = by_name(RUBRIC, Thesis=verdict("MET"), Dates=verdict("MET"), Copying=verdict("MET"))
    fake_llm.set_default(judge_by(replies))
    result = grade(session)

    assert result.provenance["raw_score"] == 12
    assert result.provenance["normalized_score"] == pytest.approx(12 / 15)
    assert result.score == pytest.approx(8.0)
    assert result.criteria[2].score == -3 and result.criteria[2].max == 0
    assert "### Problems found" in result.feedback


def test_without_normalization_the_score_is_the_weighted_sum(fake_llm, session) -> None:
    replies = by_name(RUBRIC, Thesis=verdict("MET"), Dates=verdict("UNMET"), Copying=verdict("MET"))
    fake_llm.set_default(judge_by(replies))
    result = grade(session, {"normalize": False})

    assert (result.score, result.scale) == (7, 15)
    assert result.provenance["raw_score"] == 7
    assert result.provenance["normalized_score"] == pytest.approx(7 / 15)
    assert "### What is missing" in result.feedback


@pytest.mark.parametrize(("normalize", "score"), [(True, 0.0), (False, -3.0)])
def test_faults_outweighing_requirements(fake_llm, session, normalize, score) -> None:
    rubric = parse_rubric(
        [
            {"name": "Answer", "requirement": "Answers the question.", "weight": 2},
            {"name": "Errors", "requirement": "Contains factual errors.", "weight": -5},
        ]
    )
    fake_llm.set_default(judge_by(by_name(rubric, Answer=verdict("MET"), Errors=verdict("MET"))))
    result = grade(session, {"normalize": normalize}, rubric=rubric)

    assert result.score == score
    assert result.provenance["raw_score"] == -3
    assert result.provenance["normalized_score"] == 0.0


def test_holistic_score_is_read_as_a_share_of_the_positive_weight(fake_llm, session) -> None:
    fake_llm.reply(json.dumps({"score": 85, "explanation": "Solid **argument**."}))
    result = grade(session, {"mode": "holistic"})

    assert len(fake_llm.requests) == 1
    assert result.outcome == Outcome.GRADED
    assert result.provenance["raw_score"] == pytest.approx(12.75)
    assert result.provenance["llm_raw_score"] == 85
    assert result.provenance["normalized_score"] == pytest.approx(0.85)
    assert (result.score, result.scale) == (pytest.approx(8.5), 10)
    assert result.feedback == "Solid **argument**."
    assert result.criteria == []
    prompt = fake_llm.requests[0]["messages"][1]["content"]
    assert "(weight -3)" in prompt and "(weight 10)" in prompt


def test_holistic_raw_mode_uses_weighted_sum_semantics(fake_llm, session) -> None:
    fake_llm.reply(json.dumps({"score": "85", "explanation": ""}))
    result = grade(session, {"mode": "holistic", "normalize": False})
    assert (result.score, result.scale) == (pytest.approx(12.75), 15)


# --- modes and model calls --------------------------------------------------------------


def test_one_shot_judges_every_criterion_in_one_call(fake_llm, session) -> None:
    fake_llm.reply(
        json.dumps(
            {
                "C1": {"verdict": "MET", "reason": "Clear.", "evidence": "because of debt"},
                "C2": {"verdict": "met", "reason": "Right year."},
                "C3": {"verdict": "UNMET", "reason": "Original."},
            }
        )
    )
    result = grade(session, {"mode": "one_shot"})

    assert len(fake_llm.requests) == 1
    assert result.score == 10 and result.provenance["raw_score"] == 15
    assert [c.verdict for c in result.criteria] == ["MET", "MET", "UNMET"]
    prompt = fake_llm.requests[0]["messages"][1]["content"]
    assert all(c.requirement in prompt for c in RUBRIC.criteria)
    assert "C1, C2, C3" in prompt


def test_per_criterion_makes_one_call_per_criterion_concurrently(fake_llm, session) -> None:
    rubric = parse_rubric(
        [
            {"name": f"R{i}", "requirement": f"Requirement number {i}.", "weight": i}
            for i in (1, 2, 3, 4, 5)
        ]
    )
    fake_llm.set_default(judge_by({c.requirement: verdict("MET") for c in rubric.criteria}, 0.3))
    started = time.monotonic()
    result = grade(session, rubric=rubric)
    elapsed = time.monotonic() - started

    assert len(fake_llm.requests) == 5
    assert elapsed < 0.6, f"five 0.3 s calls took {elapsed:.2f} s: they did not overlap"
    assert result.score == 10
    prompts = [r["messages"][1]["content"] for r in fake_llm.requests]
    for criterion in rubric.criteria:  # each call asks about exactly one criterion
        assert sum(criterion.requirement in p for p in prompts) == 1


def test_requests_use_json_mode_temperature_and_a_keyed_marker(fake_llm, session) -> None:
    """The fence code cannot be predicted from the text, but is stable for it (so the
    reply cache can match a regrade)."""
    fake_llm.set_default(verdict("UNMET"))
    grade(session, {"temperature": 0.0})

    markers = set()
    for body in fake_llm.requests:
        assert body["response_format"] == {"type": "json_object"}
        assert body["temperature"] == 0.0
        assert body["model"] == "fake-model"
        system, user = body["messages"][0]["content"], body["messages"][1]["content"]
        marker = re.search(r"<<<BEGIN SUBMISSION ([0-9a-f]{16})>>>", user).group(1)
        assert marker in system and f"<<<END SUBMISSION {marker}>>>" in user
        assert ESSAY in user
        markers.add(marker)
    assert markers == {session.marker(ESSAY)}
    assert session.marker(ESSAY) != LLMSession(None, secret="other").marker(ESSAY)


def test_faults_are_explained_as_mistakes_to_find(fake_llm, session) -> None:
    fake_llm.set_default(verdict("UNMET"))
    grade(session)
    fault = next(r for r in fake_llm.requests if "Copies text" in r["messages"][1]["content"])
    assert "a fault" in fault["messages"][1]["content"]


def test_long_submissions_are_cut(fake_llm, session) -> None:
    fake_llm.set_default(verdict("MET"))
    result = grade(session, {"max_chars": 1000}, text="word " * 1000)

    prompt = fake_llm.requests[0]["messages"][1]["content"]
    assert "submission (truncated)" in prompt and "submission truncated for grading" in prompt
    assert len(prompt) < 3000
    assert result.provenance["truncated_input"] is True


def test_transport_errors_propagate(fake_llm, session) -> None:
    fake_llm.fail(400)
    with pytest.raises(LLMRequestError):
        grade(session, {"mode": "one_shot"})


def test_no_rubric_sends_to_review_without_calling_the_model(fake_llm, session) -> None:
    result = grade(session, rubric=None)
    assert result.outcome == Outcome.NEEDS_REVIEW
    assert result.score is None
    assert "needs a rubric" in result.error
    assert fake_llm.requests == []


# --- unreadable replies -------------------------------------------------------------------


def test_a_reply_that_becomes_valid_on_the_second_try_is_used(fake_llm, session) -> None:
    fake_llm.reply("I think it is quite good overall!")
    fake_llm.reply(verdict("MET"))
    rubric = parse_rubric([{"name": "Only", "requirement": "Answers.", "weight": 4}])
    result = grade(session, rubric=rubric)

    assert result.outcome == Outcome.GRADED and result.score == 10
    assert result.raw_replies == ["I think it is quite good overall!", verdict("MET")]
    retry = fake_llm.requests[1]["messages"]
    assert [m["role"] for m in retry] == ["system", "user", "assistant", "user"]
    assert retry[2]["content"] == "I think it is quite good overall!"
    assert "could not be used" in retry[3]["content"]


def test_one_shot_missing_a_criterion_is_retried(fake_llm, session) -> None:
    fake_llm.reply(json.dumps({"C1": {"verdict": "MET"}, "C2": {"verdict": "MET"}}))
    fake_llm.reply(json.dumps({f"C{i}": {"verdict": "UNMET"} for i in (1, 2, 3)}))
    result = grade(session, {"mode": "one_shot"})

    assert len(fake_llm.requests) == 2
    assert "no judgement for C3" in fake_llm.requests[1]["messages"][3]["content"]
    assert result.score == 0


@pytest.mark.parametrize("mode", ["per_criterion", "one_shot", "holistic"])
def test_garbage_without_fallback_goes_to_review(fake_llm, session, mode) -> None:
    fake_llm.set_default("Sorry, I cannot help with that.")
    result = grade(session, {"mode": mode, "max_retries": 1})

    calls = 2 * (3 if mode == "per_criterion" else 1)
    assert len(fake_llm.requests) == calls
    assert len(result.raw_replies) == calls
    assert result.outcome == Outcome.NEEDS_REVIEW
    assert result.score is None and result.scale is None
    assert "2 attempts" in result.error and result.feedback == ""
    assert "raw_score" not in result.provenance
    if mode == "per_criterion":  # one question per criterion: the criteria are named
        assert "Thesis, Dates, Copying" in result.error
    else:  # one question was asked: the error names it, and why its reply was unusable
        assert f"reply to the {QUESTIONS[mode]} could not be read" in result.error
        assert "Thesis" not in result.error and "(no JSON object in the reply)" in result.error


def test_fallback_verdicts_follow_the_criterion_sign(fake_llm, session) -> None:
    garbage = "no idea"
    replies = by_name(RUBRIC, Thesis=verdict("MET"), Dates=garbage, Copying=garbage)
    fake_llm.set_default(judge_by(replies))
    params = {"fallback_positive": "MET", "fallback_negative": "MET", "max_retries": 2}
    result = grade(session, params)

    assert len(fake_llm.requests) == 1 + 3 + 3
    assert result.outcome == Outcome.GRADED
    assert result.provenance["raw_score"] == 10 + 5 - 3
    assert [c.verdict for c in result.criteria] == ["MET", "MET", "MET"]
    assert "fallback" in result.criteria[1].reason
    assert result.provenance["fallback_criteria"] == ["Dates", "Copying"]
    assert [f.code for f in result.flags] == ["fallback_verdicts"]
    assert "Dates, Copying" in result.flags[0].message


@pytest.mark.parametrize(
    ("params", "verdicts", "raw"),
    [
        ({"fallback_positive": "MET"}, ["MET", "MET", "UNMET"], 15),
        ({"fallback_negative": "MET"}, ["UNMET", "UNMET", "MET"], -3),
    ],
)
def test_an_unset_fallback_sign_defaults_to_unmet(fake_llm, session, params, verdicts, raw) -> None:
    """The rubric seed: a fallback configured for one sign only leaves the other at UNMET."""
    fake_llm.set_default("garbage")
    result = grade(session, params | {"max_retries": 0, "normalize": False})

    assert result.outcome == Outcome.GRADED and result.error is None
    assert [c.verdict for c in result.criteria] == verdicts
    assert result.provenance["raw_score"] == raw
    assert result.provenance["fallback_criteria"] == ["Thesis", "Dates", "Copying"]


def test_unreadable_replies_are_logged_with_a_short_preview(fake_llm, session, caplog) -> None:
    fake_llm.set_default("Sorry, I cannot help with that. " * 40)
    with caplog.at_level(logging.WARNING, logger="app.grading.criteria"):
        grade(session, {"mode": "one_shot", "max_retries": 1})
    lines = [r.getMessage() for r in caplog.records if r.name == "app.grading.criteria"]
    assert len(lines) == 2 and "attempt 2 of 2" in lines[1]
    assert "'Sorry, I cannot help with that. Sorry" in lines[0]
    assert all(len(line) < 300 for line in lines)


def test_a_holistic_score_on_another_scale_goes_to_review(fake_llm, session) -> None:
    fake_llm.reply(json.dumps({"score": 8, "max_score": 10, "explanation": "Good."}))
    result = grade(session, {"mode": "holistic", "fallback_positive": "MET"})

    assert len(fake_llm.requests) == 1
    assert result.outcome == Outcome.NEEDS_REVIEW and result.score is None
    assert result.error.startswith(
        "The grader gave 8 out of 10, but it was asked for a score out of 100."
    )
    assert result.feedback == "Good."


def test_holistic_fallback_scores_from_verdicts_but_has_no_model_number(fake_llm, session) -> None:
    fake_llm.set_default(json.dumps({"score": 140, "explanation": "Out of range."}))
    params = {"mode": "holistic", "fallback_positive": "MET", "fallback_negative": "UNMET"}
    result = grade(session, params)

    assert len(fake_llm.requests) == 3
    assert "between 0 and 100" in fake_llm.requests[1]["messages"][3]["content"]
    assert result.score == 10
    assert result.provenance["llm_raw_score"] is None
    assert result.flags[0].code == "fallback_verdicts"


# --- replies that cannot be shown or used (issue 21) -------------------------------------


@pytest.mark.parametrize(
    "explanation",
    [{"strengths": "Clear thesis.", "weaknesses": "Few dates."}, ["Clear.", {"tip": "x"}], 7, True],
    ids=["object", "list-with-object", "number", "boolean"],
)
def test_a_holistic_explanation_that_is_no_text_is_never_shown(
    fake_llm, session, explanation
) -> None:
    """SmolLM2 answered the explanation as an object: the student was shown a Python dict."""
    fake_llm.set_default(json.dumps({"score": 85, "explanation": explanation}))
    result = grade(session, {"mode": "holistic", "max_retries": 1})

    assert len(fake_llm.requests) == 2  # asked again, saying why
    assert 'the "explanation" is' in fake_llm.requests[1]["messages"][3]["content"]
    assert result.outcome == Outcome.NEEDS_REVIEW and result.score is None
    assert result.feedback == "" and "{" not in result.error
    assert f"reply to the {QUESTIONS['holistic']} could not be read" in result.error
    assert 'the "explanation" is ' in result.error and "not text" in result.error


def test_a_readable_explanation_on_the_second_try_is_used(fake_llm, session) -> None:
    fake_llm.reply(json.dumps({"score": 85, "explanation": {"strengths": "Clear."}}))
    fake_llm.reply(json.dumps({"score": 85, "explanation": "Clear thesis."}))
    result = grade(session, {"mode": "holistic"})
    assert (result.outcome, result.score, result.feedback) == (
        Outcome.GRADED,
        pytest.approx(8.5),
        "Clear thesis.",
    )


@pytest.mark.parametrize("field", ["reason", "evidence"])
@pytest.mark.parametrize("mode", ["per_criterion", "one_shot"])
def test_a_reason_or_evidence_that_is_no_text_is_unreadable(fake_llm, session, field, mode):
    judgement = {"verdict": "MET", "reason": "Clear.", "evidence": "1789"}
    judgement[field] = {"quote": "1789", "line": 1}
    reply = judgement if mode == "per_criterion" else {"C1": judgement, "C2": judgement,
                                                        "C3": judgement}  # fmt: skip
    fake_llm.set_default(json.dumps(reply))
    result = grade(session, {"mode": mode, "max_retries": 0})

    assert result.outcome == Outcome.NEEDS_REVIEW and result.score is None
    assert "quote" not in result.feedback + "".join(c.reason for c in result.criteria)


@pytest.mark.parametrize("score", [0.5, 0.85, "0.9"])
def test_a_holistic_score_that_reads_as_a_fraction_goes_to_review(fake_llm, session, score):
    """SmolLM2 wrote 0.5 for a good essay: read on 0-100 it was 0.05 out of 10."""
    fake_llm.reply(json.dumps({"score": score, "explanation": "A good essay."}))
    result = grade(session, {"mode": "holistic"})

    assert len(fake_llm.requests) == 1  # a definite answer: held, not asked again
    assert result.outcome == Outcome.NEEDS_REVIEW and result.score is None
    assert result.error.startswith(
        f"The grader gave {float(score):g}, which reads as a fraction of the whole rather "
        "than a score out of 100."
    )


@pytest.mark.parametrize(("score", "expected"), [(0, 0.0), (1, 0.1), ("85%", 8.5), (100, 10)])
def test_holistic_scores_that_fit_the_scale_are_graded(fake_llm, session, score, expected):
    fake_llm.reply(json.dumps({"score": score, "explanation": "Read."}))
    result = grade(session, {"mode": "holistic"})
    assert (result.outcome, result.score) == (Outcome.GRADED, pytest.approx(expected))


OFF_TOPIC = "My summer holidays were great: we went to the beach every day."


@pytest.mark.parametrize(
    ("field", "copied"),
    [
        ("reason", "one or two sentences"),
        ("reason", "One or two sentences."),
        (
            "evidence",
            "The passage of the submission that earns the verdict, copied word for word "
            "(empty if there is none)",
        ),  # fmt: skip
    ],
)
def test_a_verdict_that_copies_the_prompts_example_is_unreadable(fake_llm, session, field, copied):
    """SmolLM2 answered MET with the format example's "one or two sentences" as its reason,
    for an essay about something else."""
    judgement = {"verdict": "MET", "reason": "Clear.", "evidence": ""} | {field: copied}
    fake_llm.set_default(json.dumps(judgement))
    result = grade(session, {"max_retries": 1}, text=OFF_TOPIC)

    assert len(fake_llm.requests) == 6  # each criterion asked again, then given up
    retry = next(r["messages"] for r in fake_llm.requests if len(r["messages"]) == 4)
    assert f'the "{field}" copies the example of the prompt' in retry[3]["content"]
    assert result.outcome == Outcome.NEEDS_REVIEW and result.score is None
    assert result.feedback == "" and copied not in result.error


def test_a_holistic_explanation_that_copies_the_prompts_example_is_unreadable(fake_llm, session):
    copied = "Markdown feedback for the student: strengths, weaknesses and how to improve"
    fake_llm.set_default(json.dumps({"score": 90, "explanation": copied}))
    result = grade(session, {"mode": "holistic", "max_retries": 0}, text=OFF_TOPIC)
    assert result.outcome == Outcome.NEEDS_REVIEW and result.feedback == ""
    assert "copies the example of the prompt" in result.error


def test_a_reason_that_merely_uses_the_examples_words_is_kept(fake_llm, session) -> None:
    reason = "The thesis takes one or two sentences and is clear."
    fake_llm.set_default(verdict("MET", reason))
    result = grade(session)
    assert result.outcome == Outcome.GRADED and reason in result.feedback


def test_every_placeholder_is_in_the_prompts_it_guards() -> None:
    from app.grading import criteria

    prompts = criteria.JUDGEMENT_SHAPE + criteria.HOLISTIC_TASK
    assert all(placeholder in prompts for placeholder in PLACEHOLDERS)


def test_a_holistic_fallback_names_the_question_not_each_criterion(fake_llm, session) -> None:
    fake_llm.set_default("garbage")
    result = grade(session, {"mode": "holistic", "max_retries": 0, "fallback_positive": "MET"})
    assert result.outcome == Outcome.GRADED
    [flag] = result.flags
    assert flag.message.startswith(f"The grader's reply to the {QUESTIONS['holistic']}")
    assert "Thesis" not in flag.message and "every criterion" in flag.message


# --- length penalty -----------------------------------------------------------------------

ALL_MET = by_name(RUBRIC, Thesis=verdict("MET"), Dates=verdict("MET"), Copying=verdict("UNMET"))
SHORT_BUDGET = {"free_budget": 5, "max_cap": 15, "penalty_at_cap": 0.5, "exponent": 1}


def test_length_penalty_is_subtracted_after_aggregation(fake_llm, session) -> None:
    fake_llm.set_default(judge_by(ALL_MET))
    text = "one two three four five six seven eight nine ten"
    result = grade(session, {"length_penalty": SHORT_BUDGET}, text=text)

    assert result.provenance["normalized_score"] == 1.0
    assert result.provenance["length"] == 10
    assert result.provenance["penalty"] == pytest.approx(0.25)
    assert result.provenance["raw_score"] == 15  # the weighted sum is kept before the penalty
    assert result.score == pytest.approx(7.5)
    assert "### Length" in result.feedback and "2.50 points" in result.feedback


def test_length_penalty_never_takes_a_normalized_score_below_zero(fake_llm, session) -> None:
    replies = by_name(
        RUBRIC, Thesis=verdict("UNMET"), Dates=verdict("MET"), Copying=verdict("UNMET")
    )
    fake_llm.set_default(judge_by(replies))
    penalty = {**SHORT_BUDGET, "penalty_at_cap": 1.0}
    result = grade(session, {"length_penalty": penalty}, text="word " * 40)

    assert result.provenance["normalized_score"] == pytest.approx(1 / 3)
    assert result.provenance["penalty"] == 1.0
    assert result.score == 0.0


def test_raw_scores_take_absolute_penalties_and_may_go_negative(fake_llm, session) -> None:
    fake_llm.set_default(judge_by(ALL_MET))
    penalty = {**SHORT_BUDGET, "penalty_at_cap": 20.0}
    result = grade(session, {"normalize": False, "length_penalty": penalty}, text="w " * 40)
    assert result.score == -5.0


def test_output_only_penalty_ignores_long_reasoning(fake_llm, session) -> None:
    fake_llm.set_default(judge_by(ALL_MET))
    text = "<thinking>" + "reasoning " * 100 + "</thinking><output>short answer</output>"
    penalty = {**SHORT_BUDGET, "penalty_type": "OUTPUT_ONLY"}
    result = grade(session, {"length_penalty": penalty}, text=text)
    assert (result.provenance["length"], result.score) == (2, 10)

    penalty["penalty_type"] = "THINKING_ONLY"
    result = grade(session, {"length_penalty": penalty}, text=text)
    assert (result.provenance["length"], result.score) == (100, 5)


def test_length_is_measured_on_the_whole_submission_even_when_cut(fake_llm, session) -> None:
    fake_llm.set_default(judge_by(ALL_MET))
    penalty = {"free_budget": 100, "max_cap": 2000}
    result = grade(session, {"max_chars": 1000, "length_penalty": penalty}, text="word " * 1500)
    assert result.provenance["length"] == 1500


# --- parameters ---------------------------------------------------------------------------


def test_defaults() -> None:
    params = validate_params(Criteria(), {})
    assert params.mode == "per_criterion" and params.normalize is True
    assert params.max_retries == 2 and params.temperature == 0.1
    assert params.fallback_positive is None and params.fallback_negative is None
    assert params.length_penalty is None


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"judge": "gpt"}, "judge: is not a setting of this strategy"),
        ({"mode": "vibes"}, "mode: Input should be 'per_criterion', 'one_shot' or 'holistic'"),
        ({"max_retries": 9}, "max_retries: Input should be less than or equal to 5"),
        ({"temperature": 1.5}, "temperature: Input should be less than or equal to 1"),
        ({"fallback_positive": "maybe"}, "fallback_positive: Input should be 'MET' or 'UNMET'"),
        (
            {"length_penalty": {"free_budget": 500, "max_cap": 100}},
            "length_penalty: Value error, max_cap must be larger than free_budget",
        ),
        (
            {"length_penalty": {"count_fn": "len"}},
            "length_penalty.count_fn: is not a setting of this strategy",
        ),
    ],
)
def test_bad_params_are_named(settings: dict, message: str) -> None:
    with pytest.raises(InvalidParams) as caught:
        validate_params(Criteria(), settings)
    assert message in str(caught.value)


def test_schema_documents_every_setting() -> None:
    schema = Criteria.Params.model_json_schema()
    assert all(field.get("description") for field in schema["properties"].values())
