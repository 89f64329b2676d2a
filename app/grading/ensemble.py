"""``ensemble``: two or more grader models, each asked twice (direct and reverse framing),
reconciled by agreement bands, then capped by static policy checks.

Reconciliation (thresholds are parameters; defaults from the design seed, on 0..100):

- each model's total is the mean of its direct and reverse runs (and of its revised grade
  after the optional mutual-critique round); a model whose direct and reverse runs differ by
  more than ``swing`` (15) is less trusted: its lower run stands and it is flagged;
- between models, spread ≤ ``agree`` (5): the rounded mean; ≤ ``disagree`` (15): the lowest;
  beyond: the lowest plus an ``Instability`` flag;
- when a policy check fired, the lowest model total is used whatever the band;
- caps come last: the runner limits the score to the lowest cap of the flags.

Feedback lists policy violations with their fix, then issues every model raised, then the
rest labelled by model.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from app.catalogue import N_
from app.grading.base import (
    Flag,
    GradingInput,
    GradingPlugin,
    GradingResult,
    ModelParams,
    Outcome,
    Progress,
)
from app.grading.code_judge import JudgeSettings, run_judge, sandbox_unavailable
from app.grading.code_judge import feedback as judge_feedback
from app.grading.prompts import DATA_RULES, clip, fence
from app.judge.languages import UnsupportedLanguage
from app.judge.runner import JudgeReport
from app.judge.sandbox import SandboxUnavailable
from app.llm.jsonreply import parse_json_reply
from app.llm.session import LLMSession
from app.policy import PolicyContext, PolicyError, get_pack, run_pack


class Category(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1, max_length=100)
    points: float = Field(gt=0)


DEFAULT_CATEGORIES = (
    Category(name="Syntax & Compilation", points=25),
    Category(name="Logic & Correctness", points=25),
    Category(name="Output & Functionality", points=25),
    Category(name="Style & Documentation", points=25),
)


class EnsembleParams(ModelParams, JudgeSettings):
    models: tuple[str, ...] = Field(
        (), description=N_("Grader models; empty means the activity's model, asked as two graders.")
    )
    categories: tuple[Category, ...] = Field(DEFAULT_CATEGORIES, min_length=1, max_length=12)
    reverse: bool = Field(True, description=N_("Also ask with the reverse framing (stability)."))
    critique: bool = Field(
        False,
        description=N_("Mutual critique: each grader sees the others' grades and may revise."),
    )
    policy: str | None = Field(None, description=N_("A policy pack, e.g. 'sumcalc'."))
    policy_caps: dict[str, float] = Field(
        default_factory=dict, description=N_("Cap overrides by rule code, in percent (0..100].")
    )
    policy_disabled: tuple[str, ...] = Field((), description=N_("Rule codes to switch off."))
    agree: float = Field(5, ge=0, description=N_("Spread (points of 100) to average within."))
    disagree: float = Field(15, ge=0, description=N_("Spread beyond which grades are unstable."))
    swing: float = Field(
        15, ge=0, description=N_("Direct/reverse gap that lowers a model's trust.")
    )
    temperature: float = Field(
        0.1, ge=0, le=0.2, description=N_("At most 0.2: graders must agree.")
    )

    @field_validator("policy")
    @classmethod
    def _known_pack(cls, name: str | None) -> str | None:
        if name is not None:
            try:
                get_pack(name)
            except PolicyError as exc:
                raise ValueError(str(exc)) from exc
        return name

    @model_validator(mode="after")
    def _rules_exist(self) -> EnsembleParams:
        """Overrides must name rules of the chosen pack, with caps in (0, 100]."""
        named = set(self.policy_caps) | set(self.policy_disabled)
        if named and self.policy is None:
            raise ValueError("policy_caps and policy_disabled need a policy pack")
        if named:
            codes = {rule.code for rule in get_pack(self.policy).rules}
            if unknown := sorted(named - codes):
                raise ValueError(f"no rule {', '.join(unknown)} in pack {self.policy!r}")
        if any(not 0 < cap <= 100 for cap in self.policy_caps.values()):
            raise ValueError("caps are percentages of the maximum, above 0 and at most 100")
        return self

    @model_validator(mode="after")
    def _ordered(self) -> EnsembleParams:
        if self.agree > self.disagree:
            raise ValueError("agree must not be larger than disagree")
        return self


@dataclass
class Run:
    """One model's answer to one framing, on 0..100."""

    model: str
    framing: str
    total: float
    categories: dict[str, float]
    issues: list[str]
    reply: str


