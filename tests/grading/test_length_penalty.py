"""The length penalty: the curve between budget and cap, and what gets counted."""

import pytest
from pydantic import ValidationError

from app.grading.length_penalty import LengthPenalty, split_sections


@pytest.mark.parametrize(
    ("count", "expected"),
    [
        pytest.param(0, 0.0, id="empty"),
        pytest.param(5999, 0.0, id="below-budget"),
        pytest.param(6000, 0.0, id="at-budget"),
        pytest.param(7000, 0.5 * 0.5**1.6, id="halfway"),
        pytest.param(7500, 0.5 * 0.75**1.6, id="three-quarters"),
        pytest.param(8000, 0.5, id="at-cap"),
        pytest.param(50_000, 0.5, id="above-cap"),
    ],
)
def test_default_curve(count: int, expected: float) -> None:
    assert LengthPenalty().penalty_for(count) == pytest.approx(expected)


def test_halfway_value_is_the_documented_one() -> None:
    assert LengthPenalty().penalty_for(7000) == pytest.approx(0.16494, abs=1e-5)


def test_exponent_one_is_linear_and_absolute_penalties_work() -> None:
    penalty = LengthPenalty(free_budget=100, max_cap=200, penalty_at_cap=50.0, exponent=1)
    assert [penalty.penalty_for(n) for n in (100, 125, 150, 200)] == [0.0, 12.5, 25.0, 50.0]


def test_higher_exponent_is_gentler_just_past_the_budget() -> None:
    gentle = LengthPenalty(exponent=3).penalty_for(6500)
    steep = LengthPenalty(exponent=1).penalty_for(6500)
    assert gentle < steep


@pytest.mark.parametrize(
    "settings",
    [
        pytest.param({"free_budget": 100, "max_cap": 100}, id="cap-equals-budget"),
        pytest.param({"free_budget": 200, "max_cap": 100}, id="cap-below-budget"),
        pytest.param({"penalty_at_cap": -1}, id="negative-penalty"),
        pytest.param({"exponent": 0}, id="zero-exponent"),
        pytest.param({"counter": "tokens"}, id="unknown-counter"),
        pytest.param({"penalty_type": "INPUT_ONLY"}, id="unknown-type"),
        pytest.param({"count_fn": "len"}, id="code-is-not-a-setting"),
    ],
)
def test_bad_settings_are_rejected(settings: dict) -> None:
    with pytest.raises(ValidationError):
        LengthPenalty(**settings)


def test_split_tagged_text() -> None:
    sections = split_sections("<thinking>step one step two</thinking><output>answer</output>")
    assert sections.thinking == "step one step two"
    assert sections.output == "answer"


def test_plain_text_is_all_output() -> None:
    sections = split_sections("just an answer")
    assert sections.thinking == ""
    assert sections.output == "just an answer"


def test_without_output_tags_the_answer_is_what_is_outside_thinking() -> None:
    sections = split_sections("intro <THINKING>hidden reasoning</Thinking> conclusion")
    assert sections.thinking == "hidden reasoning"
    assert sections.output.split() == ["intro", "conclusion"]


def test_several_sections_are_joined_and_unclosed_tags_are_plain_text() -> None:
    text = "<thinking>a b</thinking><output>c</output><thinking>d</thinking><output>e f"
    sections = split_sections(text)
    assert sections.thinking.split() == ["a", "b", "d"]
    assert sections.output == "c"


TAGGED = "<thinking>one two three four five six</thinking>\n<output>seven eight</output>"


@pytest.mark.parametrize(
    ("penalty_type", "words"),
    [("ALL", 8), ("OUTPUT_ONLY", 2), ("THINKING_ONLY", 6)],
)
def test_word_counts_per_section(penalty_type: str, words: int) -> None:
    assert LengthPenalty(penalty_type=penalty_type).count(TAGGED) == words


def test_tags_themselves_are_not_counted() -> None:
    assert LengthPenalty().count("<output>one</output>") == 1


def test_plain_text_counts_as_output_and_not_as_thinking() -> None:
    text = "a plain answer of seven words here"
    assert LengthPenalty(penalty_type="OUTPUT_ONLY").count(text) == 7
    assert LengthPenalty(penalty_type="THINKING_ONLY").count(text) == 0


def test_character_counter() -> None:
    penalty = LengthPenalty(counter="characters", penalty_type="OUTPUT_ONLY")
    assert penalty.count("<thinking>ignored</thinking><output> abc de </output>") == 6
    assert LengthPenalty(counter="characters").count("abc") == 3
