"""The calibration benchmark's vendored data and its pure pieces (bench/bench_calibration.py):
the data loads as the benchmark reads it, a submission is never its own example, and the
prediction is the examples' grades weighted by likeness."""

import random

import pytest

from bench.bench_calibration import (
    DATA,
    GRADES,
    MAXIMUM,
    SKILLS,
    Dataset,
    Grade,
    human_pairs,
    load,
    model_job,
    model_part,
    predict,
    prediction_pairs,
    random_choice,
    rankings,
)
from tests.fakes.llm_server import FakeLLM


@pytest.fixture(scope="module")
def menagerie() -> Dataset:
    return load()


def test_vendored_set_loads_with_its_licence_and_two_graders_everywhere(menagerie):
    assert "MIT License" in (DATA / "LICENSE").read_text()
    assert len(menagerie.items) >= 20
    for item in menagerie.items:
        assert "class " in menagerie.texts[item]
        for skill in SKILLS:
            grades = menagerie.grades[item, skill]
            assert len({g.grader for g in grades}) >= 2
            assert all(0 <= g.points <= MAXIMUM for g in grades)
    assert {key[0] for key in menagerie.grades} == set(menagerie.items)


def test_leave_one_out_never_offers_a_submission_as_its_own_example():
    # The third text repeats the first: the exclusion is by position, not by content.
    texts = ["class Fox extends Animal", "class Rabbit hops", "class Fox extends Animal"]
    ranked = rankings(texts)
    for i, candidates in enumerate(ranked):
        indexes = [j for j, _ in candidates]
        assert sorted(indexes) == [j for j in range(len(texts)) if j != i]
        likeness = [s for _, s in candidates]
        assert likeness == sorted(likeness, reverse=True)
    assert ranked[0][0] == (2, 1.0)  # its twin is the nearest
    chosen = random_choice(ranked, 1, random.Random(0))
    assert all(pick[0][0] != i for i, pick in enumerate(chosen))


def test_model_job_carries_the_chosen_neighbours_never_the_submission(menagerie):
    items = menagerie.items
    ranked = rankings([menagerie.texts[item] for item in items[:8]])
    job = model_job(menagerie, items[0], "Readability", ranked[0][:4])
    assert job.document.text == menagerie.texts[items[0]]
    assert [e.submission_id for e in job.examples] == [j for j, _ in ranked[0][:4]]
    assert all(e.text != job.document.text for e in job.examples)
    first = job.examples[0]
    assert first.text == menagerie.texts[items[first.submission_id]]
    assert abs(first.score - menagerie.consensus(items[first.submission_id], "Readability")) <= 0.5
    assert first.scale == MAXIMUM and "Readability" in job.assignment.instructions
    assert model_job(menagerie, items[0], "Readability", []).examples == ()


def test_prediction_weighs_examples_by_likeness():
    assert predict([(10, 0.9), (0, 0.1)]) == pytest.approx(9)
    assert predict([(10, 1.0), (0, 0.0)]) == 10
    assert predict([(4, 0.0), (8, 0.0)]) == 6  # nothing alike: the plain mean
    assert predict([]) is None


def test_pairs_compare_the_prediction_with_every_grader_and_graders_with_each_other():
    grades = {
        ("a", "Correctness"): [
            Grade("1", GRADES.index("A"), ""),
            Grade("2", 9, ""),
            Grade("3", 7, ""),
        ],
        ("b", "Correctness"): [Grade("1", 2, ""), Grade("4", 4, "")],
    }
    data = Dataset({"a": "class A", "b": "class B"}, grades)
    # a's example is b (consensus 3), b's is a (consensus 9)
    one, consensus = prediction_pairs(data, "Correctness", [[(1, 0.5)], [(0, 0.5)]])
    assert one == [(3, 11), (3, 9), (3, 7), (9, 2), (9, 4)]
    assert consensus == [(3, 9), (9, 3)]
    pairs, against_rest = human_pairs(data, "Correctness")
    assert sorted(pairs) == sorted([(11, 9), (11, 7), (9, 7), (2, 4)])
    assert (11, 8) in against_rest and (2, 4) in against_rest and len(against_rest) == 5


def test_model_part_grades_through_the_runner_with_0_2_4_6_examples(menagerie, monkeypatch, capsys):
    items = menagerie.items[:8]
    small = Dataset(
        {item: menagerie.texts[item][:4000] for item in items},  # short: masking takes time
        {key: grades for key, grades in menagerie.grades.items() if key[0] in items},
    )
    ranked = rankings([small.texts[item] for item in items])
    with FakeLLM() as fake:
        fake.set_default(lambda request: "Clear enough.\n\nFinal score: 9/13")
        monkeypatch.setenv("EVALUAITOR_LLM_BASE_URL", fake.url)
        model_part(small, ranked, count=1, seed=0)
        prompts = [r["messages"][-1]["content"] for r in fake.requests]
    assert len(prompts) == len(SKILLS) * 4
    shown = [sum(f"Example {n}, " in p for n in range(1, 7)) for p in prompts]
    assert shown == [0, 2, 4, 6] * len(SKILLS)
    assert "no score: 0" in capsys.readouterr().out


def test_model_part_says_it_is_skipped_without_a_model(menagerie, monkeypatch, capsys):
    monkeypatch.delenv("EVALUAITOR_LLM_BASE_URL", raising=False)
    model_part(menagerie, [], count=1, seed=0)
    assert "skipped: EVALUAITOR_LLM_BASE_URL is not set" in capsys.readouterr().out
