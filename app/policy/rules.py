"""Static policy rules: deterministic checks that cap a submission's total score.

A *rule* has a code, a message for the student, a fix hint and a cap. **A cap is a fraction of
the maximum score** (0 < cap <= 1): a cap of 0.25 means "the total may not exceed 25% of the
points", which is 25 on the seed's 0..100 scale. Rules are grouped in named *packs* (one per kind
of task); an activity picks a pack and may override caps or switch rules off.

Rules are conservative: a check that cannot be sure returns no evidence, and no evidence means no
finding. When several rules fire, the strictest (lowest) cap applies. The packs are looked up in
:mod:`app.policy.registry`.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace


class PolicyError(Exception):
    """A policy configuration problem, with a message fit for a teacher."""


class UnknownPack(PolicyError):
    pass


class DuplicatePack(PolicyError):
    pass


class InvalidRuleConfig(PolicyError):
    pass


@dataclass(frozen=True)
class Evidence:
    """Where a rule saw the problem: a file and line, or the program output (line None)."""

    source: str
    line: int | None
    snippet: str


@dataclass(frozen=True)
class Finding:
    code: str
    message: str
    fix: str
    cap: float
    evidence: tuple[Evidence, ...]


@dataclass(frozen=True)
class PolicyContext:
    """Everything a rule may look at: the files, and the code judge's verdict when it ran.

    compile_output holds the compiler's messages when it ran; compile_check says how the
    compile verdict was reached (for the provenance: a compiler, or the syntax parser only).
    """

    sources: Mapping[str, str]
    language: str
    program_output: str | None = None
    compile_ok: bool | None = None
    compile_output: str = ""
    compile_check: str = ""


Check = Callable[[PolicyContext], Sequence[Evidence]]


def _validate_cap(code: str, cap: float) -> None:
    if isinstance(cap, bool) or not isinstance(cap, int | float) or not 0 < cap <= 1:
        raise InvalidRuleConfig(
            f"The cap of rule {code} must be a fraction of the maximum score between 0 and 1 "
            f"(0.25 means 25%), not {cap!r}."
        )


@dataclass(frozen=True)
class Rule:
    """needs_compiler: the check reads ``compile_ok``, so a pack run without the judge's
    verdict compiles the program first (see :mod:`app.policy.compiler`)."""

    code: str
    message: str
    fix: str
    cap: float
    check: Check = field(repr=False)
    needs_compiler: bool = False

    def __post_init__(self) -> None:
        _validate_cap(self.code, self.cap)

    def detect(self, context: PolicyContext) -> Finding | None:
        evidence = tuple(self.check(context))
        if not evidence:
            return None
        return Finding(self.code, self.message, self.fix, self.cap, evidence)


@dataclass(frozen=True)
class Pack:
    name: str
    language: str
    description: str
    rules: tuple[Rule, ...]

    def configured(
        self, caps: Mapping[str, float] | None = None, disabled: Collection[str] = ()
    ) -> tuple[Rule, ...]:
        """The pack's rules with an activity's cap overrides applied and disabled rules left out."""
        caps = dict(caps or {})
        known = {rule.code for rule in self.rules}
        unknown = sorted((set(caps) | set(disabled)) - known)
        if unknown:
            raise InvalidRuleConfig(
                f"The policy pack {self.name!r} has no rule {', '.join(unknown)}. "
                f"Known: {', '.join(sorted(known))}."
            )
        return tuple(
            replace(rule, cap=caps[rule.code]) if rule.code in caps else rule
            for rule in self.rules
            if rule.code not in disabled
        )


@dataclass(frozen=True)
class PolicyRun:
    """A pack's findings (strictest cap first) and how the program's compiling was checked,
    which the caller records in the grade's provenance ("" when no rule needed it)."""

    findings: list[Finding]
    compile_check: str


def strictest_cap(findings: Sequence[Finding]) -> float | None:
    """The cap that applies to the total (lowest of all findings), or None when nothing fired."""
    return min((f.cap for f in findings), default=None)
