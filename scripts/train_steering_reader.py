"""Train the steering reader (app/grading/safety/reader.py) on the corpus's tuning half.

    .venv/bin/python scripts/train_steering_reader.py          # writes reader.json
    .venv/bin/python scripts/train_steering_reader.py --check  # exit 1 if it is stale

Reads the tuning halves only (``training_cases``): the look-alikes and the plain coursework
paragraphs both teach it what to leave alone. The held-out halves are what the reader is
measured on (bench/bench_steering.py) and never reach it. scikit-learn (the test extra) fits
the model; the tool reads the weights it writes with no numerical library. The fit is
deterministic, so ``--check`` (run by the test suite) fails when a tuning set changed and the
weights were not made again.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import zlib
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.grading.cross_check import REMOVED, without  # noqa: E402
from app.grading.runner import ABLATE_ON  # noqa: E402
from app.grading.safety import inspect  # noqa: E402
from app.grading.safety.folding import _Folded  # noqa: E402
from app.grading.safety.reader import (  # noqa: E402
    ANALYZERS,
    MAX_PIECE,
    WEIGHTS,
    Reader,
    word_grams,
)
from tests.steering_corpus import Case, held_out, load, ordinary  # noqa: E402

#: Inverse regularisation and the thresholds (app.grading.safety.reader.Reader), chosen by
#: replaying each tuning set against the rules as they were before it and a reader trained
#: without it (bench/bench_steering_reader.py): FLAG_AT is the lowest at which, with the
#: doubt, no set has more look-alikes held than under the rules alone, and at most 1 % of the
#: plain coursework paragraphs are flagged by a reader trained without their file; then
#: ADDRESSED_AT, for a paragraph that speaks to the grader, the lowest that keeps both.
C = 10.0
FLAG_AT = 0.8
ADDRESSED_AT = 0.6
DOUBT_BELOW = 0.2


def training_cases(leave_out: str | None = None) -> list[Case]:
    """The corpus's tuning half, the tuning half of the plain coursework paragraphs, each
    tuning attempt's own coursework with its steering taken out (``contexts``), and each
    attempt and look-alike inside a plain paragraph (``embedded``).

    ``leave_out``, an id prefix ("j-", "o2-"), leaves one file out of all of these: what a
    replay (bench/bench_steering_reader.py) trains on before it measures that file."""
    cases = [case for case in load("tuning") if not _left_out(case, leave_out)]
    plain = [case for case in ordinary("tuning") if not _left_out(case, leave_out)]
    # Two writers may write the same plain sentence: a context equal to a held-out text
    # would be trained on (the held-out texts are read for this check alone).
    unseen = {case.text for case in held_out()}
    own_work = [case for case in contexts(cases) if case.text not in unseen]
    return cases + plain + own_work + embedded(cases, plain)


#: The id suffix of an ``embedded`` copy.
EMBEDDED = "/embedded"


def embedded(cases: list[Case], plain: list[Case]) -> list[Case]:
    """Each attempt and look-alike again, joined in one paragraph with a plain paragraph of
    its language that fits with it in one piece (which one, and before or after it, chosen
    by its id).

    Students weave one sentence of steering into a paragraph of real work; read whole, the
    work's words outweigh it. Replayed on 17 tuning sets, these copies raised the share of
    attempts caught blind from 87.5 % to 90.4 % on average, and from 70.8 % to 83.9 % on the
    set written that way (extra16), with no set's look-alikes flagged more than by the rules
    alone (bench/bench_steering_reader.py). Look-alikes are joined the same way, so that
    length and plain work teach nothing by themselves."""
    paragraphs: dict[str, list[str]] = {}
    for case in plain:
        paragraphs.setdefault(case.lang, []).append(" ".join(case.text.split()))
    made = []
    for case in cases:
        if case.kind not in ("attempt", "lookalike"):
            continue
        text = " ".join(case.text.split())
        fitting = [work for work in paragraphs[case.lang] if len(work) + len(text) < MAX_PIECE]
        if not fitting:
            continue
        chosen = zlib.crc32(case.id.encode())
        work = fitting[chosen % len(fitting)]
        joined = f"{work} {text}" if chosen % 2 else f"{text} {work}"
        made.append(replace(case, id=f"{case.id}{EMBEDDED}", text=joined))
    return made


def _left_out(case: Case, prefix: str | None) -> bool:
    return prefix is not None and case.id.startswith(prefix)


def contexts(cases: list[Case]) -> list[Case]:
    """The ordinary work around each attempt, as more plain paragraphs: the passages the
    rules flag are taken out as a second grading would take them (app.grading.cross_check).

    Without these, the topics the corpus's writers chose for an attempt's surrounding
    coursework ("photosynthesis", "the French Revolution") are learnt as signs of steering,
    and a plain essay on photosynthesis reads as one."""
    made = []
    for case in cases:
        if case.kind != "attempt":
            continue
        spans = [(f.start, f.end) for f in inspect(case.text, learnt=False) if f.code in ABLATE_ON]
        rest = " ".join(without(case.text, spans)[0].replace(REMOVED, " ").split())
        if spans and len(word_grams(rest)) >= 9:  # five words at least, and their pairs
            made.append(replace(case, id=f"{case.id}/context", kind="context", text=rest))
    return made


def fit(cases: list[Case], c: float = C):
    """The fitted vectorisers (one per feature group) and logistic regression."""
    from scipy.sparse import hstack
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression

    texts = [_Folded(case.text).text for case in cases]
    # The features and their weighing come from the texts as written: an embedded copy
    # repeats a plain paragraph, which would make each of its word pairs seem common.
    written = [text for case, text in zip(cases, texts, strict=True) if EMBEDDED not in case.id]
    vectorizers = {
        name: TfidfVectorizer(analyzer=analyse, sublinear_tf=True, min_df=2).fit(written)
        for name, analyse in ANALYZERS.items()
    }
    features = hstack([v.transform(texts) for v in vectorizers.values()]).tocsr()
    labels = [case.kind == "attempt" for case in cases]
    model = LogisticRegression(C=c, class_weight="balanced", max_iter=5000)
    return vectorizers, model.fit(features, labels)


def weights(cases: list[Case], c: float = C) -> dict:
    """What reader.json holds: the threshold, and each feature's idf and coefficient."""
    vectorizers, model = fit(cases, c)
    coefs = model.coef_[0]
    groups, offset = {}, 0
    for name, vectorizer in vectorizers.items():
        vocabulary = vectorizer.vocabulary_
        groups[name] = {
            gram: [_round(vectorizer.idf_[i]), _round(coefs[offset + i])]
            for gram, i in sorted(vocabulary.items())
        }
        offset += len(vocabulary)
    digest = hashlib.sha256("\n".join(case.text for case in cases).encode()).hexdigest()
    return {
        "trained_on": {"cases": len(cases), "sha256": digest, "C": c},
        "flag_at": FLAG_AT,
        "addressed_at": ADDRESSED_AT,
        "doubt_below": DOUBT_BELOW,
        "intercept": _round(model.intercept_[0]),
        "groups": groups,
    }


