"""The compile verdict the static checks read when no teacher test made the judge compile.

The syntax parser alone misses type errors (``int sum = "zero";``, a call to a method that does
not exist), so the program is compiled for real, in the judge's sandbox. A server without the
language's compiler or without a working sandbox falls back to the parser's syntax check, and
``compile_check`` says so: the provenance must not claim a compile that did not happen.
"""

from __future__ import annotations

import logging
import re
from dataclasses import replace
from functools import lru_cache

from app.judge.languages import UnsupportedLanguage
from app.judge.runner import CompilerMissing, compile_only
from app.judge.sandbox import SandboxUnavailable
from app.policy.rules import Evidence, PolicyContext

log = logging.getLogger(__name__)

BY_JUDGE = "compiled by the code judge"
NO_SANDBOX = "syntax only: the sandbox cannot run the compiler on this server"
MAX_EVIDENCE = 3
# javac: "File.java:4: error: ';' expected"; gcc and g++ add a column: "f.c:4:9: error: …".
_ERROR_LINE = re.compile(
    r"^(?P<source>[^:\n]+):(?P<line>\d+):(?:\d+:)? error: (?P<message>.+)$", re.MULTILINE
)


@lru_cache(maxsize=64)
def _compile(files: tuple[tuple[str, str], ...], language: str) -> tuple[bool, str]:
    """Only verdicts are remembered: a missing compiler or sandbox raises, and is retried."""
    return compile_only(dict(files), language)


def with_verdict(context: PolicyContext) -> PolicyContext:
    """``context`` with ``compile_ok`` and the compiler's messages, or, when this server cannot
    compile, unchanged but for a ``compile_check`` that says only the syntax was checked."""
    if context.compile_ok is not None:
        return replace(context, compile_check=context.compile_check or BY_JUDGE)
    try:
        compiled, output = _compile(tuple(sorted(context.sources.items())), context.language)
    except CompilerMissing as exc:
        return replace(context, compile_check=f"syntax only: {exc}")
    except SandboxUnavailable as exc:
        log.warning("static checks compile nothing: %s", exc)
        return replace(context, compile_check=NO_SANDBOX)
    except (UnsupportedLanguage, ValueError) as exc:  # ValueError: an unsafe file name
        return replace(context, compile_check=f"syntax only: the files cannot be compiled ({exc})")
    return replace(
        context,
        compile_ok=compiled,
        compile_output=output,
        compile_check=f"compiled by the {context.language} compiler in the sandbox",
    )


def evidence(output: str) -> list[Evidence]:
    """The compiler's first errors, each with its file and line."""
    return [
        Evidence(m["source"], int(m["line"]), m["message"].strip())
        for m in _ERROR_LINE.finditer(output)
    ][:MAX_EVIDENCE]
