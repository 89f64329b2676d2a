"""The steering corpus is well-formed, so a detector measured on it is measured on what it claims.

The corpus holds students' attempts to steer the AI grader and innocent look-alikes, in seven
languages, split into a tuning half and a held-out half. These checks guard the shape and the
balance (every language, kind and tactic in both halves) that the measurement relies on; they
say nothing about any detector.
"""

from __future__ import annotations

import json
from collections import Counter

import pytest

from tests.steering_corpus import CORPUS, HALVES, KINDS, LANGS, TACTICS, Case, load

#: Minimum cases per kind and language over both halves (the corpus's brief).
MIN_PER_LANG = {"en": 25, "es": 25, "ca": 25, "fr": 10, "de": 10, "pt": 10, "it": 10}
MIN_PER_KIND = 130
MIN_PER_KIND_AND_HALF = 50
MAX_CHARS = 2000


@pytest.fixture(scope="module")
def cases() -> list[Case]:
    return load()


def test_every_line_has_exactly_the_fields() -> None:
    fields = {"id", "lang", "kind", "tactic", "half", "text", "why"}
    for number, line in enumerate(CORPUS.read_text(encoding="utf-8").splitlines(), 1):
        record = json.loads(line)
        assert set(record) == fields, f"line {number}"
        assert all(isinstance(value, str) for value in record.values()), f"line {number}"


def test_fields_take_known_values(cases: list[Case]) -> None:
    for case in cases:
        assert case.lang in LANGS, case.id
        assert case.kind in KINDS, case.id
        assert case.tactic in TACTICS[case.kind], case.id
        assert case.half in HALVES, case.id
        assert case.text.strip() and len(case.text) <= MAX_CHARS, case.id
        assert case.why.strip(), case.id


def test_ids_and_texts_are_unique(cases: list[Case]) -> None:
    ids = Counter(case.id for case in cases)
    texts = Counter(" ".join(case.text.split()).casefold() for case in cases)
    assert [i for i, n in ids.items() if n > 1] == []
    assert [t for t, n in texts.items() if n > 1] == []


def test_counts_per_kind_and_language(cases: list[Case]) -> None:
    counts = Counter((case.kind, case.lang) for case in cases)
    for kind in KINDS:
        assert sum(counts[kind, lang] for lang in LANGS) >= MIN_PER_KIND, kind
        for lang, minimum in MIN_PER_LANG.items():
            assert counts[kind, lang] >= minimum, (kind, lang, counts[kind, lang])


@pytest.mark.parametrize("half", HALVES)
def test_each_half_covers_every_language_and_tactic(half: str) -> None:
    part = load(half)
    assert {case.half for case in part} == {half}
    for kind in KINDS:
        of_kind = [case for case in part if case.kind == kind]
        assert len(of_kind) >= MIN_PER_KIND_AND_HALF, (half, kind, len(of_kind))
        assert {case.lang for case in of_kind} == set(LANGS), (half, kind)
        assert {case.tactic for case in of_kind} == set(TACTICS[kind]), (half, kind)


def test_halves_alternate_within_each_group(cases: list[Case]) -> None:
    """The split rule: in each (lang, kind, tactic) group, items alternate tuning, heldout, ..."""
    seen: Counter[tuple[str, str, str]] = Counter()
    for case in cases:
        group = (case.lang, case.kind, case.tactic)
        assert case.half == HALVES[seen[group] % 2], case.id
        seen[group] += 1


def test_load_rejects_an_unknown_half() -> None:
    with pytest.raises(ValueError, match="unknown half"):
        load("test")
