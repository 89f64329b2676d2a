"""How well two graders agree: the AI and a teacher, two teachers, or a prediction and a
teacher (bench/). Pure functions over pairs of scores on one scale, so the statistics page,
the calibration benchmark and the tests compute the same numbers the same way.

Scores may be fractional (7.5 of 10). The statistics that need categories (exact and
within-one agreement, quadratic weighted kappa, the confusion table) count in whole points of
the maximum, each score rounded half up as a teacher rounds; the others (mean absolute
difference, Pearson's r, bias) use the scores as they are.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from app.grading.consensus import half_up

#: ``(first, second)``: e.g. (AI score, teacher score), both on the same maximum.
Pair = tuple[float, float]


@dataclass(frozen=True)
class Agreement:
    """Agreement over ``n`` pairs; a statistic is None where it cannot be computed (no pairs,
    or no spread for a correlation)."""

    n: int
    #: Share of pairs on the same whole point, and within one point.
    exact: float | None
    within_one: float | None
    #: Mean absolute difference, in points.
    mad: float | None
    pearson: float | None
    #: Quadratic weighted kappa over whole points 0..maximum (1: perfect, 0: chance).
    qwk: float | None
    #: Mean of first minus second: positive when the first grader (the AI) is more generous.
    bias: float | None


def agreement(pairs: Sequence[Pair], maximum: float) -> Agreement:
    """Every statistic for ``pairs`` scored out of ``maximum``."""
    if not pairs:
        return Agreement(0, None, None, None, None, None, None)
    n = len(pairs)
    points = [(_point(a, maximum), _point(b, maximum)) for a, b in pairs]
    return Agreement(
        n=n,
        exact=sum(a == b for a, b in points) / n,
        within_one=sum(abs(a - b) <= 1 for a, b in points) / n,
        mad=sum(abs(a - b) for a, b in pairs) / n,
        pearson=pearson([a for a, _ in pairs], [b for _, b in pairs]),
        qwk=quadratic_weighted_kappa(
            [a for a, _ in points], [b for _, b in points], 0, _point(maximum, maximum)
        ),
        bias=sum(a - b for a, b in pairs) / n,
    )


def pearson(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """Pearson's correlation; None with fewer than two pairs or when either side is flat."""
    try:
        return max(-1.0, min(1.0, statistics.correlation(xs, ys)))
    except statistics.StatisticsError:  # fewer than two pairs, unequal lengths, or flat
        return None


def quadratic_weighted_kappa(
    first: Sequence[int], second: Sequence[int], low: int, high: int
) -> float | None:
    """Cohen's kappa with quadratic weights over the categories ``low..high``: disagreeing by
    two points costs four times disagreeing by one. 1 is perfect agreement, 0 what chance
    gives; None when there is nothing to compare or both graders gave one single score."""
    if not first or len(first) != len(second) or high <= low:
        return None
    size = high - low + 1
    observed = [[0] * size for _ in range(size)]
    for a, b in zip(first, second, strict=True):
        observed[_clamp(a, low, high) - low][_clamp(b, low, high) - low] += 1
    n = len(first)
    rows = [sum(row) for row in observed]
    cols = [sum(observed[i][j] for i in range(size)) for j in range(size)]
    disagreement = expected = 0.0
    for i in range(size):
        for j in range(size):
            weight = (i - j) ** 2
            disagreement += weight * observed[i][j]
            expected += weight * rows[i] * cols[j] / n
    if expected == 0:
        return None
    return 1 - disagreement / expected


def confusion(pairs: Sequence[Pair], maximum: float) -> list[list[int]]:
    """Counts of ``table[second][first]`` in whole points 0..maximum: rows are the second
    grader's (the teacher's) score, columns the first's (the AI's)."""
    size = _point(maximum, maximum) + 1
    table = [[0] * size for _ in range(size)]
    for a, b in pairs:
        table[_point(b, maximum)][_point(a, maximum)] += 1
    return table


def _point(score: float, maximum: float) -> int:
    """``score`` as a whole point within 0..maximum."""
    return _clamp(int(half_up(score)), 0, int(half_up(maximum)))


def _clamp(value: int, low: int, high: int) -> int:
    return max(low, min(high, value))
