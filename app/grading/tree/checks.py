"""Deterministic tests: answered from the submission alone, in milliseconds, for free.

Each passes (100) or fails (0) and says why in a sentence a student can act on. Text tests
read the main document, or with ``file`` the files whose names match that glob.

Regular expressions are the one risk: Python's engine backtracks, and a pattern such as
``(\\w+\\s?)+$`` can run for hours on a hostile text. There is no timeout to set, so two
guards apply instead: patterns that repeat (more than 5 times, or without limit) something
that itself repeats without limit are refused at configuration time, unless one of the two
repetitions is possessive (``*+``, ``++``: it never gives back what it took); and a regex
scans at most ``max_chars`` characters of the text. Overlapping alternatives like ``(a|a)+``
are not detected; the length cap is what bounds those.
"""

from __future__ import annotations

import re
import re._constants as sre_constants  # the parse tree is the only way to see nesting
import re._parser as sre_parse
import unicodedata
from collections.abc import Iterator
from typing import Annotated, Any, Literal

from pydantic import Field, StringConstraints, field_validator, model_validator

from app.grading.tree.model import Check, CheckContext, LeafResult, register_test_kind

Phrase = Annotated[str, StringConstraints(min_length=1, max_length=1000)]
FileGlob = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=300)]

_FLAGS = {"i": re.IGNORECASE, "m": re.MULTILINE, "s": re.DOTALL, "x": re.VERBOSE}
#: An outer repetition allowed more times than this, around an unbounded one, is refused.
_MAX_OUTER_REPEAT = 5
_WORD = re.compile(r"\w+(?:['’\-]\w+)*")
_EVIDENCE_CHARS = 200


def _passed(ok: bool, reason: str, evidence: str = "") -> LeafResult:
    return LeafResult(100.0 if ok else 0.0, "pass" if ok else "fail", reason, evidence)


def _no_file(pattern: str) -> LeafResult:
    return _passed(False, f"No submitted file matches {pattern!r}.")


def _count(count: int, one: str, many: str) -> str:
    return f"{count} {one if count == 1 else many}"


def _nested_repeat(items: sre_parse.SubPattern, outer: bool = False) -> bool:
    """True when an unbounded repetition sits inside a large or unbounded one."""
    for op, av in items:
        repeat = op in (sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT)
        if repeat and outer and av[1] == sre_constants.MAXREPEAT:
            return True
        inner_outer = outer or (repeat and av[1] > _MAX_OUTER_REPEAT)
        if any(_nested_repeat(sub, inner_outer) for sub in _subpatterns(av)):
            return True
    return False


def _subpatterns(value: Any) -> Iterator[sre_parse.SubPattern]:
    if isinstance(value, sre_parse.SubPattern):
        yield value
    elif isinstance(value, tuple | list):
        for item in value:
            yield from _subpatterns(item)


@register_test_kind
class RegexTest(Check):
    """The text matches a regular expression (or must not, or a number of times)."""

    kind: Literal["regex"] = "regex"
    pattern: str = Field(min_length=1, max_length=2000)
    flags: str = Field("", description="Letters among i (ignore case), m, s and x.")
    must_match: bool = True
    min_count: int | None = Field(None, ge=0)
    max_count: int | None = Field(None, ge=0)
    file: FileGlob | None = None

    @field_validator("flags")
    @classmethod
    def _known_flags(cls, flags: str) -> str:
        unknown = sorted(set(flags) - set(_FLAGS))
        if unknown:
            raise ValueError(f"unknown regex flag(s) {''.join(unknown)!r}; use i, m, s or x")
        return flags

    @model_validator(mode="after")
    def _compiles(self) -> RegexTest:
        flags = self.compile_flags()
        try:
            re.compile(self.pattern, flags)
        except re.error as exc:
            raise ValueError(f"the regular expression {self.pattern!r} is invalid: {exc}") from None
        if _nested_repeat(sre_parse.parse(self.pattern, flags)):
            raise ValueError(
                f"the regular expression {self.pattern!r} repeats something that itself "
                "repeats (like (a+)+); such patterns can take hours on some texts, so "
                "write it without the nested repetition or make the outer one possessive "
                "(like (a+)++)"
            )
        counted = self.min_count is not None or self.max_count is not None
        if counted and not self.must_match:
            raise ValueError("use either must_match: false or min_count/max_count, not both")
        low, high = self.min_count, self.max_count
        if low is not None and high is not None and low > high:
            raise ValueError("min_count cannot be larger than max_count")
        return self

    def compile_flags(self) -> int:
        flags = 0
        for letter in self.flags:
            flags |= _FLAGS[letter]
        return flags

    def run(self, ctx: CheckContext) -> LeafResult:
        text = ctx.text_of(self.file)
        if text is None:
            return _no_file(self.file or "")
        matches = re.compile(self.pattern, self.compile_flags()).finditer(text[: ctx.max_chars])
        first = next(matches, None)
        count = 0 if first is None else 1 + sum(1 for _ in matches)
        evidence = "" if first is None else first.group(0)[:_EVIDENCE_CHARS]
        found = f"Found {_count(count, 'match', 'matches')} of the pattern"
        if self.min_count is not None or self.max_count is not None:
            low, high = self.min_count or 0, self.max_count
            wanted = f"at least {low}" if high is None else f"between {low} and {high}"
            ok = count >= low and (high is None or count <= high)
            return _passed(ok, f"{found} ({wanted} expected).", evidence)
        if self.must_match:
            reason = f"{found}." if count else "The pattern was not found."
            return _passed(count > 0, reason, evidence)
        reason = f"{found}, which should not appear." if count else "The pattern does not appear."
        return _passed(count == 0, reason, evidence)


