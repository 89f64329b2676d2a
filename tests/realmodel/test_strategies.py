"""Every strategy and mode, on good, weak, off-topic and Spanish work, against a real server.

A 135M model cannot grade well; these tests hold what must be true whatever it answers:
nothing crashes; a grading ends, graded or sent to review with a reason, within a bound; a
score exists only on the scale asked, and only where the replies state it; junk (a dump of
JSON or of a Python object, the prompt's own template) never becomes a score or feedback; the
tokens recorded are the server's own ``usage``; every request caps its reply.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass

import pytest
from redis import Redis

from app import create_app
from app.grading import runner
from app.grading.base import GradingResult, Outcome
from app.grading.rubric import parse_rubric
from tests.realmodel.conftest import ModelServer
from tests.realmodel.recorder import Exchange, Recorder
from tests.realmodel.works import INSTRUCTIONS, MAX_SCORE, RUBRIC, WORKS, strategies

#: Seconds within which any grading ends: every call is capped, and a reply takes seconds.
BOUND_SECONDS = 600
#: The most any call may ask for: a cap that fits an answer, not the model's whole context.
LARGEST_CAP = 2000
#: Shapes that are junk as feedback: a Python dict or list shown as text, a JSON dump.
PYTHON_REPR = re.compile(r"\{'\w+': |\[\{'|\{\"\w+\": ")
#: Placeholders of the prompts' format examples (a reply that echoes them is no answer).
PLACEHOLDERS = ("one or two sentences", "<the passage", "<your feedback", "...")

STRATEGY_IDS = list(strategies("m", "n"))


@dataclass(frozen=True)
class Graded:
    result: GradingResult
    exchanges: list[Exchange]
    seconds: float


@pytest.fixture(scope="module")
def config(model_server: ModelServer, relay: Recorder, redis_server, tmp_path_factory):
    folder = tmp_path_factory.mktemp("realmodel")
    app = create_app(
        {
            "TESTING": True,
            "DATABASE_URL": f"sqlite:///{folder / 'never-created.db'}",
            "REDIS_URL": redis_server.url,
            "EVALUAITOR_LLM_BASE_URL": relay.url,
            "EVALUAITOR_LLM_MODEL": model_server.model,
            "EVALUAITOR_LLM_API_KEY": None,  # the relay holds the server's key, if any
            "EVALUAITOR_LLM_CACHE_DIR": None,  # every call reaches the server: usage compares
            "EVALUAITOR_MASK_PII": 1,
        }
    )
    return app.config


def grade(config, relay: Recorder, model_server: ModelServer, strategy: str, work: str) -> Graded:
    plugin, params = strategies(model_server.model, model_server.second_model)[strategy]
    job = runner.Job.for_text(
        plugin,
        WORKS[work],
        "essay.txt",
        "text",
        params=params,
        max_score=MAX_SCORE,
        instructions=INSTRUCTIONS,
        rubric=parse_rubric(RUBRIC),
        model=model_server.model,
    )
    mark = len(relay.exchanges)
    started = time.monotonic()
    result = runner.grade_with_model(
        job,
        config,
        lambda *_: None,
        tenant_folder="local",
        redis=Redis.from_url(config["REDIS_URL"]),
    )
    return Graded(result, relay.since(mark), time.monotonic() - started)


@pytest.mark.parametrize("work", list(WORKS))
@pytest.mark.parametrize("strategy", STRATEGY_IDS)
def test_grading_ends_sound_whatever_the_model_answers(
    config, relay, model_server, strategy, work
) -> None:
    graded = grade(config, relay, model_server, strategy, work)
    result = graded.result

    assert graded.seconds < BOUND_SECONDS
    assert result.outcome in (Outcome.GRADED, Outcome.NEEDS_REVIEW)
    if result.outcome == Outcome.NEEDS_REVIEW:
        assert result.error and not PYTHON_REPR.search(result.error), result.error
    else:
        assert result.score is not None and result.scale == MAX_SCORE
        assert 0 <= result.score <= MAX_SCORE
        assert not _junk(result.feedback), result.feedback
        for criterion in result.criteria:
            assert not _junk(criterion.reason), criterion
            assert criterion.score is None or -criterion.max <= criterion.score <= criterion.max
            if criterion.score is None:
                assert criterion.verdict, criterion  # no score without a stated verdict
    assert result.score is None or result.raw_replies, "a score nobody stated"

    calls = result.provenance["calls"]
    # Each call is one request, or more when one timed out and was sent again.
    assert sum(c["attempts"] for c in calls) == len(graded.exchanges) > 0
    answered = sorted(
        (e.usage["prompt_tokens"], e.usage["completion_tokens"]) for e in graded.exchanges
    )
    recorded = sorted((c["prompt_tokens"], c["completion_tokens"]) for c in calls)
    assert all(r in answered for r in recorded), (recorded, answered)  # the server's own counts
    assert result.provenance["prompt_tokens"] == sum(p for p, _ in recorded)
    assert result.provenance["completion_tokens"] == sum(c for _, c in recorded)
    for exchange in graded.exchanges:
        cap = exchange.request.get("max_tokens")
        assert isinstance(cap, int) and 0 < cap <= LARGEST_CAP, cap
        assert exchange.usage["completion_tokens"] <= cap
    cut = [c for c in calls if c["finish_reason"] == "length"]
    assert result.provenance["truncated_replies"] == len(cut)
    assert all(c["truncated"] for c in cut)


def _junk(text: str) -> bool:
    """Feedback no person wrote: a data structure shown as text, or the prompt's template."""
    stripped = text.strip()
    return (
        stripped.startswith(("{", "["))
        or bool(PYTHON_REPR.search(stripped))
        or any(stripped.lower() == p or stripped.lower().startswith(p) for p in PLACEHOLDERS)
    )
