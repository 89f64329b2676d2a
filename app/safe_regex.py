"""Regular expressions written by people (teachers, API clients), run so no text can stall a worker.

Python's engine backtracks: ``(a|a)+$`` takes seconds on 30 characters of ``a`` and hours on an
essay, and no timeout can interrupt it. Every such pattern therefore goes through
:func:`compile_user_pattern`, which compiles it with RE2 (google-re2): matching time is linear
in the text, whatever the pattern. RE2 cannot run what needs backtracking, so backreferences
(``\\1``), lookaround (``(?=``, ``(?<!``), possessive quantifiers (``a++``), atomic groups and
conditionals are refused with a message naming the pattern and the feature. Callers compile
when a pattern is saved, so the refusal reaches the person who typed it, not a grading job.

The syntax is RE2's (https://github.com/google/re2/wiki/Syntax). Where it differs from Python:
``\\w``, ``\\d``, ``\\s`` and ``\\b`` know ASCII only (``\\p{L}`` is any letter), so a ``\\b``
touching an accented letter is refused as it could never work; ``$`` without ``m`` is the very
end of the text (Python's also matches before a final newline); the end of the text is ``\\z``.
Flags are letters: ``i`` (ignore case), ``m`` (``^``/``$`` at lines), ``s`` (``.`` matches a
newline), and ``x``, which drops unescaped blanks and ``#`` comments outside classes first.

Linear is not free, so three bounds apply: the pattern's length; its compiled size (``.{50}``
repeated 20 times is 8,000 steps, each paid on every character when RE2's cache overflows and it
falls back to its slower engine); and RE2's memory (``max_mem``). Counting matches repeats the
search, and one search may read to the end of the text before it finds its match, so
:func:`scan` stops at the count it needs and when the grading's time budget is spent.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol

import re2

#: Flag letters: i (ignore case), m (^ and $ at each line), s (. matches newlines), x (verbose).
FLAGS = frozenset("imsx")
#: Longest pattern accepted, in characters.
MAX_PATTERN_CHARS = 1000
#: Largest compiled program accepted (RE2's ProgramSize): ``\p{L}+`` is 1,202, ``\w{600}`` 1,805.
#: The slow engine pays up to this much per character scanned.
MAX_PROGRAM_SIZE = 2000
#: RE2's memory for one pattern (program and match cache); 4 MiB keeps the fast engine for
#: every pattern under MAX_PROGRAM_SIZE tried, and 128 cached patterns within 512 MiB.
MAX_MEM = 4 << 20
#: Seconds of matching the patterns of one grading may take together (see :class:`Budget`).
SCAN_SECONDS = 5.0

_OPTIONS = re2.Options()
_OPTIONS.max_mem = MAX_MEM
_OPTIONS.log_errors = False  # a refusal is reported to the person, not logged with the pattern

#: The start of what RE2's error message quotes, and the feature it is.
_FEATURES = (
    ("(?<=", "a lookbehind (?<=...)"),
    ("(?<!", "a negative lookbehind (?<!...)"),
    ("(?=", "a lookahead (?=...)"),
    ("(?!", "a negative lookahead (?!...)"),
    ("(?>", "an atomic group (?>...)"),
    ("(?(", "a conditional group (?(...)...)"),
    ("(?P", "a named backreference (?P=name)"),
    ("(?#", "a comment group (?#...) (use the x flag and #)"),
    ("(?x", "the inline flag (?x) (use the x flag instead)"),
    ("(?", "a (?...) form RE2 lacks (it knows (?:...), (?P<name>...) and the flags i, m, s, U)"),
    ("\\k", "a named backreference \\k<name>"),
    ("\\g", "a backreference \\g<...>"),
    ("\\Z", "\\Z (write the end of the text as \\z)"),
    ("\\u", "a \\u escape (write \\x{e9} instead)"),
    ("\\U", "a \\U escape (write \\x{1F600} instead)"),
    ("\\N", "a \\N{...} escape (write \\x{e9} instead)"),
)


class RefusedPattern(ValueError):
    """A pattern that cannot be run safely; the message names it and says why."""


class PatternTimeout(Exception):
    """Matching ran out of its time before the answer was known."""


class Match(Protocol):
    def group(self, group: int = 0) -> str: ...

    def start(self, group: int = 0) -> int: ...

    def end(self, group: int = 0) -> int: ...


class UserPattern(Protocol):
    """What a compiled pattern offers (RE2's class for it is private)."""

    def finditer(self, text: str) -> Iterator[Match]: ...

    def sub(self, repl: object, text: str) -> str: ...


class Budget:
    """Seconds of matching left to the patterns of one grading: shared, so that many patterns
    cannot add up to a stall; only time spent matching counts."""

    def __init__(self, seconds: float | None = None) -> None:
        self.left = SCAN_SECONDS if seconds is None else seconds


@dataclass(frozen=True)
class Scan:
    """Matches found, counted up to what was asked; the first one's text (None: no match)."""

    count: int
    first: str | None


def compile_user_pattern(pattern: str, flags: str = "") -> UserPattern:
    """``pattern`` compiled by RE2 with the flag letters in ``flags``; RefusedPattern otherwise."""
    unknown = sorted(set(flags) - FLAGS)
    if unknown:
        raise RefusedPattern(f"unknown regex flag(s) {''.join(unknown)!r}; use i, m, s or x")
    if len(pattern) > MAX_PATTERN_CHARS:
        raise RefusedPattern(
            f"the regular expression {pattern[:40]!r}… is {len(pattern)} characters long; "
            f"the limit is {MAX_PATTERN_CHARS}"
        )
    source = _without_verbose(pattern) if "x" in flags else pattern
    _refuse_what_re2_misreads(pattern, source)
    inline = "".join(sorted(set(flags) - {"x"}))
    prefix = f"(?{inline})" if inline else ""
    try:
        compiled = re2.compile(prefix + source, _OPTIONS)
    except re2.error as exc:
        raise RefusedPattern(_explain(pattern, exc, prefix)) from None
    if compiled.programsize > MAX_PROGRAM_SIZE:
        raise RefusedPattern(
            f"the regular expression {pattern!r} is too complex: it compiles to "
            f"{compiled.programsize} steps, and the limit is {MAX_PROGRAM_SIZE}; use smaller "
            "repetition counts ({1,50} rather than {1,500}) or fewer \\p{...} classes"
        )
    return compiled


def scan(pattern: UserPattern, text: str, *, enough: int, budget: Budget) -> Scan:
    """Count the matches of ``pattern`` in ``text``, stopping at ``enough`` (at least 1).

    Each search is linear, but each starts where the last match ended and may read to the end
    of the text (``[^b]*c|a`` does on a run of ``a``: counting its 100,000 matches in 100 KB
    takes 8 s). The time taken comes out of ``budget``; PatternTimeout once it is spent.
    """
    started = time.monotonic()
    deadline = started + budget.left
    count, first = 0, None
    try:
        if budget.left <= 0:
            raise PatternTimeout
        for match in pattern.finditer(text):
            count += 1
            if first is None:
                first = match.group(0)
            if count >= enough:
                break
            if time.monotonic() > deadline:
                raise PatternTimeout
    finally:
        budget.left -= time.monotonic() - started
    return Scan(count, first)


def _tokens(pattern: str) -> Iterator[tuple[str, bool]]:
    """The pattern's tokens (an escape, a POSIX class or a class opening is one) and whether
    each is inside a character class, where blanks and ``#`` are literal."""
    at, in_class = 0, False
    while at < len(pattern):
        if pattern[at] == "\\":
            token = pattern[at : at + 2]
        elif in_class and pattern.startswith("[:", at) and ":]" in pattern[at:]:
            token = pattern[at : pattern.index(":]", at) + 2]
        elif not in_class and pattern[at] == "[":
            opening = "[^" if pattern.startswith("[^", at) else "["
            token = opening + ("]" if pattern.startswith("]", at + len(opening)) else "")
        else:
            token = pattern[at]
        yield token, in_class or token.startswith("[")
        if token.startswith("[") and not in_class and not token.startswith("[:"):
            in_class = True
        elif in_class and token == "]":
            in_class = False
        at += len(token)


def _without_verbose(pattern: str) -> str:
    """The x flag as Python reads it: unescaped blanks and ``#`` comments outside classes go."""
    kept: list[str] = []
    comment = False
    for token, in_class in _tokens(pattern):
        if comment:
            comment = token != "\n"
        elif in_class or not (token.isspace() or token == "#"):
            kept.append(token)
        else:
            comment = token == "#"
    return "".join(kept)


def _refuse_what_re2_misreads(pattern: str, source: str) -> None:
    """Refuse what RE2 compiles but would not do what the writer means."""
    tokens = list(_tokens(source))
    for index, (token, in_class) in enumerate(tokens):
        if in_class:
            continue
        if token == "\\C":  # one byte: could split a UTF-8 character
            raise RefusedPattern(
                f"the regular expression {pattern!r} uses \\C (any byte), which is not allowed; "
                "use . instead"
            )
        if token in ("\\b", "\\B"):
            around = [tokens[i][0] for i in (index - 1, index + 1) if 0 <= i < len(tokens)]
            if any(len(t) == 1 and not t.isascii() and t.isalnum() for t in around):
                raise RefusedPattern(
                    f"the regular expression {pattern!r} puts {token} next to a non-ASCII "
                    "letter; the safe pattern engine (RE2) knows only ASCII letters at word "
                    f"boundaries, so it would never match as meant: leave that {token} out"
                )


def _explain(pattern: str, exc: re2.error, prefix: str) -> str:
    """RE2's complaint as a sentence naming the pattern and the unsupported feature; ``prefix``
    (the flags) is left out of what it quotes."""
    raw = exc.args[0] if exc.args else ""
    error = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
    kind, _, quoted = error.partition(": ")
    quoted = quoted.removeprefix(prefix)
    feature = None
    if kind in ("invalid perl operator", "invalid escape sequence"):
        feature = next((name for start, name in _FEATURES if quoted.startswith(start)), None)
    if kind == "invalid escape sequence" and quoted[1:2].isdigit():
        feature = f"a backreference {quoted}"
    elif kind == "bad repetition operator" and quoted.endswith("+") and len(quoted) == 2:
        feature = f"a possessive quantifier {quoted}"
    elif kind == "invalid repetition size":
        feature = f"a repetition count above 1000 {quoted}"
    elif "pattern too large" in error:
        return (
            f"the regular expression {pattern!r} is too complex for the safe pattern engine; "
            "use smaller repetition counts"
        )
    if feature:
        return (
            f"the regular expression {pattern!r} uses {feature}, which the safe pattern engine "
            "(RE2) cannot run; rewrite the pattern without it"
        )
    return f"the regular expression {pattern!r} is invalid: {kind}: {quoted}"
