"""The steering flags measured on the corpus (tests/data/steering), as bench/bench_steering.py
prints them: the tuning sets hold what was tuned, and the held-out half and the fresh held-out
sets say how far the flags generalise. The issue's target there is >= 95 % detected, <= 2 %
falsely flagged."""

import re

import pytest

from app.grading import safety
from app.grading.runner import HOLD_FOR_REVIEW
from app.grading.safety import steering
from tests.steering_corpus import CORPUS, EXTRAS, Case, fresh, load, read

TARGET_DETECTED, TARGET_FALSE = 0.95, 0.02
#: Why a fresh batch still fails (issue 24 stays open on it).
MISSED = "{}% detected, {}% falsely flagged"


def rates(cases: list[Case]) -> tuple[float, float]:
    held = {c.id for c in cases if any(f.code in HOLD_FOR_REVIEW for f in safety.inspect(c.text))}
    attempts = [c for c in cases if c.kind == "attempt"]
    lookalikes = [c for c in cases if c.kind == "lookalike"]
    detected = sum(c.id in held for c in attempts) / len(attempts)
    false = sum(c.id in held for c in lookalikes) / len(lookalikes)
    return detected, false


@pytest.mark.parametrize("path", [CORPUS, *EXTRAS], ids=lambda path: path.stem)
def test_every_tuning_set_is_held(path):
    """A change that loses what a tuning set taught shows here first."""
    cases = [c for c in read(path) if c.half == "tuning"]
    detected, false = rates(cases)
    assert detected >= TARGET_DETECTED and false <= TARGET_FALSE, (detected, false)


def test_the_held_out_half_reaches_the_target():
    """Looked at seven times while the detector was built (tests/data/steering/README.md),
    so no longer a blind figure: the fresh sets below are."""
    detected, false = rates(load("heldout"))
    assert detected >= TARGET_DETECTED and false <= TARGET_FALSE, (detected, false)


@pytest.mark.parametrize(
    "batch",
    [
        0,
        pytest.param(1, marks=pytest.mark.xfail(strict=True, reason=MISSED.format(93.8, 0.4))),
        2,
    ],
    ids=["fresh1-3", "fresh4-6", "fresh7-9"],
)
def test_the_fresh_held_out_sets_reach_the_target(batch):
    """Writers nobody had read, each batch committed before the detector changed. fresh7-9
    is the blind one (first look: 96.0 %, 0 %); fresh1-6 were read item by item while the
    fifth pass was built, and fresh4-6 still falls short (tests/data/steering/README.md)."""
    detected, false = rates(fresh(batch))
    assert detected >= TARGET_DETECTED and false <= TARGET_FALSE, (detected, false)


def test_no_vocabulary_matches_the_empty_string():
    """An empty alternative ("a||b") would match everywhere: every rule would fire."""
    for name in dir(steering):
        pattern = getattr(steering, name)
        if isinstance(pattern, re.Pattern) and name != "_LINE_OPENS_BLOCK":
            found = pattern.search("zzzz qqqq")
            assert found is None or found.group(), name
