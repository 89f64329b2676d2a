"""Calibration examples: the teacher's own graded submissions of an activity, the few most
like a new one, shown to the model with the teacher's score and comments.

This module only measures likeness (:func:`most_similar`); which submissions may serve as
examples, and how they reach a prompt, is the caller's business.

Likeness is the cosine of TF-IDF vectors over the words :func:`app.grading.retrieval.terms`
compares (folded, stemmed, no stop words): no model, no download, deterministic, and a
number between 0 and 1 that says how close the nearest example is.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache

from app.grading.retrieval import terms


def most_similar(query: str, candidates: Sequence[str], k: int) -> list[tuple[int, float]]:
    """The ``k`` candidates most like ``query`` as ``(index, similarity)``, most similar first;
    similarity is in 0..1 (1: the same words in the same proportions). Ties keep the
    candidates' order, so the choice is the same every time."""
    if k < 1 or not candidates:
        return []
    documents = [_counts(text) for text in candidates]
    frequency = Counter(term for document in documents for term in document)
    count = len(documents) + 1  # the query counts as a document for the weights
    query_terms = _counts(query)
    frequency.update(query_terms.keys())

    def vector(document: Counter[str]) -> dict[str, float]:
        return {
            term: (1 + math.log(n)) * math.log((1 + count) / (1 + frequency[term]) + 1)
            for term, n in document.items()
        }

    wanted = vector(query_terms)
    wanted_norm = math.sqrt(sum(w * w for w in wanted.values()))
    scored = []
    for index, document in enumerate(documents):
        weights = vector(document)
        norm = math.sqrt(sum(w * w for w in weights.values()))
        dot = sum(w * weights.get(term, 0.0) for term, w in wanted.items())
        similarity = dot / (norm * wanted_norm) if norm and wanted_norm else 0.0
        scored.append((index, round(min(1.0, similarity), 4)))
    scored.sort(key=lambda pair: -pair[1])
    return scored[:k]


@lru_cache(maxsize=256)
def _counts(text: str) -> Counter[str]:
    """How often each term occurs in ``text`` (not to be changed: it is shared). Cached, as
    the same examples are compared with every new submission of an activity."""
    return Counter(terms(text))
