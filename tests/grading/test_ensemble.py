"""The ensemble's arithmetic (bands, swings, caps) and its calls, against a scripted server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.grading import registry, runner
from app.grading.base import GradingInput
from app.grading.consensus import half_up
from app.grading.ensemble import Ensemble
from app.llm.session import LLMSession

CODE = "public class SumCalculator { public static void main(String[] a) { } }"
CATEGORIES = ["Syntax & Compilation", "Logic & Correctness", "Output & Functionality",
              "Style & Documentation"]  # fmt: skip
#: A passage of CODE and of every program in tests/policy/java: the points it backs count
#: (app.grading.grounding).
QUOTE = "public static void main(String[]"
QUOTES = dict.fromkeys(CATEGORIES, QUOTE)


def scores(total: float, issues: list[str]) -> str:
    """A reply spreading ``total`` (of 100) evenly over the four 25-point categories, each
    with a real quote."""
    categories = {c: total / 4 for c in CATEGORIES}
    return json.dumps({"categories": categories, "evidence": QUOTES, "issues": issues})


def graders(table: dict[tuple[str, str], str]):
    """Answer by (model, framing); the reverse framing asks to start from full marks."""

    def answer(request: dict) -> str:
        framing = (
            "reverse" if "Start from full marks" in request["messages"][1]["content"] else "direct"
        )
        return table[(request["model"], framing)]

    return answer


def in_both_framings(g: str, e: str):
    """Graders g and e, each giving the same reply in both framings."""
    return graders({(model, framing): reply for model, reply in (("g", g), ("e", e))
                    for framing in ("direct", "reverse")})  # fmt: skip


def steady(g: float, e: float):
    """Graders g and e, each giving the same total in both framings and no issues."""
    return in_both_framings(scores(g, []), scores(e, []))


def grade(session: LLMSession, **params) -> object:
    plugin = Ensemble()
    job = GradingInput(
        text=CODE,
        filename="SumCalculator.java",
        instructions="Print the sum of 1..100.",
        max_score=10,
        params=registry.validate_params(plugin, {"models": ["g", "e"], **params}),
    )
    return plugin.grade(job, session, lambda *_: None)


@pytest.mark.parametrize(
    ("g", "e", "band", "score", "unstable"),
    [
        (80, 84, "agree", 8.2, False),  # |g-e| <= 5 -> rounded mean 82
        (80, 85, "agree", 8.3, False),  # 82.5 rounds half up, not to the even 82
        (80, 92, "disagree", 8.0, False),  # <= 15 -> the lower
        (60, 90, "unstable", 6.0, True),  # > 15 -> the lower, flagged
    ],
)
def test_agreement_bands(fake_llm, session, g, e, band, score, unstable):
    fake_llm.set_default(steady(g, e))
    result = grade(session)
    assert result.provenance["band"] == band
    assert result.score == pytest.approx(score)
    assert ("Instability" in {f.code for f in result.flags}) is unstable
    assert len(fake_llm.requests) == 4


def test_a_swinging_grader_is_trusted_less(fake_llm, session):
    fake_llm.set_default(graders({
        ("g", "direct"): scores(90, []), ("g", "reverse"): scores(70, []),
        ("e", "direct"): scores(72, []), ("e", "reverse"): scores(72, []),
    }))  # fmt: skip
    result = grade(session)
    assert result.provenance["model_totals"]["g"] == 70  # its lower run, not the mean 80
    assert "UnstableGrader" in {f.code for f in result.flags}
    assert result.provenance["band"] == "agree" and result.score == pytest.approx(7.1)


def test_without_reverse_each_model_is_asked_once(fake_llm, session):
    fake_llm.set_default(
        graders({("g", "direct"): scores(80, []), ("e", "direct"): scores(80, [])})
    )
    grade(session, reverse=False)
    assert sorted(r["model"] for r in fake_llm.requests) == ["e", "g"]


def test_feedback_puts_shared_issues_before_model_specific_ones(fake_llm, session):
    fake_llm.set_default(graders({
        ("g", "direct"): scores(80, ["No comments.", "Loop bound is 99."]),
        ("g", "reverse"): scores(80, []),
        ("e", "direct"): scores(80, ["no comments", "Variable names are unclear."]),
        ("e", "reverse"): scores(80, []),
    }))  # fmt: skip
    feedback = grade(session).feedback
    assert feedback.index("Both graders noted") < feedback.index("Noted only by g")
    assert feedback.count("comments") == 1  # deduplicated across graders
    assert "Loop bound is 99." in feedback and "Variable names are unclear." in feedback


def test_unreadable_graders_send_the_work_to_a_teacher(fake_llm, session):
    fake_llm.set_default("I would give it an 8.")
    result = grade(session)
    assert result.outcome.value == "needs_review" and result.score is None


def test_without_a_model_the_ensemble_says_grading_was_skipped():
    plugin = Ensemble()
    job = runner.Job.for_text(
        plugin="ensemble", text=CODE, filename="SumCalculator.java", kind="code",
        instructions="", max_score=10, params={"models": ["g", "e"]},
    )  # fmt: skip
    result = runner.grade(job, LLMSession(None), lambda *_: None)
    assert result.outcome.value == "needs_review"
    assert "Model grading was skipped" in result.feedback
    assert plugin.name == "ensemble"


def test_thresholds_are_checked():
    with pytest.raises(registry.InvalidParams, match="agree"):
        registry.validate_params(Ensemble(), {"models": ["g", "e"], "agree": 20, "disagree": 10})
    with pytest.raises(registry.InvalidParams, match="temperature"):
        registry.validate_params(Ensemble(), {"models": ["g", "e"], "temperature": 0.7})


JAVA = Path(__file__).parent.parent / "policy" / "java"


def java_job(name: str, **params) -> runner.Job:
    return runner.Job.for_text(
        plugin="ensemble",
        text=(JAVA / name).read_text(),
        filename="SumCalculator.java",
        kind="code",
        instructions="Print the sum of 1..100.",
        max_score=100,
        params={"models": ["g", "e"], "policy": "sumcalc", **params},
    )


def test_policy_caps_come_last_and_use_the_lower_grader(fake_llm, session):
    fake_llm.set_default(steady(80, 70))
    result = runner.grade(java_job("hardcoded_literal.java"), session, lambda *_: None)
    assert [(f.code, f.cap) for f in result.flags if f.cap] == [("HardcodedOnly", 25)]
    assert result.provenance["band"] == "policy"
    assert result.provenance["capped_from"] == 70  # min(g, e) first, then the cap
    assert result.score == 25
    assert result.feedback.startswith("### Must fix\n- **HardcodedOnly**")


def test_a_correct_program_is_not_capped(fake_llm, session):
    fake_llm.set_default(steady(92, 90))
    result = runner.grade(java_job("correct_for.java"), session, lambda *_: None)
    assert not [f for f in result.flags if f.cap]
    assert result.score == 91


def test_the_provenance_says_how_the_rules_knew_whether_it_compiles(fake_llm, session):
    """No teacher test ran the program, so the pack compiled it itself (or, on a server that
    cannot, checked the syntax only): the grade's provenance must say which."""
    fake_llm.set_default(steady(92, 90))
    result = runner.grade(java_job("correct_for.java"), session, lambda *_: None)
    check = result.provenance["policy_compile_check"]
    assert check.startswith(("compiled by the java compiler", "syntax only:")), check


