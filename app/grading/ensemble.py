"""``ensemble``: two or more different grader models, each asked twice (direct and reverse
framing), reconciled by agreement bands, then capped by static policy checks.

The graders must be different models: one model asked twice with the same prompt gets the
same cache key, so its second "opinion" is its first reply again (and even uncached it is the
same judge). The settings refuse fewer than two distinct models, so an activity stored before
this rule fails with a message naming the setting instead of grading with one model.

Reconciliation (thresholds are parameters; defaults from the design seed, on 0..100), done
in :mod:`app.grading.consensus`:

- each model's total is the mean of its direct and reverse runs (its revised grade after the
  optional mutual-critique round counts only with ``critique_in_mean``); a model whose direct
  and reverse runs differ by more than ``swing`` (15) is less trusted: its lower run stands
  and it is flagged;
- between models, spread ≤ ``agree`` (5): the mean rounded half up; ≤ ``disagree`` (15): the
  lowest; beyond: the lowest plus an ``Instability`` flag;
- when a policy check fired, the lowest model total is used whatever the band;
- caps come last: the runner limits the score to the lowest cap of the flags.

Feedback lists policy violations with their fix, each category's points, then the issues
every model raised, then the rest under the name of the model that raised them.

Grounding (app.grading.grounding): every reply quotes, per category it gives points, the
passage of the work that earns them (``"evidence"``, beside the seed's per-category scores,
which keep their shape). The reconciled categories are model-judged; each carries the first
quote that is found in the work among the runs its points come from
(:func:`app.grading.consensus.evidence`). A category left without one loses its points, and
:meth:`Ensemble.rescore` adds the rest up as the reconciliation did (the share of the
categories' points, rounded half up in the agreement band); the runner caps after that.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, ClassVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    field_validator,
    model_validator,
)

from app.catalogue import N_, gettext
from app.grading.base import (
    Flag,
    GradingInput,
    GradingPlugin,
    GradingResult,
    ModelParams,
    Outcome,
    PlannedCall,
    PluginParams,
    Progress,
)
from app.grading.code_judge import JudgeSettings, run_judge, sandbox_unavailable
from app.grading.code_judge import feedback as judge_feedback
from app.grading.consensus import (
    Run,
    category_line,
    category_total,
    half_up,
    parse_run,
    reconcile,
)
from app.grading.grounding import Grounds, Why
from app.grading.prompts import DATA_RULES, clip, examples_block, fence
from app.grading.rubric import Rubric
from app.judge.languages import UnsupportedLanguage
from app.judge.runner import JudgeReport
from app.judge.sandbox import SandboxUnavailable
from app.llm.session import LLMSession
from app.policy import PolicyContext, PolicyError, check_pack, get_pack


class Category(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1, max_length=100)
    points: float = Field(gt=0)


#: Reply cap (tokens) of one grader's run: the scores and a few issues, and a quote for each
#: category (:func:`run_tokens`).
RUN_TOKENS = 200
QUOTE_TOKENS = 60

DEFAULT_CATEGORIES = (
    Category(name="Syntax & Compilation", points=25),
    Category(name="Logic & Correctness", points=25),
    Category(name="Output & Functionality", points=25),
    Category(name="Style & Documentation", points=25),
)


ModelName = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200)]


class EnsembleParams(ModelParams, JudgeSettings):
    models: tuple[ModelName, ...] = Field(
        min_length=2,
        description=N_(
            'Two or more different grader models, e.g. ["model-a", "model-b"]. One model '
            "listed twice is refused: it would give the same grade twice, not a second opinion."
        ),
    )
    categories: tuple[Category, ...] = Field(DEFAULT_CATEGORIES, min_length=1, max_length=12)
    reverse: bool = Field(True, description=N_("Also ask with the reverse framing (stability)."))
    critique: bool = Field(
        False,
        description=N_("Mutual critique: each grader sees the others' grades and may revise."),
    )
    critique_in_mean: bool = Field(
        False,
        description=N_(
            "Count the revised grades of the mutual critique in each grader's mean. Off, the "
            "mean is of the direct and reverse grades and the revisions are only recorded."
        ),
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

    @field_validator("models", mode="before")
    @classmethod
    def _distinct_models(cls, models: object) -> object:
        """Two graders are two judgements only if they are two models (see the module)."""
        if isinstance(models, list | tuple) and all(isinstance(m, str) for m in models):
            names = [m.strip().casefold() for m in models]
            if len(set(names)) < len(names) or len(names) < 2:
                raise ValueError(
                    gettext(
                        "List at least two different grader models, each once: one model "
                        "asked twice gives the same grade twice, not a second opinion."
                    )
                )
        return models

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


#: The examples' placeholders: an issue that copies one filled in the template (a category
#: named "<category>" matches none of the activity's, so it is no score either).
ISSUE_EXAMPLE = "..."
CATEGORY_EXAMPLE = "<category>"
EVIDENCE_EXAMPLE = "the passage of the work that earns these points, copied exactly"
PLACEHOLDERS = (ISSUE_EXAMPLE, CATEGORY_EXAMPLE, EVIDENCE_EXAMPLE)
#: The reply's shape as every framing asks for it (braces doubled for ``str.format``).
REPLY_SHAPE = (
    f'{{{{"categories": {{{{"{CATEGORY_EXAMPLE}": points, ...}}}}, '
    f'"evidence": {{{{"{CATEGORY_EXAMPLE}": "{EVIDENCE_EXAMPLE}", ...}}}}, '
    f'"issues": ["{ISSUE_EXAMPLE}"]}}}}'
)

SYSTEM = f"""\
You grade one student's program against a rubric. Follow the rubric exactly, do not \
speculate, and answer with JSON only. For every category you give points, quote the passage \
of the submission that earns them (a line or a few lines), copied exactly: points without \
such a passage are not counted.

