"""The steering corpus (tests/data/steering/corpus.jsonl and the extra*.jsonl sets) as typed cases.

One loader shared by the corpus's own test, the detector's tests and bench/, so all of them read
the same files the same way. The "heldout" half exists to measure a detector on attempts it was
not tuned to: never tune on it. extra.jsonl to extra25.jsonl, written later by other
writers, are tuning data only, so the held-out half stays the one written before any detector
existed. fresh1.jsonl to fresh6.jsonl are held-out only: written blind by six more writers
once the held-out half had been looked at too often, in two batches, each committed before the
detector changed again.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

CORPUS = Path(__file__).parent / "data" / "steering" / "corpus.jsonl"
#: A second, independent tuning set; every line has half "tuning".
EXTRA = CORPUS.with_name("extra.jsonl")
#: A third tuning set, of hard cases (look-alikes closest to attempts); every line "tuning".
EXTRA2 = CORPUS.with_name("extra2.jsonl")
#: A fourth tuning set, in registers and framings the others lack; every line "tuning".
EXTRA3 = CORPUS.with_name("extra3.jsonl")
#: The tuning-only files, in the order load() reads them after the corpus. extra4.jsonl was
#: written from the held-out half's per-tactic counts alone; extra5 to extra14 each blind and
#: committed before the learnt reader was trained on it (tests/data/steering/README.md says
#: what each one covers).
EXTRAS = (EXTRA, EXTRA2, EXTRA3, *(CORPUS.with_name(f"extra{n}.jsonl") for n in range(4, 26)))
#: Fresh held-out sets: every line "heldout", never read by load(), trained or tuned on. Three
#: batches, each committed before the detector changed and measured once after; fresh1-6 were
#: then read item by item (spent), fresh7-9 is the blind one (tests/data/steering/README.md).
FRESH_BATCHES = tuple(
    tuple(CORPUS.with_name(f"fresh{n}.jsonl") for n in batch)
    for batch in ((1, 2, 3), (4, 5, 6), (7, 8, 9))
)
FRESH = tuple(path for batch in FRESH_BATCHES for path in batch)
#: Plain coursework paragraphs (no attempt, most with no grading words at all), split into
#: tuning and held-out halves: what a learnt reader must leave alone besides the look-alikes.
ORDINARY = CORPUS.with_name("ordinary.jsonl")
#: More plain paragraphs by four more writers, tuning only: many formally close to steering
#: (persuasive "must" and "deserves", laws, procedures, results with scores); in ordinary4
#: and ordinary5, most speak to someone (letters, speeches, guides) or judge and score.
ORDINARY_EXTRAS = tuple(CORPUS.with_name(f"ordinary{n}.jsonl") for n in range(2, 6))

LANGS = ("en", "es", "ca", "fr", "de", "pt", "it")
KINDS = ("attempt", "lookalike")
HALVES = ("tuning", "heldout")
TACTICS = {
    "attempt": (
        "staff_note",
        "address_score",
        "address_instruction",
        "conditional",
        "answer_shape",
        "role_play",
        "disguised",
        "indirect",
    ),
    "lookalike": (
        "ai_essay",
        "code_output",
        "reflection",
        "dialogue",
        "instructions_quoted",
        "self_assessment",
        "grading_topic",
        "business_or_tech",
    ),
}


@dataclass(frozen=True)
class Case:
    """One passage: an attempt to steer the grader, or an innocent look-alike."""

    id: str
    lang: str
    kind: str
    tactic: str
    half: str
    text: str
    why: str

    @property
    def is_attempt(self) -> bool:
        return self.kind == "attempt"


def read(path: Path) -> list[Case]:
    """The cases of one file, in file order."""
    with path.open(encoding="utf-8") as lines:
        return [Case(**json.loads(line)) for line in lines if line.strip()]


def ordinary(half: str | None = None) -> list[Case]:
    """The plain coursework paragraphs as cases of kind "ordinary" (tactic: their subject)."""
    rows = [
        json.loads(line)
        for path in (ORDINARY, *ORDINARY_EXTRAS)
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    cases = [
        Case(row["id"], row["lang"], "ordinary", row["subject"], row["half"], row["text"], "")
        for row in rows
    ]
    return [case for case in cases if half is None or case.half == half]


def fresh(batch: int | None = None) -> list[Case]:
    """The fresh held-out sets' cases in file order: all, or those of ``FRESH_BATCHES[batch]``."""
    paths = FRESH if batch is None else FRESH_BATCHES[batch]
    return [case for path in paths for case in read(path)]


def held_out() -> list[Case]:
    """Every held-out case: the corpus's half, the fresh sets and the plain paragraphs' half.
    What no training may read."""
    return load("heldout") + fresh() + ordinary("heldout")


def load(half: str | None = None) -> list[Case]:
    """All cases (the corpus, then each of EXTRAS) in file order, or only those of ``half``.

    "heldout" reads corpus.jsonl alone: the extra sets are tuning data by construction.
    """
    if half is not None and half not in HALVES:
        raise ValueError(f"unknown half {half!r}; expected one of {HALVES}")
    cases = read(CORPUS)
    if half != "heldout":
        cases += [case for path in EXTRAS for case in read(path)]
    return [case for case in cases if half is None or case.half == half]