def test_without_a_model_the_detectors_still_run():
    result = runner.grade(java_job("even_step.java"), LLMSession(None), lambda *_: None)
    assert "EvenOnly" in {f.code for f in result.flags}
    assert "Model grading was skipped" in result.feedback


def test_an_unknown_policy_pack_is_a_configuration_error():
    with pytest.raises(registry.InvalidParams, match="no policy pack named 'nope'"):
        registry.validate_params(Ensemble(), {"policy": "nope"})


SUM_TEST = [{"name": "prints the sum", "expected_stdout": "5050"}]


def test_the_judge_runs_first_and_feeds_rules_and_graders(fake_llm, session):
    fake_llm.set_default(steady(80, 80))
    result = runner.grade(
        java_job("hardcoded_literal.java", tests=SUM_TEST), session, lambda *_: None
    )
    assert result.provenance["judge"]["tests"][0]["status"] == "passed"
    hardcoded = next(f for f in result.flags if f.code == "HardcodedOnly")
    assert "program output" in hardcoded.message  # the judge's output confirmed it
    assert "1 of 1 tests passed" in fake_llm.requests[0]["messages"][1]["content"]
    assert result.score == 25 and "### Automatic tests" in result.feedback


def test_a_program_that_does_not_compile_is_capped_by_the_judge(fake_llm, session):
    fake_llm.set_default(steady(60, 60))
    result = runner.grade(java_job("compile_error.java", tests=SUM_TEST), session, lambda *_: None)
    assert ("CompileError", 25) in [(f.code, f.cap) for f in result.flags]
    assert result.score == 25


