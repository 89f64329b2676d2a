"""Agreement statistics, checked against values worked out by hand."""

import pytest

from app.lms.agreement import agreement, confusion, pearson, quadratic_weighted_kappa


def test_kappa_matches_the_hand_computed_value():
    # observed disagreement 2, expected 22/4: 1 - 2 / 5.5
    assert quadratic_weighted_kappa([0, 1, 2, 2], [0, 2, 2, 1], 0, 2) == pytest.approx(1 - 2 / 5.5)


def test_kappa_is_one_for_identical_and_none_without_spread():
    assert quadratic_weighted_kappa([0, 3, 5], [0, 3, 5], 0, 5) == 1
    assert quadratic_weighted_kappa([4, 4], [4, 4], 0, 5) is None
    assert quadratic_weighted_kappa([], [], 0, 5) is None


def test_kappa_below_zero_when_graders_disagree_systematically():
    assert quadratic_weighted_kappa([0, 5], [5, 0], 0, 5) < 0


def test_pearson():
    assert pearson([1, 2, 3], [2, 4, 6]) == pytest.approx(1)
    assert pearson([1, 2, 3], [3, 2, 1]) == pytest.approx(-1)
    assert pearson([1, 1, 1], [1, 2, 3]) is None
    assert pearson([1], [1]) is None


def test_agreement_counts_points_rounded_half_up_and_keeps_raw_differences():
    # AI 7.5 rounds to 8, the teacher's 8: same point; 4 against 6 is two points apart.
    result = agreement([(7.5, 8.0), (4.0, 6.0), (10.0, 9.0)], maximum=10)
    assert result.n == 3
    assert result.exact == pytest.approx(1 / 3)
    assert result.within_one == pytest.approx(2 / 3)
    assert result.mad == pytest.approx((0.5 + 2 + 1) / 3)
    assert result.bias == pytest.approx((-0.5 - 2 + 1) / 3)
    assert result.pearson is not None and result.qwk is not None


def test_agreement_of_nothing_is_all_none():
    empty = agreement([], maximum=10)
    assert empty.n == 0 and empty.exact is None and empty.qwk is None


def test_confusion_rows_are_the_second_grader_columns_the_first():
    table = confusion([(1, 2), (1, 2), (2, 2), (0, 0)], maximum=2)
    assert table == [[1, 0, 0], [0, 0, 0], [0, 2, 1]]
