"""How well do the calibration examples the app would pick predict a human grade?

On Menagerie (tests/data/menagerie/: Java CS1 submissions, each graded by several people on
four skills, letter grades F..A++ read as points 0..13), leave-one-out per skill: for each
submission, the k most similar *other* submissions by :func:`app.grading.examples.most_similar`
(what a grading prompt would carry), and their grades alone predict its grade. Printed per
skill, against each of the submission's graders (one human, as a teacher is one) and against
their consensus (the mean):

- retrieval with k = 1 (the nearest's grade), 2, 4, 6: the prediction is the examples' grades
  (each the mean of its graders, as one example carries one score) weighted by likeness;
- random k examples with the same rule, mean ± standard deviation over ``--seeds`` draws, so
  what the likeness adds shows;
- human–human on the same submissions (every pair of graders; and each grader against the
  others' mean), the ceiling.

Statistics come from :func:`app.agreement.agreement` (QWK, exact, within one point, mean
absolute difference). With ``EVALUAITOR_LLM_BASE_URL`` set, the model grades a sample with 0,
2, 4, 6 examples through the app's own runner as well; without it that part is skipped and
says so.

    .venv/bin/python bench/bench_calibration.py [--seeds 200] [--model-items 12]
"""

from __future__ import annotations

import argparse
import csv
import json
import lzma
import random
import sys
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from statistics import mean, pstdev

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.agreement import Agreement, Pair, agreement  # noqa: E402
from app.grading.examples import most_similar  # noqa: E402

DATA = Path(__file__).resolve().parents[1] / "tests" / "data" / "menagerie"
#: Menagerie's letter grades, lowest first: a grade's points are its index here.
GRADES = ("F", "D-", "D", "D+", "C-", "C", "C+", "B-", "B", "B+", "A-", "A", "A+", "A++")
MAXIMUM = len(GRADES) - 1
SKILLS = ("Correctness", "Code Elegance", "Readability", "Documentation")
KS = (2, 4, 6)

#: ``(query, candidates, k) -> [(index, similarity)]``, most similar first.
Ranker = Callable[[str, Sequence[str], int], list[tuple[int, float]]]
#: An example as the prediction sees it: (its grade, its likeness to the submission).
Example = tuple[float, float]


@dataclass(frozen=True)
class Grade:
    grader: str
    points: int
    comment: str


@dataclass(frozen=True)
class Dataset:
    """Submissions (their Java files as one text, each file headed by its name) and their
    grades by (submission, skill)."""

    texts: dict[str, str]
    grades: dict[tuple[str, str], list[Grade]]

    @property
    def items(self) -> list[str]:
        return sorted(self.texts)

    def consensus(self, item: str, skill: str) -> float:
        """The mean of the item's grades on ``skill``: the one score an example carries."""
        return mean(g.points for g in self.grades[item, skill])


def load(directory: Path = DATA) -> Dataset:
    """The vendored set as written by bench/cut_menagerie.py."""
    files = json.loads(lzma.decompress((directory / "submissions.json.xz").read_bytes()))
    texts = {item: join_files(sources) for item, sources in files.items()}
    grades: dict[tuple[str, str], list[Grade]] = defaultdict(list)
    with (directory / "grades.csv").open(encoding="utf-8", newline="") as rows:
        for row in csv.DictReader(rows):
            grade = Grade(row["grader"], GRADES.index(row["grade"]), row["comment"])
            grades[row["item"], row["skill"]].append(grade)
    return Dataset(texts, dict(grades))


def join_files(sources: dict[str, str]) -> str:
    """A submission's files as one text, each after a line naming it, as a prompt shows them."""
    return "\n\n".join(f"// File: {name}\n{text}" for name, text in sorted(sources.items()))


def rankings(texts: Sequence[str], rank: Ranker = most_similar) -> list[list[tuple[int, float]]]:
    """For each text, every *other* text as ``(index, likeness)``, most similar first: the
    leave-one-out candidates, so a submission is never its own example."""
    ranked = []
    for i, text in enumerate(texts):
        others = [j for j in range(len(texts)) if j != i]
        order = rank(text, [texts[j] for j in others], len(others))
        ranked.append([(others[n], likeness) for n, likeness in order])
    return ranked