def critiquing(request: dict) -> str:
    """g grades 90, e 60 (only e notes the loop bound); in the critique both move closer and
    both cite the bound, g having read it in e's issues."""
    if "The other graders' grades" in request["messages"][1]["content"]:
        return scores(70 if request["model"] == "g" else 74, ["Loop bound."])
    return scores(90, []) if request["model"] == "g" else scores(60, ["Loop bound."])


def test_mutual_critique_shows_each_grader_the_others_and_can_count_the_revision(fake_llm, session):
    fake_llm.set_default(critiquing)
    result = grade(session, critique=True, critique_in_mean=True)
    critiques = [r for r in fake_llm.requests if "other graders" in r["messages"][1]["content"]]
    assert len(fake_llm.requests) == 6 and len(critiques) == 2
    g_prompt = next(r for r in critiques if r["model"] == "g")["messages"][1]["content"]
    assert (
        "- e: 60/100; issues: Loop bound." in g_prompt and "Your earlier grade: 90/100" in g_prompt
    )
    totals = result.provenance["model_totals"]
    assert totals["g"] == pytest.approx((90 + 90 + 70) / 3)
    assert totals["e"] == pytest.approx((60 + 60 + 74) / 3)


def test_the_critique_round_is_recorded_but_out_of_the_mean_by_default(fake_llm, session):
    fake_llm.set_default(critiquing)
    result = grade(session, critique=True)
    assert result.provenance["model_totals"] == {"g": 90, "e": 60}  # direct and reverse only
    revised = {
        r["model"]: r["total"] for r in result.provenance["runs"] if r["framing"] == "critique"
    }
    assert revised == {"g": 70, "e": 74}
    # g only repeated e's issue after reading it: that is not a second opinion
    assert "Both graders noted" not in result.feedback
    assert "### Noted only by e\n- Loop bound." in result.feedback


def test_an_activity_can_tune_or_switch_off_rules(fake_llm, session):
    fake_llm.set_default(steady(80, 80))
    tuned = runner.grade(
        java_job("hardcoded_literal.java", policy_caps={"HardcodedOnly": 40}), session, quiet
    )
    assert tuned.score == 40
    off = runner.grade(
        java_job("hardcoded_literal.java", policy_disabled=["HardcodedOnly"]), session, quiet
    )
    assert off.score == 80


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"policy": "sumcalc", "policy_caps": {"Nope": 10}}, "no rule Nope"),
        ({"policy": "sumcalc", "policy_caps": {"EvenOnly": 0}}, "percentages"),
        ({"policy_disabled": ["EvenOnly"]}, "need a policy pack"),
    ],
)
def test_rule_overrides_are_checked(params, message):
    with pytest.raises(registry.InvalidParams, match=message):
        registry.validate_params(Ensemble(), {"models": ["g", "e"], **params})


def quiet(*_: object) -> None:
    """A progress callback that ignores progress."""


@pytest.mark.parametrize(
    "params",
    [{}, {"models": []}, {"models": ["m"]}, {"models": ["m", " M "]}, {"models": ["a", "b", "a"]}],
    ids=["unset", "empty", "one", "same-twice", "one-repeated"],
)
def test_one_model_asked_twice_is_not_an_ensemble(params):
    with pytest.raises(registry.InvalidParams, match="models"):
        registry.validate_params(Ensemble(), params)


def test_a_stored_activity_with_one_model_is_refused_not_graded(fake_llm, session):
    """Settings saved before the rule (models unset: the activity's model twice) stop the job
    with the setting named; no model is asked, so no single-model grade comes out."""
    fake_llm.set_default(scores(80, []))
    for params in ({}, {"models": ["fake-model", "fake-model"]}):
        job = runner.Job.for_text(
            plugin="ensemble", text=CODE, filename="SumCalculator.java", kind="code",
            instructions="", max_score=10, params=params,
        )  # fmt: skip
        with pytest.raises(registry.InvalidParams, match="models"):
            runner.grade(job, session, quiet)
    assert fake_llm.requests == []


