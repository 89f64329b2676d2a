"""Policy packs are registered explicitly, by name, like the grading plugins; a duplicate or an
unknown name is a named error. The built-in packs are registered at the first lookup.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from app.policy import compiler, sumcalc
from app.policy.rules import (
    DuplicatePack,
    Pack,
    PolicyContext,
    PolicyRun,
    UnknownPack,
)

_packs: dict[str, Pack] = {}
_builtin_loaded = False


def register_pack(pack: Pack) -> None:
    if pack.name in _packs:
        raise DuplicatePack(f"a policy pack named {pack.name!r} is already registered")
    _packs[pack.name] = pack


def _register_builtin() -> None:
    global _builtin_loaded
    if _builtin_loaded:
        return
    _builtin_loaded = True
    register_pack(sumcalc.PACK)


def get_pack(name: str) -> Pack:
    _register_builtin()
    try:
        return _packs[name]
    except KeyError:
        known = ", ".join(sorted(_packs))
        raise UnknownPack(f"There is no policy pack named {name!r}. Known: {known}.") from None


def pack_names() -> list[str]:
    _register_builtin()
    return sorted(_packs)


def check_pack(
    name: str,
    context: PolicyContext,
    *,
    caps: Mapping[str, float] | None = None,
    disabled: Collection[str] = (),
) -> PolicyRun:
    """Findings of every enabled rule, strictest cap first, and how compiling was checked.

    A submission in another language than the pack's gets no findings: the rules cannot read
    it. When a rule needs a compile verdict the caller did not give, the program is compiled
    in the sandbox first (:mod:`app.policy.compiler`).
    """
    pack = get_pack(name)
    rules = pack.configured(caps, disabled)
    if context.language.lower() != pack.language:
        return PolicyRun([], "")
    if any(rule.needs_compiler for rule in rules):
        context = compiler.with_verdict(context)
    findings = [f for rule in rules if (f := rule.detect(context)) is not None]
    return PolicyRun(sorted(findings, key=lambda f: (f.cap, f.code)), context.compile_check)
