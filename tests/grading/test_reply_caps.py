"""Every model call is capped (app.llm.session.reply_cap), and a reply cut at its cap is
recorded and never graded as if it were whole: each strategy that calls a model, through the
runner, against the fake server, which stops at ``max_tokens`` as a real one does."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from app.grading import runner
from app.grading.base import Outcome
from app.grading.criteria import HOLISTIC_TOKENS, VERDICT_TOKENS
from app.grading.ensemble import DEFAULT_CATEGORIES, run_tokens
from app.grading.pipeline import step_tokens
from app.grading.rubric import parse_rubric
from app.grading.rubric_eval import reply_tokens
from app.grading.tree.ai import ANSWER_TOKENS
from app.llm.session import LLMSession, llm_session
from tests.documents import ESSAY

RUBRIC = parse_rubric(
    [
        {"name": "Accuracy", "requirement": "Explains photosynthesis correctly.", "weight": 10},
        {"name": "Detail", "requirement": "Mentions the Calvin cycle.", "weight": 5},
        {"name": "Copying", "requirement": "Copies text without citing it.", "weight": -3},
    ]
)
CATEGORIES = ["Syntax & Compilation", "Logic & Correctness", "Output & Functionality",
              "Style & Documentation"]  # fmt: skip
AI_TREE = {
    "base": {
        "children": [
            {"name": "thesis", "test": {"kind": "ai", "question": "Is the thesis clear?",
                                        "answer": "pass_fail"}},
            {"name": "cycle", "test": {"kind": "ai", "question": "Is the Calvin cycle named?",
                                       "answer": "pass_fail"}},
        ]
    }
}  # fmt: skip
#: Far longer than any cap: what a small model rambling on would write.
RAMBLE = " ".join(["The student explains the light reactions and then goes on."] * 300)


@dataclass(frozen=True)
class Strategy:
    """A strategy's settings, its caps in the order its calls are made, a whole reply and
    one that runs far past every cap."""

    plugin: str
    params: dict[str, Any]
    caps: list[int]
    reply: Callable[[dict], str]
    ramble: Callable[[dict], str]
    rubric: Any = None
    filename: str = "essay.txt"
    own_cap: bool = False  # the activity may set its own reply cap (max_tokens)
    extra: dict[str, Any] = field(default_factory=dict)


def _always(text: str) -> Callable[[dict], str]:
    return lambda _body: text


#: A passage of ESSAY: the points it backs count (app.grading.grounding).
PASSAGE = "converts light energy into chemical energy"


def _verdict(reason: str) -> str:
    return json.dumps({"verdict": "MET", "reason": reason, "evidence": PASSAGE})


def _one_shot(reason: str) -> str:
    return json.dumps({f"C{n}": json.loads(_verdict(reason)) for n in (1, 2, 3)})


def _categories(issue: str) -> str:
    evidence = dict.fromkeys(CATEGORIES, PASSAGE)
    categories = dict.fromkeys(CATEGORIES, 20)
    return json.dumps({"categories": categories, "evidence": evidence, "issues": [issue]})


def _answers(reason: str) -> Callable[[dict], str]:
    """The tree's batched call asks q1 and q2; asked one by one, each is q1."""
    quote = "the Calvin cycle fixes carbon dioxide into sugars"  # a passage of ESSAY
    return lambda _body: json.dumps(
        {q: {"pass": True, "reason": reason, "quote": quote} for q in ("q1", "q2")}
    )


PROSE = "Clear and accurate.\n\nFinal score: 7/10"
#: A prose reply whose early lines hold a score too: cut before its final line, what is left
#: would read as 7/10 although the model had not finished (and might end elsewhere).
PROSE_RAMBLE = "Score: 7/10\n\n" + RAMBLE + "\n\nFinal score: 4/10"
FINAL_JSON = json.dumps({"score": 7, "max_score": 10, "feedback": "Clear and accurate."})

STRATEGIES = {
    "rubric_eval": Strategy(
        "rubric_eval",
        {},
        [reply_tokens(RUBRIC)],
        _always(PROSE),
        _always(PROSE_RAMBLE),
        rubric=RUBRIC,
        own_cap=True,
    ),
    "per_criterion": Strategy(
        "criteria",
        {"mode": "per_criterion"},
        [VERDICT_TOKENS] * 3,
        _always(_verdict("Correct.")),
        _always(_verdict(RAMBLE)),
        rubric=RUBRIC,
    ),
    "one_shot": Strategy(
        "criteria",
        {"mode": "one_shot"},
        [VERDICT_TOKENS * 3],
        _always(_one_shot("Correct.")),
        _always(_one_shot(RAMBLE)),
        rubric=RUBRIC,
    ),
    "holistic": Strategy(
        "criteria",
        {"mode": "holistic"},
        [HOLISTIC_TOKENS],
        _always(json.dumps({"score": 70, "explanation": "Good."})),
        _always(json.dumps({"explanation": RAMBLE, "score": 70})),
        rubric=RUBRIC,
    ),
    "pipeline": Strategy(
        "pipeline",
        {"summary": True, "analysis": True},
        [step_tokens(step, RUBRIC) for step in ("summary", "analysis", "final")],
        _always(FINAL_JSON),
        _always(PROSE_RAMBLE),
        rubric=RUBRIC,
        own_cap=True,
    ),
    "ensemble": Strategy(
        "ensemble",
        {"models": ["g", "e"], "reverse": True},
        [run_tokens(DEFAULT_CATEGORIES)] * 4,
        _always(_categories("No input check.")),
        _always(_categories(RAMBLE)),
        filename="SumCalculator.java",
    ),
    "criteria_tree": Strategy(
        "criteria_tree",
        {"tree": AI_TREE},
        [ANSWER_TOKENS * 3],
        _answers("Yes."),
        _answers(RAMBLE),
    ),
}