def test_a_grader_that_notes_nothing_leaves_no_consensus(fake_llm, session):
    fake_llm.set_default(graders({
        ("g", "direct"): scores(80, ["Loop bound is 99.", "No comments."]),
        ("g", "reverse"): scores(80, ["Loop bound is 99."]),
        ("e", "direct"): scores(80, []), ("e", "reverse"): scores(80, []),
    }))  # fmt: skip
    feedback = grade(session).feedback
    assert "Both graders noted" not in feedback
    assert "### Noted only by g\n- Loop bound is 99.\n- No comments." in feedback


def test_a_text_of_issues_is_read_one_issue_a_line(fake_llm, session):
    text = "- Loop bound is 99.\n\n2. No comments."
    fake_llm.set_default(reply(issues=text))
    result = grade(session)
    assert result.outcome.value == "graded"
    assert result.feedback.endswith("### Both graders noted\n- Loop bound is 99.\n- No comments.")


def reply(categories: object = None, issues: object = (), evidence: object = QUOTES) -> str:
    """A reply with four 20-point categories, each with a real quote, unless told otherwise."""
    given = {c: 20 for c in CATEGORIES} if categories is None else categories
    listed = list(issues) if issues == () else issues
    return json.dumps({"categories": given, "evidence": evidence, "issues": listed})


@pytest.mark.parametrize(
    ("bad", "problem"),
    [
        (reply(issues=5), "issues"),
        (reply(issues=[{"text": "Loop bound."}]), "issues"),
        (reply(issues=["Loop bound.", 3]), "issues"),
        (reply(categories={**{c: 20 for c in CATEGORIES}, CATEGORIES[0]: True}), "Syntax"),
        (reply(categories={**{c: 20 for c in CATEGORIES}, CATEGORIES[0]: [20]}), "Syntax"),
        (reply(categories={**{c: 20 for c in CATEGORIES}, CATEGORIES[0]: "NaN"}), "Syntax"),
        (reply(categories=[20, 20, 20, 20]), "categories"),
        (json.dumps([{"categories": {c: 20 for c in CATEGORIES}}]), "object"),
        (reply(issues=["Loop bound is 99.", "..."]), "copies the example of the prompt"),
        (reply(issues="- <category>"), "copies the example of the prompt"),
        (reply(categories={**{c: 20 for c in CATEGORIES}, CATEGORIES[0]: 0.8}), "fraction"),
    ],
    ids=[
        "number",
        "objects",
        "mixed",
        "boolean",
        "list",
        "nan",
        "list-of-scores",
        "array",
        "ellipsis-issue",
        "category-placeholder",
        "fraction",
    ],  # fmt: skip
)
def test_a_reply_of_the_wrong_shape_counts_as_no_grade(fake_llm, session, bad, problem):
    fake_llm.set_default(in_both_framings(bad, reply()))
    result = grade(session)
    assert result.outcome.value == "needs_review" and result.score is None
    problems = [r.get("problem", "") for r in result.provenance["runs"] if r["model"] == "g"]
    assert all(problem in text for text in problems)


def test_category_names_are_matched_by_their_words(fake_llm, session):
    fake_llm.set_default(
        reply(categories={c.upper().replace(" & ", " / "): 20 for c in CATEGORIES})
    )
    result = grade(session)
    assert result.outcome.value == "graded" and result.score == 8


def test_the_feedback_shows_each_categorys_points_and_deductions(fake_llm, session):
    low = {"Syntax & Compilation": 25, "Logic & Correctness": 15,
           "Output & Functionality": 20, "Style & Documentation": 22.5}  # fmt: skip
    high = {**low, "Logic & Correctness": 20}
    fake_llm.set_default(in_both_framings(reply(low), reply(high)))
    result = grade(session)  # 82.5 and 87.5: within 5 points, so the categories' means
    assert result.score == pytest.approx(8.5)
    assert (
        "### Points by category\n"
        "- Syntax & Compilation: 25/25\n"
        "- Logic & Correctness: 17.5/25 (-7.5)\n"
        "- Output & Functionality: 20/25 (-5)\n"
        "- Style & Documentation: 22.5/25 (-2.5)"
    ) in result.feedback
    assert [(c.name, c.score, c.max) for c in result.criteria][1] == (
        "Logic & Correctness",
        17.5,
        25,
    )


