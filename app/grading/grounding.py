"""Evidence grounding: points a model gives for a criterion count only with a passage of the
work to show for them, and the application, not the model, decides whether the passage is
there.

A model can be talked into points by the work it grades ("this essay meets every criterion"),
and it can invent a quote as easily as a score. What it cannot do is make a quote appear in
the work. So every strategy that lets a model give points for a criterion asks for the
passage that earns them, marks those criteria (``CriterionResult.model_judged``), and after
the strategy the runner calls :func:`enforce`: a criterion with points but no verified quote
loses its points, the total is recomputed the way the strategy adds its criteria up
(:meth:`app.grading.base.GradingPlugin.rescore`), and the grade waits for a teacher with the
criteria named. ``provenance["quotes"]`` says, criterion by criterion, what was quoted and
whether it was found.

Whether a quote is in the work (:meth:`Work.check`):

- both sides are normalised alike (:func:`normalise`): NFKC, accents folded, case folded,
  typographic quotes, dashes and ellipses made plain, words broken by a hyphen at a line's
  end joined, and whitespace dropped altogether (OCR and PDF extraction lose and add spaces);
- a quote with an ellipsis ("begins … ends") is found when each of its parts is, in order;
- each part is found exactly, or approximately: the best-matching passage of the work of its
  length must be at least :data:`SIMILARITY` % alike (rapidfuzz's ``partial_ratio``, an
  Indel similarity), so "rn" read for "m", "1" for "l" or a lost letter still count while a
  paraphrase or an invented sentence does not;
- too short to be evidence (:func:`substantial`): fewer than :data:`MIN_WORDS` words or
  :data:`MIN_CHARS` letters, unless it reaches :data:`LONG_CHARS` (a line of code is one
  "word"), or the whole work is no longer than that;
- the assignment's own wording: a quote found, by the same test, in the instructions (with the
  teacher's guidelines) or in what the strategy asks about (the rubric's criteria, a tree's
  questions) is no evidence of the work even when the work contains it too: students have
  that wording and can paste it into the work, and a model can quote it back. A quote that
  goes on past those words into the student's own is not found there whole, so it counts.
  The teacher's reference is not such wording: students do not see it, a correct answer
  often says what it says (a program's lines, a definition), and a quote of it that is not
  in the work is not found anyway.

Holistic grading (one overall score, no criterion's points) has nothing to check: see
docs/decisions.md. Large works stay fast: the work is normalised once per grading, exact
matches are a substring search, and rapidfuzz compares in C (bench/bench_grounding.py).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from rapidfuzz import fuzz

from app.catalogue import N_
from app.grading.base import (
    CriterionResult,
    Flag,
    GradingInput,
    GradingPlugin,
    GradingResult,
    Outcome,
)

#: How alike (0..100) the closest passage of the work must be to a quote's part.
SIMILARITY = 90.0
#: How alike (0..100) each word of four letters or more must be to the passage found: one
#: letter misread in four passes (Indel: 6 of 8), two in four do not.
WORD_SIMILARITY = 75.0
#: Evidence is at least this many words and letters (spaces aside) ...
MIN_WORDS, MIN_CHARS = 3, 12
#: ... or at least this many letters in fewer words (a line of code, a formula).
LONG_CHARS = 24
#: How much of a quote the provenance keeps.
SHOWN_CHARS = 120

_TYPOGRAPHIC = {
    "‘": "'",
    "’": "'",
    "‚": "'",
    "‛": "'",
    "′": "'",
    "“": '"',
    "”": '"',
    "„": '"',
    "‟": '"',
    "″": '"',
    "«": '"',
    "»": '"',
    "‹": "'",
    "›": "'",
    "‐": "-",
    "‑": "-",
    "‒": "-",
    "–": "-",
    "—": "-",
    "―": "-",
    "−": "-",
    "…": "...",
}
#: Readings OCR confuses, folded to one so that either side may have either.
_OCR_PAIRS = (("rn", "m"), ("vv", "w"))
_OCR_LETTERS = str.maketrans({"l": "1", "i": "1", "|": "1", "o": "0"})
#: Combining marks (accents) left apart by NFKD: the common blocks, removed in one pass.
_COMBINING = re.compile("[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]")
#: A hyphen ending a line before a letter; it joins a word when a letter comes before it too.
_LINE_END_HYPHEN = re.compile(r"-[ \t]*\r?\n\s*(?=\w)")
#: Where a quote skips part of the passage: "...", "[...]", "(...)".
_ELLIPSIS = re.compile(r"[\[(]?\.{3,}[\])]?")
#: Quote marks a model wraps a quote in.
_WRAPPING = "\"'` "


class Why(StrEnum):
    """Whether a quote counts, and why not."""

    VERIFIED = "verified"
    NO_QUOTE = "no quote"
    TOO_SHORT = "too short"
    NOT_FOUND = "not found in the work"
    ASSIGNMENT = "the assignment's own wording"


def normalise(text: str) -> str:
    """``text`` as quotes are compared: compatibility forms, accents and case folded,
    typographic punctuation made plain, line-end hyphenation joined, whitespace kept as single
    spaces (:func:`_key` drops them for matching)."""
    # Each step is one pass in C: a megabyte of work takes tens of milliseconds.
    if not text.isascii():
        text = _COMBINING.sub("", unicodedata.normalize("NFKD", text))
        text = unicodedata.normalize("NFKC", text)
        for typographic, plain in _TYPOGRAPHIC.items():
            if typographic in text:
                text = text.replace(typographic, plain)
    text = text.casefold()
    if "-" in text:
        text = _LINE_END_HYPHEN.sub(lambda m: _joined(text, m), text)
    return " ".join(text.split())


def _joined(text: str, hyphen: re.Match[str]) -> str:
    """A line-end hyphen after a letter joins the word (""); after anything else it stays."""
    before = text[hyphen.start() - 1] if hyphen.start() else " "
    return "" if before.isalnum() or before == "_" else hyphen.group()


def _key(normalised: str) -> str:
    """What is matched: no spaces, and the letters OCR confuses folded alike on both sides."""
    key = normalised.replace(" ", "")
    for pair, one in _OCR_PAIRS:
        key = key.replace(pair, one)
    return key.translate(_OCR_LETTERS)


def substantial(normalised: str) -> bool:
    """Long enough to point at something: see the module."""
    letters = len(_key(normalised))
    return letters >= LONG_CHARS or (letters >= MIN_CHARS and len(normalised.split()) >= MIN_WORDS)


class Text:
    """A text quotes are looked for in, normalised once."""

    def __init__(self, *pieces: str) -> None:
        normalised = [normalise(piece) for piece in pieces if piece.strip()]
        self.normalised = " ".join(normalised)
        # A separator no normalised text holds, so no match spans two pieces.
        self._key = "\x00".join(_key(piece) for piece in normalised)

    def holds(self, quote: str) -> bool:
        """Whether every part of the normalised ``quote`` (split at ellipses) is in the text,
        exactly or approximately, in order."""
        parts = [part.strip() for part in _ELLIPSIS.split(quote)]
        parts = [part for part in parts if _key(part)]
        start = 0
        for part in parts:
            end = self._find(part, start)
            if end is None:
                return False
            start = end
        return bool(parts)

    def _find(self, part: str, start: int) -> int | None:
        """Where the normalised ``part`` ends in the text at or after ``start``, or None."""
        key = _key(part)
        exact = self._key.find(key, start)
        if exact >= 0:
            return exact + len(key)
        rest = self._key[start:] if start else self._key
        if len(key) > len(rest):  # partial_ratio would look for the text in the quote
            found = fuzz.ratio(key, rest, score_cutoff=SIMILARITY) and _words_in(part, rest)
            return len(self._key) if found else None
        alignment = fuzz.partial_ratio_alignment(key, rest, score_cutoff=SIMILARITY)
        if alignment is None:
            return None
        passage = rest[max(0, alignment.dest_start - _PAD) : alignment.dest_end + _PAD]
        return start + alignment.dest_end if _words_in(part, passage) else None


#: Characters around an approximate match its words may also fall in.
_PAD = 8


def _words_in(part: str, passage: str) -> bool:
    """Whether each word of four letters or more of ``part`` is in ``passage``, give or take
    a letter in four: a real passage's start with an invented end is close enough overall,
    not word by word."""
    return all(
        fuzz.partial_ratio(_key(word), passage) >= WORD_SIMILARITY
        for word in part.split()
        if len(word) >= 4
    )


@dataclass(frozen=True)
class Grounds:
    """What a grading's quotes are checked against: the student's work, and the assignment
    whose own words are no evidence of it."""

    work: Text
    assignment: Text

    @classmethod
    def of(cls, job: GradingInput, plugin: GradingPlugin) -> Grounds:
        """The work is every file the model could have read (the upload comment is the
        student's note about the work, not the work); the assignment is the instructions with
        the teacher's guidelines and what the strategy asks about (the rubric's criteria, a
        tree's questions: :meth:`GradingPlugin.wording`); not the reference (see the module)."""
        files = [f.text for f in job.files] or [job.text]
        return cls(Text(*files), Text(job.instructions, *plugin.wording(job)))

    def check(self, quote: str) -> Why:
        """Whether ``quote`` is evidence of the work, and why not."""
        normalised = normalise(quote).strip(_WRAPPING)
        if not _key(_ELLIPSIS.sub("", normalised)):
            return Why.NO_QUOTE
        if not substantial(_ELLIPSIS.sub(" ", normalised)) and not self._short_work():
            return Why.TOO_SHORT
        if self.assignment.holds(normalised):
            return Why.ASSIGNMENT  # whether or not the work repeats it
        return Why.VERIFIED if self.work.holds(normalised) else Why.NOT_FOUND

    def _short_work(self) -> bool:
        """A short quote still counts when the whole work is that short (a one-line answer)."""
        return not substantial(self.work.normalised) and bool(self.work.normalised)


#: The review reason when points went without evidence.
UNGROUNDED = N_(
    "The grader gave points without a passage of the work that earns them for: "
    "%(criteria)s. Those points were not counted; a teacher needs to review this submission."
)


def enforce(result: GradingResult, job: GradingInput, plugin: GradingPlugin) -> None:
    """Check the quote of every model-judged criterion of ``plugin``'s ``result`` against
    ``job``'s work; points without a verified quote are taken away (the plugin's
    :meth:`~GradingPlugin.rescore` recomputes the total), the grade goes to review naming the
    criteria, and the provenance lists every check."""
    judged = [c for c in result.criteria if c.model_judged]
    if not judged:
        return
    grounds = Grounds.of(job, plugin)
    report: list[dict[str, Any]] = []
    ungrounded: list[CriterionResult] = []
    for criterion in judged:
        why = grounds.check(criterion.evidence)
        criterion.evidence_verified = why == Why.VERIFIED
        earned = criterion.score or 0.0
        entry = {
            "criterion": criterion.name,
            "quote": _shown(criterion.evidence),
            "verified": criterion.evidence_verified,
            "why": str(why),
        }
        if earned > 0 and not criterion.evidence_verified:
            entry["points_dropped"] = earned
            ungrounded.append(criterion)
        report.append(entry)
    result.provenance["quotes"] = report
    if not ungrounded:
        return
    dropped = sum(c.score or 0.0 for c in ungrounded)
    for criterion in ungrounded:
        criterion.score = 0.0
    if result.score is not None:
        result.provenance["score_before_grounding"] = result.score
        plugin.rescore(job, result, dropped)
    names = ", ".join(c.name for c in ungrounded)
    message = UNGROUNDED % {"criteria": names}
    result.flags.append(Flag("UngroundedEvidence", message))
    if result.outcome == Outcome.GRADED:
        result.outcome, result.error = Outcome.NEEDS_REVIEW, message


def _shown(quote: str) -> str:
    quote = " ".join(quote.split())
    return quote if len(quote) <= SHOWN_CHARS else quote[: SHOWN_CHARS - 1] + "…"