{DATA_RULES}"""

DIRECT = (
    """\
Assignment:
{instructions}

Rubric categories (points): {categories}

{examples}{fenced}

Score each category and, for each one you give points, copy exactly the passage of the \
code that earns them. Then list the concrete issues you found (each one line, citing the \
code). Reply as JSON: """
    + REPLY_SHAPE
)

REVERSE = (
    """\
{examples}{fenced}

Rubric categories (points): {categories}

Assignment:
{instructions}

Start from full marks in every category and deduct only for problems you can point to in \
the code. For the points each category keeps, copy exactly the passage of the code that \
earns them. Reply as JSON: """
    + REPLY_SHAPE
)


CRITIQUE = (
    """\
Assignment:
{instructions}

Rubric categories (points): {categories}

{examples}{fenced}

Your earlier grade: {own}
The other graders' grades and issues:
{others}

Check their reasoning against the code. Keep your grade or revise it where they found \
something real that you missed, or where you were wrong. For each category's points, copy \
exactly the passage of the code that earns them. Reply as JSON: \
"""
    + REPLY_SHAPE
)


class Ensemble(GradingPlugin):
    name: ClassVar[str] = "ensemble"
    description: ClassVar[str] = N_(
        "Two or more different grader models, each asked twice; their totals are reconciled "
        "by agreement bands and capped by static policy checks."
    )
    version: ClassVar[str] = "0.1.0"
    file_types: ClassVar[tuple[str, ...]] = ("code", "text", "markdown", "pdf", "docx")
    steps: ClassVar[int] = 3
    Params = EnsembleParams

    def wording(self, job: GradingInput) -> tuple[str, ...]:
        """The categories the graders score, and the activity's rubric: the graders are not
        shown it, but students may have it to paste into the work."""
        params: EnsembleParams = job.params  # type: ignore[assignment]
        return (*super().wording(job), *(c.name for c in params.categories))

    def rescore(self, job: GradingInput, result: GradingResult, dropped: float) -> None:
        """The categories' points that are left, added up as :func:`reconcile` did (rounded
        half up in the agreement band); each dropped category's feedback line says so. The
        runner applies the policy caps afterwards."""
        params: EnsembleParams = job.params  # type: ignore[assignment]
        chosen: dict[str, float] = result.provenance["categories"]
        kept = dict(chosen)
        for criterion, category in zip(result.criteria, params.categories, strict=True):
            if criterion.score == 0 and half_up(chosen[category.name], 2) > 0:  # dropped
                kept[category.name] = 0.0
                given = chosen[category.name]
                result.feedback = result.feedback.replace(
                    category_line(category, given), category_line(category, 0.0, given), 1
                )
        total = category_total(kept, params.categories)
        if result.provenance["band"] == "agree":
            total = half_up(total)
        result.score = total * job.max_score / 100

    @classmethod
    def planned_calls(cls, params: PluginParams, rubric: Rubric | None) -> list[PlannedCall]:
        """Each model once per framing (direct, and reverse when on), then once more for the
        mutual critique when on."""
        settings: EnsembleParams = params  # type: ignore[assignment]
        framings = [DIRECT, REVERSE] if settings.reverse else [DIRECT]
        if settings.critique:
            framings.append(CRITIQUE)
        return [
            PlannedCall(model, len(SYSTEM) + len(framing))
            for model in settings.models
            for framing in framings
        ]

    def grade(self, job: GradingInput, llm: LLMSession, progress: Progress) -> GradingResult:
        params: EnsembleParams = job.params  # type: ignore[assignment]
        progress(1, self.steps, N_("Running the program and checking it against the rules"))
        try:
            report = _judge(job, params)
        except SandboxUnavailable as exc:  # no grade without the teacher's tests: review
            return sandbox_unavailable(job, exc)
        policy_flags, compile_check = _policy_flags(params, job, report)
        if not llm.is_configured:
            result = _without_models(job, policy_flags)
        else:
            progress(2, self.steps, N_("Asking the grader models"))
            runs = _ask_all(job, params, llm, report)
            progress(3, self.steps, N_("Reconciling the grades"))
            found = Grounds.of(job, self).check
            result = reconcile(
                job, params, runs, policy_flags, lambda quote: found(quote) == Why.VERIFIED
            )
        if compile_check:  # how the rules knew whether it compiles: a compiler, or syntax only
            result.provenance["policy_compile_check"] = compile_check
        if report is not None:
            result.provenance["judge"] = report.to_dict()
            result.feedback += "\n\n### Automatic tests\n" + judge_feedback(report)
        return result


