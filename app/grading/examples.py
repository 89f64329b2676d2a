"""Calibration examples: the teacher's own graded submissions of an activity, the few most
like a new one, shown to the model with the teacher's score and comments.

Here, in the grading layer, is what needs no database: how likeness is measured
(:func:`most_similar`), which of the candidates a grading uses (:func:`choose`), and what an
example is before (:class:`Candidate`) and after (:class:`Example`) the runner masked it
(app.grading.runner.model_input). Which submissions are candidates is the LMS side's business
(app.lms.calibration); how an example reads in a prompt is app.grading.prompts.examples_block.

Likeness is the cosine of TF-IDF vectors over the words :func:`app.grading.retrieval.terms`
compares (folded, stemmed, no stop words): no model, no download, deterministic, and a
number between 0 and 1 that says how close the nearest example is.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import lru_cache

from app.grading.retrieval import terms

#: Longest example text a prompt carries (characters, about 750 tokens): six examples then
#: add at most about 5,000 tokens whatever the students wrote, so a prompt stays bounded.
MAX_EXAMPLE_CHARS = 3000
#: Longest teacher's comment on an example a prompt carries (characters).
MAX_EXAMPLE_FEEDBACK_CHARS = 1500
#: Only the start of a text is compared: choosing among 200 long candidates stays fast.
MAX_COMPARED_CHARS = 20_000


@dataclass(frozen=True)
class ExampleCriterion:
    """One criterion's score in an example, as the teacher left it."""

    name: str
    score: float
    max: float


@dataclass(frozen=True, kw_only=True)
class Example:
    """A graded example as a plugin sees it: the work's text (masked and cut, see
    app.grading.runner), the teacher's score on ``scale``, their comments and per-criterion
    scores when there are any."""

    text: str
    score: float
    scale: float
    feedback: str = ""
    criteria: tuple[ExampleCriterion, ...] = ()


@dataclass(frozen=True, kw_only=True)
class Candidate(Example):
    """A submission that may serve as an example, as stored: not yet masked, with the names of
    its student (masked wherever they appear) and whether the teacher pinned it;
    ``similarity`` is set once :func:`choose` compared it with the new work."""

    submission_id: int
    #: Its extraction kind (app.extract.Kind): masking leaves a program's numbers alone.
    kind: str = "text"
    names: tuple[str, ...] = ()
    pinned: bool = False
    similarity: float = 0.0

    def provenance(self) -> dict[str, object]:
        """What the job's provenance records of it (``provenance["examples"]``)."""
        return {
            "submission_id": self.submission_id,
            "similarity": self.similarity,
            "pinned": self.pinned,
        }


def choose(query: str, candidates: Sequence[Candidate], count: int) -> tuple[Candidate, ...]:
    """The examples a grading of ``query`` uses: pinned candidates first, then the most similar
    ones, ``count`` at most (pinned ones beyond it: the most similar of them); each with its
    similarity. Texts are compared by their first MAX_COMPARED_CHARS characters."""
    if count < 1:
        return ()
    scored = most_similar(
        query[:MAX_COMPARED_CHARS],
        [candidate.text[:MAX_COMPARED_CHARS] for candidate in candidates],
        len(candidates),
    )
    scored.sort(key=lambda pair: not candidates[pair[0]].pinned)  # stable: by similarity within
    return tuple(
        replace(candidates[index], similarity=similarity) for index, similarity in scored[:count]
    )


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
    """How often each term occurs in ``text`` (not to be changed: it is shared). Cached for a
    process that ranks the same texts again and again (the calibration benchmark's
    leave-one-out); a worker's job runs in a fresh fork, where it starts empty."""
    return Counter(terms(text))