SYSTEM = f"""\
You grade one student's program against a rubric. Follow the rubric exactly, do not \
speculate, and answer with JSON only.

{DATA_RULES}"""

DIRECT = """\
Assignment:
{instructions}

Rubric categories (points): {categories}

{fenced}

Score each category, then list the concrete issues you found (each one line, citing the \
code). Reply as JSON: {{"categories": {{"<category>": points, ...}}, "issues": ["..."]}}"""

REVERSE = """\
{fenced}

Rubric categories (points): {categories}

Assignment:
{instructions}

Start from full marks in every category and deduct only for problems you can point to in \
the code. Reply as JSON: {{"categories": {{"<category>": points, ...}}, "issues": ["..."]}}"""


CRITIQUE = """\
Assignment:
{instructions}

Rubric categories (points): {categories}

{fenced}

Your earlier grade: {own}
The other graders' grades and issues:
{others}

Check their reasoning against the code. Keep your grade or revise it where they found \
something real that you missed, or where you were wrong. Reply as JSON: \
{{"categories": {{"<category>": points, ...}}, "issues": ["..."]}}"""


class Ensemble(GradingPlugin):
    name: ClassVar[str] = "ensemble"
    description: ClassVar[str] = N_(
        "Two or more grader models, each asked twice; their totals are reconciled by "
        "agreement bands and capped by static policy checks."
    )
    version: ClassVar[str] = "0.1.0"
    file_types: ClassVar[tuple[str, ...]] = ("code", "text", "markdown", "pdf", "docx")
    steps: ClassVar[int] = 3
    Params = EnsembleParams

    def grade(self, job: GradingInput, llm: LLMSession, progress: Progress) -> GradingResult:
        params: EnsembleParams = job.params  # type: ignore[assignment]
        progress(1, self.steps, N_("Running the program and checking it against the rules"))
        try:
            report = _judge(job, params)
        except SandboxUnavailable as exc:  # no grade without the teacher's tests: review
            return sandbox_unavailable(job, exc)
        policy_flags = _policy_flags(params, job, report)
        if not llm.is_configured:
            result = _without_models(job, policy_flags)
        else:
            progress(2, self.steps, N_("Asking the grader models"))
            runs = _ask_all(job, params, llm, report)
            progress(3, self.steps, N_("Reconciling the grades"))
            result = _reconcile(job, params, runs, policy_flags)
        if report is not None:
            result.provenance["judge"] = report.to_dict()
            result.feedback += "\n\n### Automatic tests\n" + judge_feedback(report)
        return result


def _judge(job: GradingInput, params: EnsembleParams) -> JudgeReport | None:
    """Run the teacher's tests when there are any and the file is a program; raises
    SandboxUnavailable when the server cannot run them."""
    if not params.tests:
        return None
    try:
        return run_judge(job, params)
    except UnsupportedLanguage:
        return None