def run_tokens(categories: tuple[Category, ...]) -> int:
    """One run's reply cap: the scores and issues, and a quote per category."""
    return RUN_TOKENS + QUOTE_TOKENS * len(categories)


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
) -> tuple[list[Flag], str]:
    """The pack's findings as capping flags, each with its fix and where it was seen, and how
    the pack knew whether the program compiles. The judge's verdict (did it compile, with
    which messages, what it printed) lets rules confirm what they suspect."""
    if not params.policy:
        return [], ""
    sources = {f.name: f.text for f in job.files} or {job.filename: job.text}
    language = _LANGUAGES.get(Path(job.filename).suffix.lower(), "")
    context = PolicyContext(
        sources=sources,
        language=language,
        program_output="\n".join(t.stdout for t in report.tests) if report else None,
        compile_ok=report.compiled if report else None,
        compile_output=report.compile_output if report else "",
    )
    run = check_pack(
        params.policy,
        context,
        caps={code: cap / 100 for code, cap in params.policy_caps.items()},
        disabled=params.policy_disabled,
    )
    flags = []
    for finding in run.findings:
        where = "; ".join(
            f"{e.source}:{e.line}: {e.snippet}" if e.line else f"{e.source}: {e.snippet}"
            for e in finding.evidence[:3]
        )
        message = f"{finding.message} Fix: {finding.fix}" + (f" (seen at {where})" if where else "")
        flags.append(Flag(finding.code, message, cap=half_up(finding.cap * 100, 2)))
    return flags, run.compile_check


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
    models = list(params.models)
    framings = ["direct", "reverse"] if params.reverse else ["direct"]
    text, _ = clip(job.text, params.max_chars)
    categories = ", ".join(f"{c.name} ({c.points:g})" for c in params.categories)
    marker = llm.marker(text)
    fenced = fence(text, marker)
    examples = examples_block(job.examples, marker, job.max_score)
    examples += "\n\n" if examples else ""
    instructions = job.instructions.strip() or "(no instructions were given)"
    if report is not None:
        instructions += "\n\nResults of running the program on the teacher's tests:\n"
        instructions += judge_feedback(report)

    def ask(model: str, framing: str, prompt: str) -> Run:
        completion = llm.complete(
            [
                {"role": "system", "content": SYSTEM.format(marker=marker)},
                {"role": "user", "content": prompt},
            ],
            model=model,
            temperature=params.temperature,
            max_tokens=llm.reply_cap(run_tokens(params.categories)),
            json_mode=True,
        )
        return parse_run(model, framing, completion.content, params.categories, PLACEHOLDERS)

    def first_round(task: tuple[str, str]) -> Run:
        model, framing = task
        template = DIRECT if framing == "direct" else REVERSE
        prompt = template.format(
            instructions=instructions, categories=categories, examples=examples, fenced=fenced
        )
        return ask(model, framing, prompt)

    runs = llm.map(first_round, [(m, f) for m in models for f in framings])
    if not params.critique:
        return runs

    def critique(model: str) -> Run:
        prompt = CRITIQUE.format(
            instructions=instructions,
            categories=categories,
            examples=examples,
            fenced=fenced,
            own=_summary([r for r in runs if r.model == model]),
            others="\n".join(
                f"- {other}: {_summary([r for r in runs if r.model == other])}"
                for other in models
                if other != model
            ),
        )
        return ask(model, "critique", prompt)

    return runs + llm.map(critique, models)


def _summary(runs: list[Run]) -> str:
    totals = [r.total for r in runs if r.total is not None]
    if not totals:
        return "no readable grade"
    issues = list(dict.fromkeys(i for r in runs for i in r.issues))[:8]
    total = half_up(sum(totals) / len(totals))
    return f"{total:g}/100" + (f"; issues: {'; '.join(issues)}" if issues else "")
