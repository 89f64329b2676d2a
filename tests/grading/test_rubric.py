"""Rubrics load from YAML and JSON, and bad ones say what to fix."""

from __future__ import annotations

import json

import pytest

from app.grading.rubric import RubricError, load_rubric, parse_rubric

YAML = """
title: Lab report
criteria:
  - name: Hypothesis
    requirement: States a testable hypothesis.
    weight: 10
  - name: Method
    requirement: Describes the method so it can be repeated.
    weight: 5
  - name: Plagiarism
    requirement: Copies text without citing it.
    weight: -3
"""


def test_yaml_and_json_give_the_same_rubric(tmp_path):
    (tmp_path / "r.yaml").write_text(YAML)
    from_yaml = load_rubric(tmp_path / "r.yaml")
    (tmp_path / "r.json").write_text(json.dumps(from_yaml.model_dump()))
    assert load_rubric(tmp_path / "r.json") == from_yaml
    assert [c.weight for c in from_yaml.criteria] == [10, 5, -3]
    assert from_yaml.total_positive_weight == 15


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"criteria": []}, "criteria"),
        ([{"name": "A", "requirement": "x", "weight": 0}], "weight of 0"),
        ([{"name": "A", "requirement": "x", "weight": -1}], "positive weight"),
        ([{"name": "A", "requirement": "x", "weight": 1}] * 2, "unique"),
        ([{"name": "A", "requirement": "x", "weight": "ten"}], "criterion 1"),
        ([{"name": "A", "requirement": "x", "weight": 1, "colour": "red"}], "colour"),
    ],
)
def test_bad_rubrics_are_explained(data, message):
    with pytest.raises(RubricError) as error:
        parse_rubric(data)
    assert message in str(error.value)


def test_unreadable_files_are_explained(tmp_path):
    (tmp_path / "bad.yaml").write_text("criteria: [unclosed")
    with pytest.raises(RubricError, match="not valid YAML"):
        load_rubric(tmp_path / "bad.yaml")
    with pytest.raises(RubricError, match="Cannot read"):
        load_rubric(tmp_path / "missing.json")
