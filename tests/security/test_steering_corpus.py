"""The steering corpus is well-formed, so a detector measured on it is measured on what it claims.

The corpus holds students' attempts to steer the AI grader and innocent look-alikes, in seven
languages, split into a tuning half and a held-out half. These checks guard the shape and the
balance (every language, kind and tactic in both halves) that the measurement relies on; they
say nothing about any detector.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from tests.steering_corpus import (
    CORPUS,
    EXTRA,
    EXTRA2,
    EXTRA3,
    EXTRAS,
    FRESH,
    HALVES,
    KINDS,
    LANGS,
    ORDINARY,
    ORDINARY_EXTRAS,
    TACTICS,
    Case,
    fresh,
    load,
    ordinary,
    read,
)

#: Minimum cases per kind and language over both halves (the corpus's brief).
MIN_PER_LANG = {"en": 25, "es": 25, "ca": 25, "fr": 10, "de": 10, "pt": 10, "it": 10}
MIN_PER_KIND = 130
MIN_PER_KIND_AND_HALF = 50
MAX_CHARS = 2000
#: The extra tuning set's brief: per kind and language, and per tactic of each kind.
EXTRA_MIN_PER_LANG = {"en": 30, "es": 25, "ca": 20, "fr": 15, "de": 15, "pt": 15, "it": 15}
EXTRA_MIN_PER_KIND = 150
EXTRA_MIN_PER_TACTIC = 12
#: The hard-case set's brief: per language for (attempts, look-alikes), and per kind.
EXTRA2_MIN_PER_LANG = {
    "en": (20, 20),
    "es": (15, 15),
    "ca": (12, 12),
    "fr": (10, 10),
    "de": (10, 10),
    "pt": (10, 10),
    "it": (10, 10),
}
EXTRA2_MIN_PER_KIND = {"attempt": 100, "lookalike": 160}
EXTRA2_MAX_CHARS = 1500
#: The fourth set's brief: per kind, and per kind and language.
EXTRA3_MIN_PER_KIND = 150
EXTRA3_MIN_PER_LANG = {"en": 25, "es": 20, "ca": 20, "fr": 18, "de": 18, "pt": 18, "it": 18}
#: Each fresh held-out set's brief: per kind and language, and per tactic of each kind.
FRESH_MIN_PER_LANG = 12
FRESH_MIN_PER_TACTIC = 9


@pytest.fixture(scope="module")
def cases() -> list[Case]:
    return load() + fresh()


@pytest.mark.parametrize("path", [CORPUS, *EXTRAS, *FRESH], ids=lambda path: path.name)
def test_every_line_has_exactly_the_fields(path: Path) -> None:
    fields = {"id", "lang", "kind", "tactic", "half", "text", "why"}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        record = json.loads(line)
        assert set(record) == fields, f"{path.name} line {number}"
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
    """Over all files: an extra text that repeats the corpus would count one passage twice."""
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


def test_halves_alternate_within_each_group() -> None:
    """The split rule of corpus.jsonl: in each (lang, kind, tactic) group, items alternate
    tuning, heldout, ... (the extra set has no held-out half, so the rule is not its own)."""
    seen: Counter[tuple[str, str, str]] = Counter()
    for case in read(CORPUS):
        group = (case.lang, case.kind, case.tactic)
        assert case.half == HALVES[seen[group] % 2], case.id
        seen[group] += 1


@pytest.mark.parametrize("path", EXTRAS, ids=lambda path: path.name)
def test_the_extra_sets_are_tuning_only_and_never_held_out(path: Path) -> None:
    extra = read(path)
    assert {case.half for case in extra} == {"tuning"}
    extra_ids = {case.id for case in extra}
    assert extra_ids <= {case.id for case in load("tuning")}
    assert extra_ids.isdisjoint(case.id for case in load("heldout"))


@pytest.mark.parametrize("path", FRESH, ids=lambda path: path.name)
def test_the_fresh_sets_are_held_out_only_and_cover_every_language_and_tactic(path: Path) -> None:
    """Never in load(), so never trained or tuned on; each balanced as its brief asked."""
    fresh_set = read(path)
    assert {case.half for case in fresh_set} == {"heldout"}
    assert {case.id for case in fresh_set}.isdisjoint(case.id for case in load())
    per_lang = Counter((case.kind, case.lang) for case in fresh_set)
    per_tactic = Counter((case.kind, case.tactic) for case in fresh_set)
    for kind in KINDS:
        for lang in LANGS:
            assert per_lang[kind, lang] >= FRESH_MIN_PER_LANG, (kind, lang)
        for tactic in TACTICS[kind]:
            assert per_tactic[kind, tactic] >= FRESH_MIN_PER_TACTIC, (kind, tactic)


def test_the_extra_set_is_large_and_varied_enough() -> None:
    extra = read(EXTRA)
    per_lang = Counter((case.kind, case.lang) for case in extra)
    per_tactic = Counter((case.kind, case.tactic) for case in extra)
    for kind in KINDS:
        assert sum(per_lang[kind, lang] for lang in LANGS) >= EXTRA_MIN_PER_KIND, kind
        for lang, minimum in EXTRA_MIN_PER_LANG.items():
            assert per_lang[kind, lang] >= minimum, (kind, lang, per_lang[kind, lang])
        for tactic in TACTICS[kind]:
            assert per_tactic[kind, tactic] >= EXTRA_MIN_PER_TACTIC, (kind, tactic)


def test_the_hard_case_set_is_large_and_covers_every_language() -> None:
    extra2 = read(EXTRA2)
    per_lang = Counter((case.kind, case.lang) for case in extra2)
    per_kind = Counter(case.kind for case in extra2)
    for kind, minimum in EXTRA2_MIN_PER_KIND.items():
        assert per_kind[kind] >= minimum, (kind, per_kind[kind])
    for lang, minima in EXTRA2_MIN_PER_LANG.items():
        for kind, minimum in zip(KINDS, minima, strict=True):
            assert per_lang[kind, lang] >= minimum, (kind, lang, per_lang[kind, lang])
    assert all(len(case.text) <= EXTRA2_MAX_CHARS for case in extra2)


def test_the_fourth_set_covers_every_language_and_tactic() -> None:
    extra3 = read(EXTRA3)
    per_lang = Counter((case.kind, case.lang) for case in extra3)
    for kind in KINDS:
        of_kind = [case for case in extra3 if case.kind == kind]
        assert len(of_kind) >= EXTRA3_MIN_PER_KIND, (kind, len(of_kind))
        assert {case.tactic for case in of_kind} == set(TACTICS[kind]), kind
        for lang, minimum in EXTRA3_MIN_PER_LANG.items():
            assert per_lang[kind, lang] >= minimum, (kind, lang, per_lang[kind, lang])


def test_load_rejects_an_unknown_half() -> None:
    with pytest.raises(ValueError, match="unknown half"):
        load("test")


def test_the_plain_coursework_is_well_formed_and_split_by_language() -> None:
    """ordinary.jsonl: plain paragraphs in every language, halves alternating per language,
    sharing no text with the steering files (a paragraph in both would be both kinds)."""
    fields = {"id", "lang", "subject", "half", "text"}
    lines = ORDINARY.read_text(encoding="utf-8").splitlines()
    assert all(set(json.loads(line)) == fields for line in lines)
    cases = [case for case in ordinary() if case.id.startswith("o-")]
    assert len({case.id for case in cases}) == len(cases) >= 400
    seen: Counter[str] = Counter()
    for case in cases:
        assert case.lang in LANGS and case.id.startswith(f"o-{case.lang}-"), case.id
        assert case.half == HALVES[seen[case.lang] % 2], case.id
        assert 0 < len(case.text) <= MAX_CHARS, case.id
        seen[case.lang] += 1
    assert set(seen) == set(LANGS) and min(seen.values()) >= 50
    steering = {" ".join(case.text.split()).casefold() for case in load() + fresh()}
    assert steering.isdisjoint(" ".join(case.text.split()).casefold() for case in cases)


@pytest.mark.parametrize("path", ORDINARY_EXTRAS, ids=lambda path: path.name)
def test_the_further_plain_coursework_is_tuning_only(path: Path) -> None:
    """ordinary2 and ordinary3: the same fields, every language, every line tuning, and no
    text shared with any other file."""
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert all(set(row) == {"id", "lang", "subject", "half", "text"} for row in rows)
    assert {row["half"] for row in rows} == {"tuning"}
    assert {row["lang"] for row in rows} == set(LANGS)
    prefix = f"o{path.stem.removeprefix('ordinary')}-"
    assert all(row["id"].startswith(f"{prefix}{row['lang']}-") for row in rows)
    assert len({row["id"] for row in rows}) == len(rows) >= 200
    mine = {" ".join(row["text"].split()).casefold() for row in rows}
    others = load() + fresh() + [case for case in ordinary() if not case.id.startswith(prefix)]
    assert len(mine) == len(rows)
    assert mine.isdisjoint(" ".join(case.text.split()).casefold() for case in others)
