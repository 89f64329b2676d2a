"""``criteria_tree``: a teacher's tree of weighted criteria, each checked by one test.

Deterministic tests (regex, phrases, word count, files) run first and cost nothing; every
``ai`` test in the tree is then answered by one batched model call (see
:mod:`app.grading.tree.ai`), and the tree is scored as :mod:`app.grading.tree.scoring`
explains: base (0..100) + bonus (up to its weight) − penalty (up to its weight), kept
within 0..100, then scaled to the activity's maximum score. A tree without AI tests never
calls the model, so it grades even where no model is configured.

Example parameters::

    {"tree": {
        "base": {"children": [
            {"name": "Structure", "weight": 3, "children": [
                {"name": "has intro", "test": {"kind": "regex", "pattern": "^#+ *intro",
                                               "flags": "im"}},
                {"name": "length", "test": {"kind": "word_count", "min": 300}}]},
            {"name": "Argument", "test": {"kind": "ai",
                                          "question": "Is the thesis clearly argued?"}}]},
        "bonus": {"weight": 10, "children": [
            {"name": "cites sources", "test": {"kind": "contains",
                                               "phrases": ["references", "bibliography"],
                                               "mode": "any"}}]},
        "penalty": {"weight": 20, "children": [
            {"name": "no placeholder", "test": {"kind": "contains",
                                                "phrases": ["lorem ipsum"], "mode": "none"}}]}
    }}
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field

from app.catalogue import N_
from app.grading.base import (
    CriterionResult,
    GradingInput,
    GradingPlugin,
    GradingResult,
    ModelParams,
    Outcome,
    PlannedCall,
    PluginParams,
    Progress,
)
from app.grading.rubric import Rubric
from app.grading.tree import ai
from app.grading.tree.model import Check, CheckContext, Leaf, LeafResult, Tree
from app.grading.tree.scoring import TreeScore, leaf_points, score_tree
from app.llm.session import LLMSession

BRANCH_TITLES = {"base": "Criteria", "bonus": "Bonus", "penalty": "Penalties"}


class CriteriaTreeParams(ModelParams):
    """``max_chars`` also bounds what regular expressions scan."""

    tree: Tree = Field(description=N_("The weighted criteria and the test of each."))


class CriteriaTree(GradingPlugin):
    name: ClassVar[str] = "criteria_tree"
    description: ClassVar[str] = N_(
        "A tree of weighted criteria (base, bonus, penalty), each checked by a rule "
        "(pattern, phrases, length, files) or by one question to the model; all model "
        "questions share one call."
    )
    version: ClassVar[str] = "1.0.0"
    steps: ClassVar[int] = 3
    Params = CriteriaTreeParams

    @classmethod
    def planned_calls(cls, params: PluginParams, rubric: Rubric | None) -> list[PlannedCall]:
        """One call asks every AI test of the tree; a tree without any makes none."""
        tree: Tree = params.tree  # type: ignore[attr-defined]
        tests = [leaf.test for leaf in tree.leaves() if isinstance(leaf.test, ai.AiTest)]
        if not tests:
            return []
        asked = sum(len(test.question) for test in tests)
        return [PlannedCall(fixed_chars=len(ai.SYSTEM_PROMPT) + len(ai.BATCH_TASK) + asked)]

    def grade(self, job: GradingInput, llm: LLMSession, progress: Progress) -> GradingResult:
        params: CriteriaTreeParams = job.params  # type: ignore[assignment]
        tree = params.tree
        ctx = CheckContext(job, params.max_chars)
        leaves = tree.leaves()

        progress(1, self.steps, N_("Running checks"))
        results: dict[str, LeafResult] = {
            leaf.path: leaf.test.run(ctx) for leaf in leaves if isinstance(leaf.test, Check)
        }
        ai_leaves = [leaf for leaf in leaves if isinstance(leaf.test, ai.AiTest)]
        if ai_leaves:
            progress(
                2, self.steps, N_("Asking the model (%(n)s questions)") % {"n": len(ai_leaves)}
            )
        else:
            progress(2, self.steps, N_("No AI tests: no model call needed"))
        answers = ai.answer(ai_leaves, ctx, llm, temperature=params.temperature)
        results.update(answers.results)

        progress(3, self.steps, N_("Scoring"))
        score = score_tree(tree, leaves, results)
        provenance: dict[str, Any] = {
            "ai_tests": len(ai_leaves),
            "batched": answers.batched,
            "fallback_calls": answers.fallback_calls,
            "tree_score": None if score is None else round(score.total, 2),
            "truncated": any(len(f.text) > params.max_chars for f in ctx.files()),
        }
        criteria = [_criterion(tree, leaf, results[leaf.path], job.max_score) for leaf in leaves]
        feedback = _feedback(tree, leaves, results, score, job.max_score)
        if score is None:
            return GradingResult(
                outcome=Outcome.NEEDS_REVIEW,
                score=None,
                scale=None,
                feedback=feedback,
                raw_replies=answers.replies,
                criteria=criteria,
                provenance=provenance,
                error=_why_unscored(leaves, results),
            )
        provenance["branches"] = {
            "base": round(score.base, 2),
            "bonus": round(score.bonus, 2),
            "penalty": round(score.penalty, 2),
        }
        return GradingResult(
            outcome=Outcome.GRADED,
            score=round(score.total / 100 * job.max_score, 2),
            scale=job.max_score,
            feedback=feedback,
            raw_replies=answers.replies,
            criteria=criteria,
            provenance=provenance,
        )

    def wording(self, job: GradingInput) -> tuple[str, ...]:
        """The tree's questions to the model, and its criteria's names."""
        tree: Tree = job.params.tree  # type: ignore[attr-defined]
        leaves = tree.leaves()
        questions = [leaf.test.question for leaf in leaves if isinstance(leaf.test, ai.AiTest)]
        return (*questions, *(leaf.label for leaf in leaves))

    def rescore(self, job: GradingInput, result: GradingResult, dropped: float) -> None:
        """The tests' points add up to the grade, kept within 0 and the maximum
        (app.grading.tree.scoring)."""
        points = sum(c.score or 0.0 for c in result.criteria)
        result.score = round(max(0.0, min(job.max_score, points)), 2)


def _why_unscored(leaves: list[Leaf], results: dict[str, LeafResult]) -> str:
    """The review reason: the tests without a result, and the scales when a model answer
    was on another one than asked for."""
    off = [leaf.path for leaf in leaves if results[leaf.path].verdict == ai.OFF_SCALE]
    if off:
        return N_(
            "The model answered %(tests)s on another scale than it was asked for. %(why)s"
        ) % {
            "tests": ", ".join(off),
            "why": results[off[0]].reason,
        }
    unanswered = [leaf.path for leaf in leaves if results[leaf.path].score is None]
    return N_(
        "These tests could not give a result: %(tests)s. A teacher needs to review this submission."
    ) % {"tests": ", ".join(unanswered)}


def _points(value: float) -> str:
    return f"{round(value, 2):g}".replace("-", "−")


def _criterion(tree: Tree, leaf: Leaf, result: LeafResult, max_score: float) -> CriterionResult:
    points, stake = leaf_points(tree, leaf, result, max_score)
    return CriterionResult(
        name=leaf.path,
        score=None if points is None else round(points, 2),
        max=round(stake, 2),
        verdict=result.verdict,
        reason=result.reason,
        evidence=result.evidence,
        model_judged=isinstance(leaf.test, ai.AiTest),
    )


def _feedback(
    tree: Tree,
    leaves: list[Leaf],
    results: dict[str, LeafResult],
    score: TreeScore | None,
    max_score: float,
) -> str:
    """Markdown a student reads: the total, then each test by branch with its points."""
    if score is None:
        lines = [
            "**No score yet:** some questions could not be answered by the model, "
            "so a teacher will review this submission."
        ]
    else:
        parts = [f"base {_points(score.base)}"]
        if tree.bonus:
            parts.append(f"bonus +{_points(score.bonus)}")
        if tree.penalty:
            parts.append(f"penalty −{_points(score.penalty)}")
        lines = [
            f"**Score: {_points(score.total / 100 * max_score)} / {_points(max_score)}** "
            f"(criteria: {_points(score.total)} / 100 = {', '.join(parts)})"
        ]
    for branch, title in BRANCH_TITLES.items():
        mine = [leaf for leaf in leaves if leaf.branch == branch]
        if not mine:
            continue
        worth = tree.branch_weight(branch) / 100 * max_score
        if branch == "bonus":
            title += f" (up to +{_points(worth)})"
        elif branch == "penalty":
            title += f" (up to −{_points(worth)})"
        lines += ["", f"### {title}", ""]
        for leaf in mine:
            result = results[leaf.path]
            points, stake = leaf_points(tree, leaf, result, max_score)
            shown = "—" if points is None else _points(points)
            reason = " ".join(result.reason.split())
            lines.append(
                f"- **{result.verdict}** · {leaf.label}: {reason} *({shown} / {_points(stake)})*"
            )
    return "\n".join(lines)