def predict(examples: Sequence[Example]) -> float | None:
    """The examples' grades weighted by likeness (plainly averaged when none is alike at
    all); None without examples. agreement() rounds it half up to a whole point."""
    if not examples:
        return None
    total = sum(likeness for _, likeness in examples)
    if total == 0:
        return mean(score for score, _ in examples)
    return sum(score * likeness for score, likeness in examples) / total


def prediction_pairs(
    data: Dataset, skill: str, chosen: Sequence[Sequence[tuple[int, float]]]
) -> tuple[list[Pair], list[Pair]]:
    """(prediction, one grader's points) for every grade, and (prediction, consensus) per
    submission, where ``chosen[i]`` are the examples picked for ``data.items[i]``."""
    items = data.items
    one, consensus = [], []
    for item, picked in zip(items, chosen, strict=True):
        guess = predict([(data.consensus(items[j], skill), s) for j, s in picked])
        if guess is None:
            continue
        one.extend((guess, g.points) for g in data.grades[item, skill])
        consensus.append((guess, data.consensus(item, skill)))
    return one, consensus


def human_pairs(data: Dataset, skill: str) -> tuple[list[Pair], list[Pair]]:
    """Every pair of graders of a submission, and each grader against the others' mean."""
    pairs, against_rest = [], []
    for item in data.items:
        grades = data.grades[item, skill]
        pairs.extend((a.points, b.points) for a, b in combinations(grades, 2))
        for g in grades:
            rest = [o.points for o in grades if o is not g]
            against_rest.append((g.points, mean(rest)))
    return pairs, against_rest


def random_choice(
    ranked: Sequence[Sequence[tuple[int, float]]], k: int, generator: random.Random
) -> list[list[tuple[int, float]]]:
    """``k`` of each submission's leave-one-out candidates at random, likeness kept."""
    return [generator.sample(list(candidates), k) for candidates in ranked]


def row(label: str, one: Agreement, consensus: Agreement | None = None) -> str:
    """One table line: agreement with one grader, then QWK with the consensus."""
    cells = [one.qwk, one.exact, one.within_one, one.mad]
    text = " ".join("    -" if v is None else f"{v:5.2f}" for v in cells)
    against = "    -" if consensus is None or consensus.qwk is None else f"{consensus.qwk:5.2f}"
    return f"{label:<26}{one.n:>5} {text}   {against}"


def random_row(label: str, runs: list[tuple[Agreement, Agreement]]) -> str:
    """The random choice's line: each statistic's mean ± standard deviation over the draws."""

    def spread(values: list[float | None]) -> str:
        known = [v for v in values if v is not None]
        return f"{mean(known):5.2f}±{pstdev(known):4.2f}" if known else "    -"

    cells = [
        spread([getattr(one, name) for one, _ in runs])
        for name in ("qwk", "exact", "within_one", "mad")
    ]
    return f"{label:<26}{runs[0][0].n:>5} {' '.join(cells)} {spread([c.qwk for _, c in runs])}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=200, help="draws of the random choice")
    args = parser.parse_args()
    data = load()
    items = data.items
    ranked = rankings([data.texts[item] for item in items])
    print(f"Menagerie: {len(items)} submissions, grades F..A++ as 0..{MAXIMUM}")
    print("prediction: examples' consensus grades weighted by likeness, rounded half up")
    print(f"random: mean±sd over {args.seeds} seeded draws\n")
    header = f"{'':<26}{'n':>5} {'QWK':>5} {'exact':>5} {'±1':>5} {'MAD':>5}   QWK vs mean"
    for skill in SKILLS:
        print(f"## {skill} (against one grader; last column: against the graders' mean)")
        print(header)
        for k in (1, *KS):
            one, consensus = prediction_pairs(data, skill, [r[:k] for r in ranked])
            label = "nearest example" if k == 1 else f"{k} most similar"
            print(row(label, agreement(one, MAXIMUM), agreement(consensus, MAXIMUM)))
        for k in KS:
            runs = []
            for seed in range(args.seeds):
                chosen = random_choice(ranked, k, random.Random(seed))
                one, consensus = prediction_pairs(data, skill, chosen)
                runs.append((agreement(one, MAXIMUM), agreement(consensus, MAXIMUM)))
            print(random_row(f"{k} at random", runs))
        pairs, against_rest = human_pairs(data, skill)
        print(row("human vs human", agreement(pairs, MAXIMUM), agreement(against_rest, MAXIMUM)))
        print()


if __name__ == "__main__":
    main()