def test_a_capped_grade_says_which_cap_and_shows_the_lower_graders_categories(fake_llm, session):
    fake_llm.set_default(steady(80, 60))
    result = runner.grade(java_job("hardcoded_literal.java"), session, quiet)
    assert "These rules limit the grade to 25% of the maximum." in result.feedback
    assert "- Logic & Correctness: 15/25 (-10)" in result.feedback


def test_each_graders_direct_and_reverse_delta_is_in_the_provenance(fake_llm, session):
    fake_llm.set_default(graders({
        ("g", "direct"): scores(90, []), ("g", "reverse"): scores(80, []),
        ("e", "direct"): scores(84, []), ("e", "reverse"): scores(86, []),
    }))  # fmt: skip
    assert grade(session).provenance["deltas"] == {"g": 10, "e": -2}
    assert grade(session, reverse=False).provenance["deltas"] == {"g": None, "e": None}


@pytest.mark.parametrize(
    ("value", "digits", "rounded"),
    [(2.5, 0, 3), (82.5, 0, 83), (3.5, 0, 4), (82.49999999999999, 0, 83), (82.4, 0, 82),
     (2.675, 2, 2.68), (17.45, 1, 17.5)],
)  # fmt: skip
def test_halves_round_up(value, digits, rounded):
    assert half_up(value, digits) == rounded


def test_every_placeholder_is_in_every_framing():
    from app.grading.ensemble import CRITIQUE, DIRECT, PLACEHOLDERS, REVERSE

    for framing in (DIRECT, REVERSE, CRITIQUE):
        assert all(p in framing.replace("{{", "{") for p in PLACEHOLDERS)


# --- grounding: a category's points need a passage of the work (app.grading.grounding) -------

INVENTED = "for (int i = 1; i <= 100; i++) sum += i;"  # not in CODE
LOGIC = "Logic & Correctness"


def quoted(total: float, **quotes: str) -> str:
    """``total`` spread over the categories like :func:`scores`, with the real quote for each
    category unless ``quotes`` (by the category's first word) says otherwise."""
    evidence = {c: quotes.get(c.split()[0].lower(), QUOTE) for c in CATEGORIES}
    categories = {c: total / 4 for c in CATEGORIES}
    return json.dumps({"categories": categories, "evidence": evidence, "issues": []})


def through_runner(session: LLMSession, text: str = CODE, **params) -> object:
    job = runner.Job.for_text(
        plugin="ensemble", text=text, filename="SumCalculator.java", kind="code",
        instructions="Print the sum of 1..100.", max_score=10,
        params={"models": ["g", "e"], **params},
    )  # fmt: skip
    return runner.grade(job, session, quiet)


def test_categories_with_real_quotes_are_graded(fake_llm, session):
    fake_llm.set_default(steady(80, 84))
    result = through_runner(session)
    assert result.outcome.value == "graded" and result.score == pytest.approx(8.2)
    assert all(c.model_judged and c.evidence_verified for c in result.criteria)
    assert [q["criterion"] for q in result.provenance["quotes"]] == CATEGORIES
    assert all(q["why"] == "verified" for q in result.provenance["quotes"])
    for request in fake_llm.requests:  # every framing asks for the passage, copied exactly
        assert "copied exactly" in request["messages"][0]["content"]
        assert '"evidence": {"<category>"' in request["messages"][1]["content"]


@pytest.mark.parametrize(
    ("quote", "why"),
    [
        (INVENTED, "not found in the work"),
        (LOGIC, "the assignment's own wording"),  # the category it is asked about
        ("Print the sum of 1..100.", "the assignment's own wording"),  # the instructions
    ],
    ids=["invented", "category", "instructions"],
)
def test_an_unfounded_category_loses_its_points_and_the_grade_waits(fake_llm, session, quote, why):
    """g 80 and e 84 agree: the categories' means are 20.5 each, 82 in all; Logic's 20.5 go
    and the 61.5 left round half up, as the agreement band rounds, to 62."""
    fake_llm.set_default(in_both_framings(quoted(80, logic=quote), quoted(84, logic=quote)))
    result = through_runner(session)
    assert result.outcome.value == "needs_review"
    assert result.score == pytest.approx(6.2)
    assert result.provenance["score_before_grounding"] == pytest.approx(8.2)
    assert LOGIC in result.error and "without a passage of the work" in result.error
    assert not any(c in result.error for c in CATEGORIES if c != LOGIC)
    logic = next(q for q in result.provenance["quotes"] if q["criterion"] == LOGIC)
    assert (logic["verified"], logic["why"], logic["points_dropped"]) == (False, why, 20.5)
    assert [c.score for c in result.criteria] == [20.5, 0, 20.5, 20.5]
    assert (
        f"- {LOGIC}: 0/25 (-25); 20.5 points given were not counted: no passage of the work "
        "was quoted for them"
    ) in result.feedback
    assert "- Syntax & Compilation: 20.5/25 (-4.5)\n" in result.feedback