def _config(base_url: str, max_tokens: int = 0) -> dict[str, Any]:
    return {
        "EVALUAITOR_LLM_BASE_URL": base_url,
        "EVALUAITOR_LLM_MODEL": "fake-model",
        "EVALUAITOR_LLM_BACKOFF_BASE": 0.01,
        "EVALUAITOR_LLM_MAX_RETRIES": 0,
        "EVALUAITOR_LLM_MAX_IN_FLIGHT": 8,
        "EVALUAITOR_LLM_CONCURRENCY": 8,
        "EVALUAITOR_LLM_CACHE_MAX_MB": 10,
        "EVALUAITOR_LLM_CACHE_MAX_DAYS": 1,
        "EVALUAITOR_LLM_MAX_TOKENS": max_tokens,
    }


@pytest.fixture
def session_with(fake_llm) -> Iterator[Callable[..., LLMSession]]:
    """A session made from settings as a worker makes it, EVALUAITOR_LLM_MAX_TOKENS given."""
    sessions = []

    def make(max_tokens: int = 0) -> LLMSession:
        context = llm_session(_config(fake_llm.url, max_tokens), cache_scope="caps")
        sessions.append(context)
        return context.__enter__()

    yield make
    for context in sessions:
        context.__exit__(None, None, None)


def _grade(strategy: Strategy, session: LLMSession, **params: Any):
    job = runner.Job.for_text(
        strategy.plugin,
        ESSAY,
        strategy.filename,
        "text",
        params=strategy.params | params,
        max_score=10,
        instructions="Explain photosynthesis.",
        rubric=strategy.rubric,
        model="fake-model",
    )
    return runner.grade(job, session, lambda *_: None)


def _caps(fake_llm) -> list[Any]:
    return sorted(body.get("max_tokens") for body in fake_llm.requests)


def test_a_reply_that_lists_the_criteria_has_room_for_each():
    """rubric_eval's and the pipeline's final reply may give a line per criterion: their cap
    grows with the rubric (ten criteria would not fit in three criteria's cap)."""
    assert (
        reply_tokens(RUBRIC)
        == reply_tokens(None) + 3 * (reply_tokens(RUBRIC) - reply_tokens(None)) // 3
    )
    assert reply_tokens(RUBRIC) > reply_tokens(None)
    assert step_tokens("final", RUBRIC) > step_tokens("final", None)
    assert step_tokens("summary", RUBRIC) == step_tokens("summary", None)


@pytest.mark.parametrize("name", STRATEGIES)
def test_every_call_asks_for_a_reply_of_its_own_size(fake_llm, session_with, name):
    strategy = STRATEGIES[name]
    fake_llm.set_default(strategy.reply)
    result = _grade(strategy, session_with())
    assert result.outcome == Outcome.GRADED, result.error
    assert all(type(body["max_tokens"]) is int for body in fake_llm.requests)
    assert _caps(fake_llm) == sorted(strategy.caps)
    assert result.provenance["truncated_replies"] == 0
    assert {c["finish_reason"] for c in result.provenance["calls"]} == {"stop"}


@pytest.mark.parametrize("name", STRATEGIES)
def test_the_administrators_cap_replaces_every_built_in_one(fake_llm, session_with, name):
    """EVALUAITOR_LLM_MAX_TOKENS: a reasoning model thinks before it answers and needs more."""
    strategy = STRATEGIES[name]
    fake_llm.set_default(strategy.reply)
    _grade(strategy, session_with(max_tokens=4321))
    assert _caps(fake_llm) == [4321] * len(strategy.caps)


@pytest.mark.parametrize("name", [n for n, s in STRATEGIES.items() if s.own_cap])
def test_the_activitys_own_cap_wins_over_the_administrators(fake_llm, session_with, name):
    strategy = STRATEGIES[name]
    fake_llm.set_default(strategy.reply)
    _grade(strategy, session_with(max_tokens=4321), max_tokens=222)
    assert _caps(fake_llm) == [222] * len(strategy.caps)


@pytest.mark.parametrize("name", STRATEGIES)
def test_a_reply_cut_at_its_cap_is_recorded_and_never_graded_as_if_whole(
    fake_llm, session_with, name
):
    """Every reply runs past its cap: each call says so, and the submission waits for a
    teacher with the reason, without a score read from what was cut short."""
    strategy = STRATEGIES[name]
    fake_llm.set_default(strategy.ramble)
    result = _grade(strategy, session_with())
    calls = result.provenance["calls"]
    assert calls and all(c["truncated"] and c["finish_reason"] == "length" for c in calls)
    assert result.provenance["truncated_replies"] == len(calls) == len(fake_llm.requests)
    assert result.outcome == Outcome.NEEDS_REVIEW
    assert result.score is None
    assert result.error