def _normalize(text: str, case_sensitive: bool) -> str:
    """Same letters, same spacing: NFC (é typed either way), whitespace runs as one space
    (PDF extraction breaks lines anywhere), and case folded unless asked not to."""
    text = " ".join(unicodedata.normalize("NFC", text).split())
    return text if case_sensitive else text.casefold()


@register_test_kind
class ContainsTest(Check):
    """The text contains all (or any, or none) of some phrases: anywhere, or with
    ``whole_words`` only where no letter or digit touches them ("art" then misses "start")."""

    kind: Literal["contains"] = "contains"
    phrases: list[Phrase] = Field(min_length=1, max_length=200)
    mode: Literal["all", "any", "none"] = "all"
    case_sensitive: bool = False
    whole_words: bool = False
    file: FileGlob | None = None

    @field_validator("phrases")
    @classmethod
    def _not_blank(cls, phrases: list[str]) -> list[str]:
        if any(not phrase.strip() for phrase in phrases):
            raise ValueError("phrases cannot be blank")
        return phrases

    def run(self, ctx: CheckContext) -> LeafResult:
        text = ctx.text_of(self.file)
        if text is None:
            return _no_file(self.file or "")
        haystack = _normalize(text, self.case_sensitive)
        found = [p for p in self.phrases if self._occurs(p, haystack)]
        missing = [p for p in self.phrases if p not in found]
        quoted = ", ".join(f"“{p}”" for p in found)
        if self.mode == "none":
            reason = f"Contains {quoted}, which should not appear." if found else "None appears."
            return _passed(not found, reason, quoted)
        ok = not missing if self.mode == "all" else bool(found)
        if ok:
            return _passed(True, f"Contains {quoted}.", quoted)
        absent = ", ".join(f"“{p}”" for p in missing)
        either = "" if self.mode == "all" else " (any one of them would do)"
        return _passed(False, f"Missing {absent}{either}.", quoted)

    def _occurs(self, phrase: str, haystack: str) -> bool:
        needle = _normalize(phrase, self.case_sensitive)
        if not self.whole_words:
            return needle in haystack
        return re.search(rf"(?<!\w){re.escape(needle)}(?!\w)", haystack) is not None


@register_test_kind
class WordCountTest(Check):
    """The text's length in words is within bounds. A word is a run of letters or digits,
    with inner apostrophes and hyphens (``don't``, ``well-known``) counting as one."""

    kind: Literal["word_count"] = "word_count"
    min: int | None = Field(None, ge=0)
    max: int | None = Field(None, ge=0)
    file: FileGlob | None = None

    @model_validator(mode="after")
    def _bounds(self) -> WordCountTest:
        if self.min is None and self.max is None:
            raise ValueError("word_count needs min, max or both")
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError("min cannot be larger than max")
        return self

    def run(self, ctx: CheckContext) -> LeafResult:
        text = ctx.text_of(self.file)
        if text is None:
            return _no_file(self.file or "")
        count = len(_WORD.findall(text))
        low, high = self.min or 0, self.max
        ok = count >= low and (high is None or count <= high)
        if high is None:
            wanted = f"at least {low}"
        elif self.min is None:
            wanted = f"at most {high}"
        else:
            wanted = f"{low} to {high}"
        return _passed(ok, f"{_count(count, 'word', 'words')} ({wanted} expected).")


@register_test_kind
class FilePresentTest(Check):
    """A file whose name matches a glob (``*.py``, ``report.pdf``) was submitted."""

    kind: Literal["file_present"] = "file_present"
    pattern: FileGlob
    case_sensitive: bool = False

    def run(self, ctx: CheckContext) -> LeafResult:
        names = [f.name for f in ctx.matching(self.pattern, case_sensitive=self.case_sensitive)]
        if not names:
            return _no_file(self.pattern)
        return _passed(True, f"Submitted: {', '.join(names)}.", ", ".join(names))
