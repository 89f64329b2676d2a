"""What the learnt steering reader adds to the rules, on text neither had seen.

Each tuning set after the first two was committed before the rules were tuned on it, so the
rules at that commit met it blind. For each such set this replays those rules (``git
archive`` of ``app/`` at the commit that added the file, run in a subprocess), trains the
reader (scripts/train_steering_reader.py) on every other tuning set, and prints, on that set:
the rules alone, the rules with the reader's flags (``--flag-at``; read as the tool reads, in
pieces, deferring to quotations of the rules, scenes and code), and with its doubt on rule
flags (``--doubt-below``) too. The doubt is replayed on every rule flag, as the old rules
cannot tell a known phrase from a class rule, so its cost in attempts is an upper bound. Then
all sets together, and the plain coursework paragraphs the same way: each file's tuning
paragraphs read by a reader trained without that file. No held-out text is ever measured.
Needs git history and scikit-learn (the test extra).

    .venv/bin/python bench/bench_steering_reader.py [--flag-at F] [--doubt-below D]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tarfile
import tempfile
from io import BytesIO
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from train_steering_reader import (  # noqa: E402
    ADDRESSED_AT,
    DOUBT_BELOW,
    FLAG_AT,
    C,
    training_cases,
    weights,
)

from app.grading.runner import HOLD_FOR_REVIEW  # noqa: E402
from app.grading.safety import inspect, steering  # noqa: E402
from app.grading.safety.folding import _Folded  # noqa: E402
from app.grading.safety.reader import Reader  # noqa: E402
from tests.steering_corpus import EXTRAS, Case, ordinary, read  # noqa: E402

#: Asked of the rules as they were: which passages would they hold for the teacher.
_OLD_RULES = """
import json, sys
from app.grading import safety
from app.grading.runner import HOLD_FOR_REVIEW
texts = json.load(sys.stdin)
try:  # the rules alone, once a learnt reader is part of inspect
    flags = [safety.inspect(t, learnt=False) for t in texts]
except TypeError:
    flags = [safety.inspect(t) for t in texts]
print(json.dumps([any(f.code in HOLD_FOR_REVIEW for f in found) for found in flags]))
"""


def added_in(path: Path) -> str:
    """The commit that added ``path``: the rules there had never seen it."""
    return subprocess.run(
        ["git", "log", "--diff-filter=A", "--format=%H", "-1", "--", str(path)],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


def old_rules(commit: str, texts: list[str]) -> list[bool]:
    archive = subprocess.run(
        ["git", "archive", commit, "app"], cwd=ROOT, check=True, capture_output=True
    ).stdout
    with tempfile.TemporaryDirectory() as tree:
        with tarfile.open(fileobj=BytesIO(archive)) as tar:
            tar.extractall(tree, filter="data")
        answer = subprocess.run(
            [sys.executable, "-c", _OLD_RULES],
            input=json.dumps(texts),
            cwd=tree,
            check=True,
            capture_output=True,
            text=True,
            env={"PYTHONPATH": tree},
        ).stdout
    return json.loads(answer)


def shares(cases: list[Case], held: list[bool]) -> str:
    attempts = [h for c, h in zip(cases, held, strict=True) if c.kind == "attempt"]
    lookalikes = [h for c, h in zip(cases, held, strict=True) if c.kind != "attempt"]
    return (
        f"{sum(attempts) / len(attempts):6.1%} of attempts, "
        f"{sum(lookalikes) / len(lookalikes):5.1%} of look-alikes"
    )


def prefix(case: Case) -> str:
    """The id prefix shared by one file's cases ("j-", "o2-")."""
    return case.id.split("-")[0] + "-"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flag-at", type=float, default=FLAG_AT)
    parser.add_argument("--addressed-at", type=float, default=ADDRESSED_AT)
    parser.add_argument("--doubt-below", type=float, default=DOUBT_BELOW)
    parser.add_argument("--c", type=float, default=C, help="the fit's inverse regularisation")
    args = parser.parse_args()
    every: tuple[list[Case], list[bool], list[bool]] = ([], [], [])
    for path in EXTRAS[1:]:
        cases = read(path)
        rules = old_rules(added_in(path), [case.text for case in cases])
        reader = Reader(weights(training_cases(leave_out=prefix(cases[0])), args.c))
        read_ = [_reading(reader, case.text) for case in cases]
        with_reader = [r or _flags(reading, args) for r, reading in zip(rules, read_, strict=True)]
        doubted = [_held(r, reading, args) for r, reading in zip(rules, read_, strict=True)]
        print(f"{path.name} ({len(cases)} passages, rules of {added_in(path)[:7]})")
        print(f"  rules alone                 {shares(cases, rules)}")
        reader_at = f"{args.flag_at}/{args.addressed_at}"
        print(f"  + reader ≥ {reader_at:<9}        {shares(cases, with_reader)}")
        print(f"  + doubt below {args.doubt_below:<4}          {shares(cases, doubted)}")
        for kept, found in zip(every, (cases, rules, doubted), strict=True):
            kept.extend(found)
    print(f"all {len(EXTRAS) - 1} sets together")
    print(f"  rules alone                 {shares(every[0], every[1])}")
    print(f"  + reader and doubt          {shares(every[0], every[2])}")
    plain(args)


def plain(args: argparse.Namespace) -> None:
    """Plain coursework: each file's tuning paragraphs, read by today's rules and a reader
    trained without that file, with its doubt."""
    flagged = total = 0
    paragraphs = ordinary("tuning")
    for group in sorted({prefix(case) for case in paragraphs}):
        reader = Reader(weights(training_cases(leave_out=group), args.c))
        texts = [case.text for case in paragraphs if case.id.startswith(group)]
        held = sum(
            _held(
                any(f.code in HOLD_FOR_REVIEW for f in inspect(text, learnt=False)),
                _reading(reader, text),
                args,
            )
            for text in texts
        )
        print(f"plain coursework {group:<4} {held} of {len(texts)} flagged")
        flagged, total = flagged + held, total + len(texts)
    print(f"plain coursework, all    {flagged} of {total} ({flagged / total:.2%})")


Reading = tuple[float, float, float]


def _held(ruled: bool, reading: Reading, args: argparse.Namespace) -> bool:
    """Held with the reader and its doubt: a rule's flag unless the reader finds every piece
    ordinary, or the reader's own flag where no rule flagged."""
    return (ruled and reading[2] >= args.doubt_below) or (not ruled and _flags(reading, args))


def _flags(reading: Reading, args: argparse.Namespace) -> bool:
    """Whether the reader flags a piece of its own: sure enough, or less sure of one that
    speaks to the grader."""
    sure, addressed, _ = reading
    return sure >= args.flag_at or addressed >= args.addressed_at


def _reading(reader: Reader, text: str) -> Reading:
    """The highest chance of a piece the reader would flag (not one that only quotes the
    rules, a scene or code), of such a piece that speaks to the grader, and of any piece (1.0
    when none is long enough)."""
    folded = _Folded(text).text
    read_ = reader.read(folded)
    fence_offsets = steering.fences(folded)
    flaggable = [
        (chance, steering.speaks_to_the_grader(folded, start, end))
        for start, end, chance in read_
        if not steering.speaks_to_nobody(folded, start, end, fence_offsets)
    ]
    return (
        max((chance for chance, _ in flaggable), default=0.0),
        max((chance for chance, spoken in flaggable if spoken), default=0.0),
        max((chance for *_, chance in read_), default=1.0),
    )


if __name__ == "__main__":
    main()
