"""A second reader for steering: a linear model over the words and letter groups of each run
of paragraphs, trained on the tuning halves of the steering corpus
(``scripts/train_steering_reader.py``).

Why a model next to the rules: the rules in :mod:`~app.grading.safety.steering` name the parts
every attempt needs from small vocabularies, and the next student's phrasing falls between
them (each new writer's set: 22–81 % caught before the rules met it). Word pairs and letter
groups (``"korrekt"``, ``"rubri"``, ``'"score'``) carry over to wordings nobody listed:
replaying the rules as they stood before each tuning set, this reader (trained without that
set) adds 14–48 points of attempts caught (``bench/bench_steering_reader.py``).

It reads runs of paragraphs the size of the passages it learnt from, never single sentences:
out of their paragraph, ordinary sentences about graders and scores look like attempts far
more often. It never changes a score. It flags what it is sure of, and a paragraph that speaks
to the grader (steering.speaks_to_the_grader) when fairly sure; where it finds a
paragraph ordinary, a class rule's flag there is tested rather than held
(:mod:`~app.grading.safety.flags`). Its weights are data (``reader.json``), loaded once per
process; scoring is pure Python, so the tool needs no numerical library at run time.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Callable, Iterator
from functools import cache, lru_cache
from pathlib import Path

WEIGHTS = Path(__file__).with_name("reader.json")
#: Longest piece read at once: the corpus's passages are at most 600 characters, and a longer
#: paragraph is read in runs of whole sentences up to this length.
MAX_PIECE = 600
#: Fewest words read at once: under it a few strong word pairs decide alone (the corpus's
#: passages have 8 words at least, 24 as a median; 1.5 % have fewer than 12).
MIN_WORDS = 12
_WORD = re.compile(r"\w+")
_PARAGRAPH_BREAK = re.compile(r"\n[^\S\n]*\n\s*")
_SENTENCE_END = re.compile(r"[.!?](?=\s)")


def word_grams(folded: str) -> list[str]:
    """Words and pairs of neighbouring words: the phrasing."""
    words = _WORD.findall(folded)
    return words + [f"{a} {b}" for a, b in zip(words, words[1:], strict=False)]


def letter_grams(folded: str) -> list[str]:
    """Groups of 2–5 letters within each blank-separated token, punctuation kept
    (``'"score'``, ``"</gr"``): stems across languages and the shape of a ready-made answer."""
    return [
        gram
        for token in folded.split()
        for gram in (_word_grams(token) if len(token) <= _CACHED else _grams(token))
    ]


_CACHED = 32  # words repeat and are short; a long token (a URL, a blob) is built each time


@lru_cache(maxsize=1 << 16)
def _word_grams(token: str) -> tuple[str, ...]:
    """A word's letter groups, kept: a long text builds each word's once."""
    return _grams(token)


def _grams(token: str) -> tuple[str, ...]:
    padded = f" {token} "
    return tuple(padded[i : i + n] for n in range(2, 6) for i in range(len(padded) - n + 1))


#: The two feature groups, each weighed (tf-idf) and scaled to unit length on its own.
ANALYZERS: dict[str, Callable[[str], list[str]]] = {"words": word_grams, "letters": letter_grams}


class Reader:
    """Weights learnt by logistic regression; ``chance`` is the model's probability."""

    def __init__(self, weights: dict) -> None:
        #: A paragraph at least this likely is flagged though no rule names it.
        self.flag_at: float = weights["flag_at"]
        #: ...and from this chance when it speaks to the grader (steering.speaks_to_the_grader).
        self.addressed_at: float = weights["addressed_at"]
        #: A rule's flag in a paragraph less likely than this is tested, not trusted.
        self.doubt_below: float = weights["doubt_below"]
        self.intercept: float = weights["intercept"]
        #: Per group, each known feature's inverse document frequency and coefficient.
        self.groups: dict[str, dict[str, list[float]]] = weights["groups"]

    def chance(self, folded: str) -> float:
        """How likely this piece of folded text is an attempt to steer the grader."""
        z = self.intercept
        for name, analyse in ANALYZERS.items():
            known = self.groups[name]
            squares = dot = 0.0
            for gram, count in Counter(analyse(folded)).items():
                if weight := known.get(gram):
                    value = (1 + math.log(count)) * weight[0]
                    squares += value * value
                    dot += value * weight[1]
            if squares:
                z += dot / math.sqrt(squares)
        return 1 / (1 + math.exp(-z)) if z > -700 else 0.0

    def read(self, folded: str) -> list[tuple[int, int, float]]:
        """Each piece of ``folded`` (see ``pieces``): its span and its chance."""
        return [(start, end, self.chance(folded[start:end])) for start, end in pieces(folded)]

    def narrow(self, folded: str, start: int, end: int) -> tuple[int, int]:
        """The paragraph of a piece that reads most like an attempt on its own: what the
        teacher is shown and a second grading leaves out, rather than the whole run."""
        paragraphs = list(_paragraphs(folded, start, end))
        if len(paragraphs) == 1:
            return start, end
        return max(paragraphs, key=lambda span: self.chance(folded[span[0] : span[1]]))


@cache
def reader() -> Reader:
    """The shipped reader, read from ``reader.json`` once per process."""
    return Reader(json.loads(WEIGHTS.read_text(encoding="utf-8")))


def pieces(text: str) -> list[tuple[int, int]]:
    """Spans of ``text`` read at once: runs of whole paragraphs up to ``MAX_PIECE`` characters,
    as the passages it learnt from (a paragraph with the work around it), a longer paragraph
    cut after whole sentences. A text of fewer than ``MIN_WORDS`` words is left to the rules:
    a lone line says too little ("End of essay." is not an attempt)."""
    spans: list[tuple[int, int]] = []
    for piece in _paragraphs(text, 0, len(text)):
        if spans and piece[1] - spans[-1][0] <= MAX_PIECE:
            spans[-1] = (spans[-1][0], piece[1])
        else:
            spans.append(piece)
    if len(spans) > 1 and _short(text, spans[-1]) and spans[-1][1] - spans[-2][0] <= MAX_PIECE:
        spans[-2:] = [(spans[-2][0], spans[-1][1])]
    return [span for span in spans if not _short(text, span)]


def _paragraphs(text: str, start: int, end: int) -> Iterator[tuple[int, int]]:
    """The paragraphs of ``text[start:end]``, a long one cut after whole sentences."""
    for gap in [*_PARAGRAPH_BREAK.finditer(text, start, end), None]:
        stop = gap.start() if gap else end
        yield from _cut(text, start, stop)
        start = gap.end() if gap else stop


def _short(text: str, span: tuple[int, int]) -> bool:
    return len(_WORD.findall(text, *span)) < MIN_WORDS


def _cut(text: str, start: int, end: int) -> Iterator[tuple[int, int]]:
    while start < end and text[start].isspace():
        start += 1
    while end - start > MAX_PIECE:
        window = text[start : start + MAX_PIECE]
        stops = [m.end() for m in _SENTENCE_END.finditer(window)]
        cut = start + (stops[-1] if stops and stops[-1] > MAX_PIECE // 3 else MAX_PIECE)
        yield start, cut
        start = cut
        while start < end and text[start].isspace():
            start += 1
    if text[start:end].strip():
        yield start, end
