"""How well the steering flags hold on attempts they were not tuned to.

Runs the flags the runner holds grades for (app.grading.runner.HOLD_FOR_REVIEW) over the
held-out half of the corpus in tests/data/steering/ and prints the share of attempts flagged
and of look-alikes flagged, by language and by tactic; then the same for the fresh held-out
sets (fresh*.jsonl, written blind after the held-out half had been looked at six times), each
and by batch; then the two shares for each tuning set, then the time the checks
take on a long text. Only counts are printed for the held-out
half, so that whoever tunes the detector stays blind to its items; ``--misses`` lists the tuning
half's misses and false flags instead, and ``--tuning`` prints the tuning sets' shares alone.

    .venv/bin/python bench/bench_steering.py [--misses | --tuning]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.grading import safety  # noqa: E402
from app.grading.runner import HOLD_FOR_REVIEW  # noqa: E402
from tests.steering_corpus import (  # noqa: E402
    CORPUS,
    EXTRAS,
    FRESH,
    FRESH_BATCHES,
    Case,
    fresh,
    load,
    read,
)

TARGET_DETECTED, TARGET_FALSE = 0.95, 0.02


def flagged(text: str) -> bool:
    """True when the runner would hold a grade of ``text`` for the teacher."""
    return any(flag.code in HOLD_FOR_REVIEW for flag in safety.inspect(text))


def rates(cases: list[Case]) -> tuple[Counter[str], Counter[str], Counter[str]]:
    """Cases, and flagged cases, by "kind", "kind lang" and "kind tactic"."""
    total: Counter[str] = Counter()
    hit: Counter[str] = Counter()
    misses: Counter[str] = Counter()
    for case in cases:
        keys = (case.kind, f"{case.kind} {case.lang}", f"{case.kind} {case.tactic}")
        total.update(keys)
        if flagged(case.text):
            hit.update(keys)
        elif case.kind == "attempt":
            misses[case.id] += 1
    return total, hit, misses


def table(cases: list[Case], name: str) -> None:
    total, hit, _ = rates(cases)
    for key in sorted(total, key=lambda k: (k.split()[0], len(k.split()), k)):
        print(f"  {key:<36} {hit[key]:>4} of {total[key]:<4} flagged ({hit[key] / total[key]:.1%})")
    detected = hit["attempt"] / total["attempt"]
    false = hit["lookalike"] / total["lookalike"]
    print(
        f"\n{name}: {detected:.1%} of attempts detected (target ≥ {TARGET_DETECTED:.0%}), "
        f"{false:.1%} of look-alikes flagged (target ≤ {TARGET_FALSE:.0%})"
    )


def shares(sets: dict[str, list[Case]]) -> None:
    """Detected and falsely flagged shares of each set."""
    for name, cases in sets.items():
        total, hit, _ = rates(cases)
        print(
            f"  {name:<20} {hit['attempt'] / total['attempt']:6.1%} of {total['attempt']} attempts"
            f" detected, {hit['lookalike'] / total['lookalike']:5.1%} of"
            f" {total['lookalike']} look-alikes flagged"
        )


def tuning_sets() -> None:
    """The tuning sets, which the tests hold at target."""
    sets = {"corpus tuning half": [c for c in read(CORPUS) if c.half == "tuning"]}
    shares(sets | {path.name: read(path) for path in EXTRAS})


def misses(cases: list[Case]) -> None:
    for case in cases:
        if flagged(case.text) != (case.kind == "attempt"):
            what = "missed" if case.kind == "attempt" else "false flag"
            print(f"--- {case.id} ({what}, {case.tactic})\n{case.text}\n")


def speed() -> None:
    """Seconds for the checks on a 1 MB submission made of the corpus's look-alikes."""
    text = "\n\n".join(c.text for c in load() if c.kind == "lookalike")
    text = (text * (1_000_000 // len(text) + 1))[:1_000_000]
    started = time.perf_counter()
    safety.inspect(text)
    print(f"1 MB of ordinary text inspected in {time.perf_counter() - started:.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--misses", action="store_true", help="list the tuning half's errors")
    parser.add_argument("--tuning", action="store_true", help="the tuning sets' shares only")
    arguments = parser.parse_args()
    if arguments.misses:
        misses(load("tuning"))
        return
    if arguments.tuning:
        tuning_sets()
        return
    heldout = load("heldout")
    print(f"Steering flags on the held-out half ({len(heldout)} passages)")
    table(heldout, "Held-out half")
    print("\nFresh held-out sets")
    shares({path.name: read(path) for path in FRESH})
    for batch, paths in enumerate(FRESH_BATCHES):
        names = f"{paths[0].stem}-{paths[-1].stem}"
        print(f"\nFresh held-out sets {names}")
        table(fresh(batch), f"Fresh held-out sets {names} together")
    print("\nTuning sets")
    tuning_sets()
    speed()


if __name__ == "__main__":
    main()
