"""Finding the parts of a teacher's reference material that a submission is about.

The reference is cut into overlapping windows of words (:func:`chunk`) and the windows are
ranked against the submission with Okapi BM25 (:func:`rank`). BM25 needs no model, no
download and no extra dependency, is deterministic, and on our labelled set of course
material it matches a small sentence-embedding model (see ``docs/retrieval.md`` and
``bench/retrieval_quality.py``).

Words are compared after light normalisation, the same for every language we serve (English,
Spanish, Catalan): case and accents folded, common stop words dropped, and frequent
inflectional and derivational endings cut so that "normalized", "normalization" and
"normalización" meet.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache

#: BM25 term-frequency saturation and length normalisation (the usual defaults).
K1 = 1.2
B = 0.75

_WORD = re.compile(r"\S+")
_TERM = re.compile(r"\w+")

# Function words only: content words, however common, are left to the IDF to weigh.
_STOP_WORDS = frozenset(
    """
    a an and are as at be been but by can could did do does for from had has have he her his
    how i if in into is it its itself may me more most my no not of on or our she should so
    than that the their them then there these they this those to too us was we were what when
    where which while who why will with would you your
    al algo como con cual cuando de del desde donde el ella ellas ellos en entre era es esa
    ese eso esta estan este esto estos fue ha han hay la las le les lo los mas me mi mucho muy
    ni no nos o os otra otro para pero poco por porque que se ser si sin sobre son su sus tambien
    te tiene tienen todo tu un una uno unos unas y ya
    aixo als amb aquell aquesta aquest aquests ara cap com d dels des doncs el els en entre es
    esta estan fa fins hi i jo l la les li m mes molt n ni nosaltres o on pel pels per perque
    pero que s seva seu seus si son sota tambe te tenen tot tots tu un una uns unes va van
    """.split()  # noqa: SIM905 (a word list reads best as text)
)

# Endings cut from a word, longest first; English, Spanish and Catalan mixed on purpose: a
# wrong cut only merges two rare forms, while a missed one splits a common word in two.
_ENDINGS = """
    ations ation ments ment ness ities ity ings ing edly ed ies ly ers er es s
    aciones acion amientos amiento imientos imiento mente idades idad ciones cion
    siones sion ancias ancia encias encia ables able ibles ible ivas ivos iva ivo
    ados adas ado ada idos idas ido ida ando iendo ar er ir os as o a e
    acions acio aments ament itats itat ions io ats ades at
""".split()  # noqa: SIM905
_SUFFIXES = tuple(
    (size, frozenset(e for e in _ENDINGS if len(e) == size))
    for size in sorted({len(e) for e in _ENDINGS}, reverse=True)
)
#: Shorter stems than this are left whole: "data" must not become "dat" and meet "date".
_MIN_STEM = 4


@dataclass(frozen=True)
class Passage:
    """A window of the reference: its place (``index``-th window, words ``start_word`` up to
    ``end_word``, exclusive) and its text exactly as written."""

    index: int
    start_word: int
    end_word: int
    text: str


@dataclass(frozen=True)
class ScoredPassage:
    passage: Passage
    score: float
    rank: int  # 1 = most relevant


def chunk(text: str, words: int = 180, overlap: int = 40) -> list[Passage]:
    """Cut ``text`` into windows of ``words`` words, each sharing ``overlap`` words with the
    previous one, so that an idea cut at one window's edge is whole in the next. The last
    window may be shorter; none lies wholly inside the one before it."""
    if words < 1:
        raise ValueError("a passage needs at least one word")
    if not 0 <= overlap < words:
        raise ValueError("the overlap must be at least 0 and less than the passage length")
    spans = [match.span() for match in _WORD.finditer(text)]
    passages: list[Passage] = []
    start = 0
    while start < len(spans):
        end = min(start + words, len(spans))
        body = text[spans[start][0] : spans[end - 1][1]]
        passages.append(Passage(len(passages), start, end, body))
        if end == len(spans):
            break
        start = end - overlap
    return passages


def terms(text: str) -> list[str]:
    """The words of ``text`` as BM25 compares them: folded, without stop words, stemmed."""
    folded = unicodedata.normalize("NFD", text.casefold())
    folded = "".join(c for c in folded if not unicodedata.combining(c))
    return [_stem(word) for word in _TERM.findall(folded) if word not in _STOP_WORDS]


@lru_cache(maxsize=1 << 16)
def _stem(word: str) -> str:
    # Cached: a text repeats its words, and choosing calibration examples stems hundreds of
    # texts per grading (a third less time on 200 texts of 2,500 words).
    if len(word) <= _MIN_STEM or word.isdigit():
        return word
    for size, endings in _SUFFIXES:
        if len(word) - size >= _MIN_STEM and word[-size:] in endings:
            return word[:-size]
    return word


def rank(query: str, passages: list[Passage], top_k: int = 4) -> list[ScoredPassage]:
    """The ``top_k`` passages that share the most telling words with ``query``, best first.

    Passages sharing no word with the query are never returned: an unrelated passage is
    noise in a grading prompt, not context. Ties keep document order.
    """
    if top_k < 1 or not passages:
        return []
    documents = [Counter(terms(p.text)) for p in passages]
    lengths = [sum(d.values()) for d in documents]
    average = sum(lengths) / len(lengths) or 1.0
    frequency = Counter(term for d in documents for term in d)
    # A long submission repeats its key words; counting each once keeps one word it
    # repeats twenty times from outweighing everything else it says.
    wanted = set(terms(query)) & frequency.keys()
    count = len(passages)
    idf = {t: math.log(1 + (count - frequency[t] + 0.5) / (frequency[t] + 0.5)) for t in wanted}
    scores = []
    for document, length in zip(documents, lengths, strict=True):
        norm = K1 * (1 - B + B * length / average)
        scores.append(
            sum(
                idf[t] * document[t] * (K1 + 1) / (document[t] + norm)
                for t in wanted
                if t in document
            )
        )
    order = sorted(range(count), key=lambda i: -scores[i])
    best = [i for i in order[:top_k] if scores[i] > 0]
    return [ScoredPassage(passages[i], round(scores[i], 4), n) for n, i in enumerate(best, 1)]