def _policy_flags(
    params: EnsembleParams, job: GradingInput, report: JudgeReport | None
) -> list[Flag]:
    """The pack's findings as capping flags, each with its fix and where it was seen. The
    judge's verdict (did it compile, what it printed) lets rules confirm what they suspect."""
    if not params.policy:
        return []
    sources = {f.name: f.text for f in job.files} or {job.filename: job.text}
    language = _LANGUAGES.get(Path(job.filename).suffix.lower(), "")
    context = PolicyContext(
        sources=sources,
        language=language,
        program_output="\n".join(t.stdout for t in report.tests) if report else None,
        compile_ok=report.compiled if report else None,
    )
    findings = run_pack(
        params.policy,
        context,
        caps={code: cap / 100 for code, cap in params.policy_caps.items()},
        disabled=params.policy_disabled,
    )
    flags = []
    for finding in findings:
        where = "; ".join(
            f"{e.source}:{e.line}: {e.snippet}" if e.line else f"{e.source}: {e.snippet}"
            for e in finding.evidence[:3]
        )
        message = f"{finding.message} Fix: {finding.fix}" + (f" (seen at {where})" if where else "")
        flags.append(Flag(finding.code, message, cap=round(finding.cap * 100, 2)))
    return flags


_LANGUAGES = {".java": "java", ".py": "python", ".c": "c", ".cpp": "cpp", ".js": "javascript"}


def _without_models(job: GradingInput, flags: list[Flag]) -> GradingResult:
    note = N_("Model grading was skipped: no language model is configured.")
    lines = [f"- **{flag.code}**: {flag.message}" for flag in flags] or ["- No rule was broken."]
    return GradingResult(
        outcome=Outcome.NEEDS_REVIEW,
        score=None,
        scale=job.max_score,
        feedback="\n".join(["### Rules", *lines, "", note]),
        flags=[*flags, Flag("ModelsSkipped", note)],
        error=note,
    )


def _ask_all(
    job: GradingInput, params: EnsembleParams, llm: LLMSession, report: JudgeReport | None
) -> list[Run]:
    models = list(params.models) or [job.model or "", job.model or ""]
    framings = ["direct", "reverse"] if params.reverse else ["direct"]
    text, _ = clip(job.text, params.max_chars)
    categories = ", ".join(f"{c.name} ({c.points:g})" for c in params.categories)
    fenced = fence(text, llm.marker(text))
    instructions = job.instructions.strip() or "(no instructions were given)"
    if report is not None:
        instructions += "\n\nResults of running the program on the teacher's tests:\n"
        instructions += judge_feedback(report)

    labels = [
        f"grader {i + 1}" if len(set(models)) < len(models) else model
        for i, model in enumerate(models)
    ]

    def ask(index: int, framing: str, prompt: str) -> Run:
        completion = llm.complete(
            [
                {"role": "system", "content": SYSTEM.format(marker=llm.marker(text))},
                {"role": "user", "content": prompt},
            ],
            model=models[index] or None,
            temperature=params.temperature,
            json_mode=True,
        )
        return _parse_run(labels[index], framing, completion.content, params.categories)

    def first_round(task: tuple[int, str]) -> Run:
        index, framing = task
        template = DIRECT if framing == "direct" else REVERSE
        prompt = template.format(instructions=instructions, categories=categories, fenced=fenced)
        return ask(index, framing, prompt)

    runs = llm.map(first_round, [(i, f) for i in range(len(models)) for f in framings])
    if not params.critique:
        return runs

    def critique(index: int) -> Run:
        prompt = CRITIQUE.format(
            instructions=instructions,
            categories=categories,
            fenced=fenced,
            own=_summary([r for r in runs if r.model == labels[index]]),
            others="\n".join(
                f"- {label}: {_summary([r for r in runs if r.model == label])}"
                for label in dict.fromkeys(labels)
                if label != labels[index]
            ),
        )
        return ask(index, "critique", prompt)

    return runs + llm.map(critique, range(len(models)))


def _summary(runs: list[Run]) -> str:
    usable = [r for r in runs if r.total >= 0]
    if not usable:
        return "no readable grade"
    issues = list(dict.fromkeys(i for r in usable for i in r.issues))[:8]
    total = sum(r.total for r in usable) / len(usable)
    return f"{total:.0f}/100" + (f"; issues: {'; '.join(issues)}" if issues else "")


