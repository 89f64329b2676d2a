"""From test results to a grade, in steps a teacher can redo by hand.

1. Every test scores 0..100: a check passes (100) or fails (0); an AI test answers 0..100,
   or 100/0 for a pass/fail question.
2. A group scores the weighted average of its children; so does each branch.
3. The three branches combine on a 0..100 scale::

       base    = base branch score                                  (0..100)
       bonus   = bonus weight   × bonus branch score / 100          (0..bonus weight)
       penalty = penalty weight × (100 − penalty branch score) / 100 (0..penalty weight)
       tree score = base + bonus − penalty, kept within 0..100
       grade      = tree score / 100 × the activity's maximum score

A test means the same in every branch: it passes when the work does what it says. In the
penalty branch the tests are rules to respect, and the share of them that fails is deducted.

Worked example (maximum score 10). Base: *Structure* (weight 3) has two equal tests, one
passed and one failed, so it scores 50; *Content* (weight 1) is an AI test answered 80.
Base = (3 × 50 + 1 × 80) / 4 = 57.5. Bonus (weight 10): its only test passed, +10. Penalty
(weight 20): two equal rules, one broken, so the branch scores 50 and costs 20 × 50 / 100 =
10. Tree score = 57.5 + 10 − 10 = 57.5, grade = 5.75 / 10. Had the base scored 95, the
total 95 + 10 − 10 would still be 95; with no penalty it would be 105, kept at 100.

Per test, :func:`leaf_points` gives the same arithmetic in grade points: a base or bonus
test earns its score × its share of the points; a penalty test loses the failing part of its
share (a negative number). Before the 0..100 clamp, these points add up to the grade.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from app.grading.tree.model import Leaf, LeafResult, Tree


@dataclass(frozen=True)
class TreeScore:
    """Points of the 0..100 scale: the base score, the bonus added, the penalty removed."""

    base: float
    bonus: float
    penalty: float

    @property
    def total(self) -> float:
        return max(0.0, min(100.0, self.base + self.bonus - self.penalty))


def branch_score(leaves: list[Leaf], results: Mapping[str, LeafResult], branch: str) -> float:
    """The weighted average of a branch's tests (0..100); shares already carry the weights.
    Every leaf must have a score."""
    scores = [(leaf.share, results[leaf.path].score) for leaf in leaves if leaf.branch == branch]
    return sum(share * score for share, score in scores if score is not None)


def score_tree(
    tree: Tree, leaves: list[Leaf], results: Mapping[str, LeafResult]
) -> TreeScore | None:
    """The tree's score, or None when some test has no score (no guess replaces it)."""
    if any(results[leaf.path].score is None for leaf in leaves):
        return None
    # An absent branch has no leaves and weight 0, so it adds and removes nothing.
    return TreeScore(
        base=branch_score(leaves, results, "base"),
        bonus=tree.branch_weight("bonus") * branch_score(leaves, results, "bonus") / 100,
        penalty=tree.branch_weight("penalty")
        * (100 - branch_score(leaves, results, "penalty"))
        / 100,
    )


def leaf_points(
    tree: Tree, leaf: Leaf, result: LeafResult, max_score: float
) -> tuple[float | None, float]:
    """``(points, at stake)`` in grade points; penalty points are zero or negative."""
    stake = leaf.share * tree.branch_weight(leaf.branch) / 100 * max_score
    if result.score is None:
        return None, stake
    if leaf.branch == "penalty":
        return stake * (result.score - 100) / 100, stake
    return stake * result.score / 100, stake