def _round(value: float) -> float:
    return float(f"{value:.6g}")


def differences(shipped: dict, made: dict, cases: list[Case], tolerance: float = 0.01) -> list[str]:
    """How ``shipped`` weights differ from freshly ``made`` ones: their settings, their
    features, or a chance on one of ``cases`` by more than ``tolerance`` (another machine's
    numerical libraries may fit each weight a little differently)."""
    settings = ("trained_on", "flag_at", "addressed_at", "doubt_below")
    found = [key for key in settings if shipped[key] != made[key]]
    found += [
        f"{name}: other features"
        for name, grams in made["groups"].items()
        if shipped["groups"].get(name, {}).keys() != grams.keys()
    ]
    if not found:
        old, new = Reader(shipped), Reader(made)
        texts = [_Folded(case.text).text for case in cases]
        found += [
            f"the chance of {case.id}"
            for case, text in zip(cases, texts, strict=True)
            if abs(old.chance(text) - new.chance(text)) > tolerance
        ][:5]
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if reader.json is stale")
    cases = training_cases()
    assert all(case.half == "tuning" for case in cases)
    made = weights(cases)
    if parser.parse_args().check:
        found = differences(json.loads(WEIGHTS.read_text(encoding="utf-8")), made, cases)
        print(f"{WEIGHTS.name} is stale ({', '.join(found)}): run {__file__}" if found else "ok")
        return int(bool(found))
    text = json.dumps(made, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    WEIGHTS.write_text(text + "\n", encoding="utf-8")
    print(f"wrote {WEIGHTS.name}: {len(cases)} tuning cases, {len(text) // 1024} KiB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