def _parse_run(model: str, framing: str, reply: str, categories: tuple[Category, ...]) -> Run:
    """A run's scores; a reply that cannot be read counts as no run (total -1 is filtered)."""
    try:
        data = parse_json_reply(reply)
        given = data["categories"]
        scores = {c.name: float(given[c.name]) for c in categories}
    except (ValueError, KeyError, TypeError):
        return Run(model, framing, -1, {}, [], reply)
    if any(not 0 <= scores[c.name] <= c.points for c in categories):
        return Run(model, framing, -1, {}, [], reply)
    total = 100 * sum(scores.values()) / sum(c.points for c in categories)
    issues = [str(i).strip() for i in data.get("issues") or [] if str(i).strip()]
    return Run(model, framing, total, scores, issues, reply)


def _reconcile(
    job: GradingInput, params: EnsembleParams, runs: list[Run], policy_flags: list[Flag]
) -> GradingResult:
    flags = list(policy_flags)
    totals: dict[str, float] = {}
    for model in dict.fromkeys(r.model for r in runs):
        usable = [r.total for r in runs if r.model == model and r.total >= 0]
        framed = [
            r.total for r in runs if r.model == model and r.total >= 0 and r.framing != "critique"
        ]
        if not usable:
            continue
        if framed and max(framed) - min(framed) > params.swing:
            totals[model] = min(framed)
            flags.append(
                Flag(
                    "UnstableGrader",
                    f"{model} changed its grade by more than "
                    f"{params.swing:g} points between framings.",
                )
            )
        else:
            totals[model] = sum(usable) / len(usable)
    provenance: dict[str, Any] = {
        "runs": [
            {
                "model": r.model,
                "framing": r.framing,
                "total": r.total if r.total >= 0 else None,
                "categories": r.categories,
            }
            for r in runs
        ],
        "model_totals": totals,
    }
    raw = [r.reply for r in runs]
    if len(totals) < 2:
        message = N_("Fewer than two graders gave a readable grade; a teacher needs to grade this.")
        return GradingResult(
            Outcome.NEEDS_REVIEW,
            None,
            job.max_score,
            message,
            raw,
            flags=flags,
            provenance=provenance,
            error=message,
        )
    spread = max(totals.values()) - min(totals.values())
    if policy_flags:
        band, final = "policy", min(totals.values())
    elif spread <= params.agree:
        band, final = "agree", round(sum(totals.values()) / len(totals))
    elif spread <= params.disagree:
        band, final = "disagree", min(totals.values())
    else:
        band, final = "unstable", min(totals.values())
        message = N_("The graders differ by %(points)s points.") % {"points": f"{spread:.0f}"}
        flags.append(Flag("Instability", message))
    provenance |= {"band": band, "spread": spread}
    return GradingResult(
        outcome=Outcome.GRADED,
        score=final / 100 * job.max_score,
        scale=job.max_score,
        feedback=_feedback(policy_flags, runs),
        raw_replies=raw,
        flags=flags,
        provenance=provenance,
    )


def _feedback(policy_flags: list[Flag], runs: list[Run]) -> str:
    """Policy violations first, then issues every model raised, then the rest by model."""
    by_model: dict[str, dict[str, str]] = {}
    for run in runs:
        for issue in run.issues:
            by_model.setdefault(run.model, {}).setdefault(_key(issue), issue)
    shared = set.intersection(*(set(issues) for issues in by_model.values())) if by_model else set()
    sections = []
    if policy_flags:
        sections += ["### Must fix", *(f"- **{f.code}**: {f.message}" for f in policy_flags), ""]
    if shared:
        first = next(iter(by_model.values()))
        sections += ["### Both graders noted", *(f"- {first[k]}" for k in sorted(shared)), ""]
    for model, issues in by_model.items():
        own = [text for key, text in issues.items() if key not in shared]
        if own:
            sections += [f"### Also noted by {model}", *(f"- {text}" for text in own), ""]
    return "\n".join(sections).strip() or "No issues were reported."


def _key(issue: str) -> str:
    """Issues are the same when their words are (case, punctuation and spacing aside)."""
    return " ".join(re.findall(r"\w+", issue.lower()))