def test_a_reply_without_quotes_is_read_but_its_points_do_not_count(fake_llm, session):
    """The reply shape before quotes were asked for still reads; its points are no evidence."""
    fake_llm.set_default(json.dumps({"categories": dict.fromkeys(CATEGORIES, 20), "issues": []}))
    result = through_runner(session)
    assert result.outcome.value == "needs_review" and result.score == 0
    assert all(q["why"] == "no quote" for q in result.provenance["quotes"])
    assert result.provenance["score_before_grounding"] == 8


def test_one_real_quote_among_the_runs_a_grade_is_made_of_backs_the_category(fake_llm, session):
    """In the agreement band the grade is every grader's: e's real quote backs Logic though
    g invented its own, and the criterion shows e's."""
    fake_llm.set_default(in_both_framings(quoted(80, logic=INVENTED), quoted(84)))
    result = through_runner(session)
    assert result.outcome.value == "graded" and result.score == pytest.approx(8.2)
    assert next(c for c in result.criteria if c.name == LOGIC).evidence == QUOTE


def test_a_quote_of_a_grader_the_grade_is_not_made_of_backs_nothing(fake_llm, session):
    """Beyond the agreement band the lower grader's grade stands, so only its quotes count:
    g's real quote cannot back e's invented one. e's 72 lose Logic's 18: 54."""
    fake_llm.set_default(in_both_framings(quoted(84), quoted(72, logic=INVENTED)))
    result = through_runner(session)
    assert result.provenance["band"] == "disagree"
    assert result.outcome.value == "needs_review" and result.score == pytest.approx(5.4)
    assert next(c for c in result.criteria if c.name == LOGIC).evidence == INVENTED


@pytest.mark.parametrize(
    ("given", "dropped", "score", "capped_from"),
    [(80, ("logic",), 25, 60), (40, ("logic", "output"), 20, None)],
    ids=["still-above-the-cap", "below-the-cap"],
)
def test_the_policy_cap_applies_to_the_total_left(fake_llm, session, given, dropped, score,
                                                  capped_from):  # fmt: skip
    """Hardcoded output caps the grade at 25 of 100, after grounding recomputed the total."""
    invented = dict.fromkeys(dropped, INVENTED)
    fake_llm.set_default(in_both_framings(quoted(given, **invented), quoted(given, **invented)))
    result = runner.grade(java_job("hardcoded_literal.java"), session, quiet)
    assert result.provenance["band"] == "policy" and result.outcome.value == "needs_review"
    assert result.provenance["score_before_grounding"] == given
    assert result.score == score
    assert result.provenance.get("capped_from") == capped_from


@pytest.mark.parametrize(
    ("evidence", "problem"),
    [
        (["public static void main"], "'evidence' is not an object"),
        ({CATEGORIES[0]: 5}, "not text"),
        ({CATEGORIES[0]: [["public static"]]}, "not a list of texts"),
        ({CATEGORIES[0]: "the passage of the work that earns these points, copied exactly"},
         "copies the example of the prompt"),
    ],
    ids=["list", "number", "nested-list", "copied-example"],
)  # fmt: skip
def test_evidence_of_the_wrong_shape_counts_as_no_grade(fake_llm, session, evidence, problem):
    fake_llm.set_default(in_both_framings(reply(evidence=evidence), reply()))
    result = grade(session)
    assert result.outcome.value == "needs_review" and result.score is None
    problems = [r["problem"] for r in result.provenance["runs"] if r["model"] == "g"]
    assert problems and all(problem in text for text in problems)


def test_several_passages_for_one_category_are_each_a_candidate(fake_llm, session):
    evidence = {**QUOTES, LOGIC: [INVENTED, "String[] a) { } }"]}
    fake_llm.set_default(reply(evidence=evidence))
    result = through_runner(session)
    assert result.outcome.value == "graded", result.error
    assert next(c for c in result.criteria if c.name == LOGIC).evidence == "String[] a) { } }"
