"""Every strategy and mode, on good, weak, off-topic and Spanish work, against a real server.

A 135M model cannot grade well; these tests hold what must be true whatever it answers:
nothing crashes; a grading ends, graded or sent to review with a reason, within a bound; a
score exists only on the scale asked, and only where the replies state it; junk (a dump of
JSON or of a Python object, the prompt's own template) never becomes a score or feedback; the
tokens recorded are the server's own ``usage``; every request caps its reply.
"""

from __future__ import annotations

import re

import pytest

from app.grading import criteria, ensemble, pipeline_prompts
from app.grading.base import Outcome
from app.grading.grounding import Grounds, Text, Why
from app.grading.replies import echoed
from app.grading.tree import ai
from tests.realmodel.recorder import Recorder
from tests.realmodel.works import MAX_SCORE, WORKS, Server, app_config, grade, strategies

#: Seconds within which any grading ends: every call is capped, and a reply takes seconds.
BOUND_SECONDS = 600
#: The most any call may ask for: a cap that fits an answer, not the model's whole context.
LARGEST_CAP = 2000
#: Shapes that are junk as feedback: a Python dict or list shown as text, a JSON dump.
PYTHON_REPR = re.compile(r"\{'\w+': |\[\{'|\{\"\w+\": ")
#: The prompts' format examples: a reply that echoes them is no answer.
PLACEHOLDERS = (
    *criteria.PLACEHOLDERS,
    *ensemble.PLACEHOLDERS,
    *pipeline_prompts.PLACEHOLDERS,
    *ai.PLACEHOLDERS,
)

STRATEGY_IDS = list(strategies("m", "n"))


@pytest.fixture(scope="module")
def config(model_server: Server, relay: Recorder, redis_server, tmp_path_factory):
    return app_config(model_server, relay, redis_server.url, tmp_path_factory.mktemp("realmodel"))


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


#: The strategies that let a model give a criterion points (not holistic).
GROUNDED = [
    "rubric_eval",
    "criteria-per_criterion",
    "criteria-one_shot",
    "pipeline",
    "criteria_tree",
    "ensemble",
]


@pytest.mark.parametrize("work", ["good", "off_topic"])
@pytest.mark.parametrize("strategy", GROUNDED)
def test_every_point_a_real_model_gave_is_counted_only_with_a_quote_from_the_work(
    config, relay, model_server, strategy, work
) -> None:
    """A 135M model invents quotes and quotes the rubric back: whatever it quoted, the points
    counted are those whose quote is a passage of the work, checked again here from the raw
    work; the rest are named in the review reason."""
    result = grade(config, relay, model_server, strategy, work).result
    judged = [c for c in result.criteria if c.model_judged]
    checked = {q["criterion"]: q for q in result.provenance.get("quotes", [])}
    assert set(checked) == {c.name for c in judged}
    in_work = Grounds(Text(WORKS[work]), Text())
    for criterion in judged:
        assert criterion.evidence_verified is checked[criterion.name]["verified"]
        if (criterion.score or 0) > 0:
            assert criterion.evidence_verified, criterion
            assert in_work.check(criterion.evidence) == Why.VERIFIED, criterion
        if "points_dropped" in checked[criterion.name]:
            # Named in the review reason, or in a flag when the grade was held already.
            flags = [f.message for f in result.flags if f.code == "UngroundedEvidence"]
            assert result.outcome == Outcome.NEEDS_REVIEW
            assert any(criterion.name in text for text in [result.error, *flags])
    if result.score is not None and judged and strategy.startswith("criteria-"):
        # The criteria strategy adds up what is left: the score is the verified points' share.
        counted = sum(c.score or 0 for c in result.criteria)
        assert result.score == pytest.approx(max(0, counted) / 10 * MAX_SCORE, abs=1e-6)


def _junk(text: str) -> bool:
    """Feedback no person wrote: a data structure shown as text, or the prompt's template."""
    stripped = text.strip()
    return (
        stripped.startswith(("{", "["))
        or bool(PYTHON_REPR.search(stripped))
        or echoed(stripped, PLACEHOLDERS) is not None
    )
