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

Statistics come from :func:`app.lms.agreement.agreement` (QWK, exact, within one point, mean
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
import os
import random
import sys
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from itertools import combinations
from pathlib import Path
from statistics import mean, pstdev

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.extract.kinds import Kind  # noqa: E402
from app.grading import runner  # noqa: E402
from app.grading.consensus import half_up  # noqa: E402
from app.grading.examples import Candidate, most_similar  # noqa: E402
from app.llm import LLMError, client_from_config  # noqa: E402
from app.llm.session import LLMSession  # noqa: E402
from app.lms.agreement import Agreement, Pair, agreement  # noqa: E402

DATA = Path(__file__).resolve().parents[1] / "tests" / "data" / "menagerie"
#: Menagerie's letter grades, lowest first: a grade's points are its index here.
GRADES = ("F", "D-", "D", "D+", "C-", "C", "C+", "B-", "B", "B+", "A-", "A", "A+", "A++")
MAXIMUM = len(GRADES) - 1
SKILLS = ("Correctness", "Code Elegance", "Readability", "Documentation")
KS = (2, 4, 6)
HEADER = f"{'':<26}{'n':>5} {'QWK':>5} {'exact':>5} {'±1':>5} {'MAD':>5}   QWK vs mean"
#: The assignment as the model is told it (after Menagerie's README).
TASK = """\
Extend the "foxes and rabbits" predator/prey simulator (Objects First with Java) in small
groups. Base tasks: at least five species, at least two predators and two prey; at least two
predators compete for the same food; some species have sexes and breed only when a male and a
female are in neighbouring cells; the simulation keeps the time of day and some species behave
differently at some times. Then one or more challenge tasks, e.g. plants that grow and are
eaten, changing weather that affects the simulation, or disease that spreads. The submission
is the students' own and changed classes; the template's unchanged classes are left out."""
#: What each skill covers, as the graders were told (Menagerie's README).
SKILL_GUIDE = {
    "Correctness": "how well the submission meets the assignment's requirements",
    "Code Elegance": "maintainable code, including the right use of methods and classes",
    "Readability": "readable source: meaningful names, whitespace separating blocks",
    "Documentation": "comments that are well written and organised and explain the code",
}

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


def instructions(skill: str) -> str:
    """The activity's instructions for grading one skill on Menagerie's letter scale."""
    scale = ", ".join(f"{points} = {letter}" for points, letter in enumerate(GRADES))
    return (
        f"{TASK}\n\nGrade only {skill}: {SKILL_GUIDE[skill]}. The score is a letter grade "
        f"as points: {scale}."
    )


def model_job(
    data: Dataset, item: str, skill: str, picked: Sequence[tuple[int, float]]
) -> runner.Job:
    """The grading job of ``item`` on ``skill`` with ``picked`` (indexes into
    ``data.items``) as its examples, each with its graders' mean and comments, as the app
    hands the runner a teacher's graded submissions (the mean to a whole grade, as a teacher
    gives one letter)."""
    items = data.items
    examples = tuple(
        Candidate(
            text=data.texts[items[j]],
            score=half_up(data.consensus(items[j], skill)),
            scale=MAXIMUM,
            feedback="\n".join(f"- {g.comment}" for g in data.grades[items[j], skill] if g.comment),
            submission_id=j,
            kind=Kind.CODE,
            similarity=likeness,
        )
        for j, likeness in picked
    )
    job = runner.Job.for_text(
        "rubric_eval",
        data.texts[item],
        "Submission.java",
        Kind.CODE,
        instructions=instructions(skill),
        max_score=MAXIMUM,
    )
    return replace(job, examples=examples)


def model_part(
    data: Dataset, ranked: Sequence[Sequence[tuple[int, float]]], count: int, seed: int
) -> None:
    """The model's agreement with one grader on ``count`` sampled submissions per skill,
    with 0, 2, 4, 6 of the most similar examples, graded by the app's runner (rubric_eval)."""
    client = client_from_config(os.environ)
    if client is None:
        print("Model part skipped: EVALUAITOR_LLM_BASE_URL is not set, so there is no model")
        print("to ask (set it, and EVALUAITOR_LLM_MODEL, to measure 0, 2, 4, 6 examples).")
        return
    items = data.items
    sample = sorted(random.Random(seed).sample(range(len(items)), count))
    with client:
        model = client.settings.model
        print(f"## Model {model} at {client.settings.base_url}: {count} submissions per skill")
        for skill in SKILLS:
            print(f"### {skill}\n{HEADER}")
            for shots in (0, *KS):
                pairs, unread = [], 0
                for i in sample:
                    session = LLMSession(client, model=model)
                    job = model_job(data, items[i], skill, ranked[i][:shots])
                    try:
                        result = runner.grade(job, session, lambda *_: None)
                    except LLMError as exc:
                        print(f"  {items[i]}: {exc}")
                        result = None
                    if result is None or result.normalized is None:
                        unread += 1
                        continue
                    score = result.normalized * MAXIMUM
                    pairs.extend((score, g.points) for g in data.grades[items[i], skill])
                line = row(f"{shots} examples", agreement(pairs, MAXIMUM))
                print(f"{line}   no score: {unread}")


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
    parser.add_argument("--model-items", type=int, default=12, help="submissions the model grades")
    args = parser.parse_args()
    data = load()
    items = data.items
    ranked = rankings([data.texts[item] for item in items])
    print(f"Menagerie: {len(items)} submissions, grades F..A++ as 0..{MAXIMUM}")
    print("prediction: examples' consensus grades weighted by likeness, rounded half up")
    print(f"random: mean±sd over {args.seeds} seeded draws\n")
    for skill in SKILLS:
        print(f"## {skill} (against one grader; last column: against the graders' mean)")
        print(HEADER)
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
    model_part(data, ranked, args.model_items, seed=15)


if __name__ == "__main__":
    main()
