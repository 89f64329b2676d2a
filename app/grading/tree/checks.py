"""Deterministic tests: answered from the submission alone, in milliseconds, for free.

Each passes (100) or fails (0) and says why in a sentence a student can act on. Text tests
read the main document, or with ``file`` the files whose names match that glob.

Regular expressions come from teachers and API clients and run on students' texts, so they go
through :mod:`app.safe_regex`: RE2 matches in linear time, and a pattern it cannot run (a
backreference, a lookaround...) is refused when the tree is validated, with a message naming it.
A regex scans at most ``max_chars`` characters, and all regexes of one grading share one time
budget (``CheckContext.regex_budget``); a test that runs out of it has no score, so the
submission waits for a teacher rather than being graded on a guess.

A tree stored before RE2 (an activity's or an evaluation's settings) is validated again when it
grades, so a pattern RE2 refuses stops that grading with the same message, through the
strategy-settings error (the submission fails with "the activity's grading settings need fixing
by a teacher", the API evaluation with "the grading strategy's settings are not usable"); it is
never run by another engine, skipped, or counted as passed. Once the teacher rewrites the pattern,
a retry grades it.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Annotated, Literal

from pydantic import Field, StringConstraints, field_validator, model_validator

from app.grading.tree.model import Check, CheckContext, LeafResult, register_test_kind
from app.safe_regex import (
    MAX_PATTERN_CHARS,
    PatternTimeout,
    compile_user_pattern,
    scan,
)

Phrase = Annotated[str, StringConstraints(min_length=1, max_length=1000)]
FileGlob = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=300)]

_WORD = re.compile(r"\w+(?:['’\-]\w+)*")
_EVIDENCE_CHARS = 200


def _passed(ok: bool, reason: str, evidence: str = "") -> LeafResult:
    return LeafResult(100.0 if ok else 0.0, "pass" if ok else "fail", reason, evidence)


def _no_file(pattern: str) -> LeafResult:
    return _passed(False, f"No submitted file matches {pattern!r}.")


def _count(count: int, one: str, many: str) -> str:
    return f"{count} {one if count == 1 else many}"


@register_test_kind
class RegexTest(Check):
    """The text matches a regular expression (or must not, or a number of times)."""

    kind: Literal["regex"] = "regex"
    pattern: str = Field(
        min_length=1,
        max_length=MAX_PATTERN_CHARS,
        description="RE2 syntax: \\w, \\d and \\b are ASCII only; \\p{L} is any letter.",
    )
    flags: str = Field("", description="Letters among i (ignore case), m, s and x.")
    must_match: bool = True
    min_count: int | None = Field(None, ge=0)
    max_count: int | None = Field(None, ge=0)
    file: FileGlob | None = None

    @model_validator(mode="after")
    def _compiles(self) -> RegexTest:
        compile_user_pattern(self.pattern, self.flags)  # RefusedPattern is a ValueError
        counted = self.min_count is not None or self.max_count is not None
        if counted and not self.must_match:
            raise ValueError("use either must_match: false or min_count/max_count, not both")
        low, high = self.min_count, self.max_count
        if low is not None and high is not None and low > high:
            raise ValueError("min_count cannot be larger than max_count")
        return self

    def run(self, ctx: CheckContext) -> LeafResult:
        text = ctx.text_of(self.file)
        if text is None:
            return _no_file(self.file or "")
        low, high = self.min_count or 0, self.max_count
        counted = self.min_count is not None or high is not None
        # Enough matches to decide: one, or one past the maximum, or the minimum.
        enough = high + 1 if high is not None else max(low, 1) if counted else 1
        pattern = compile_user_pattern(self.pattern, self.flags)
        try:
            found = scan(pattern, text[: ctx.max_chars], enough=enough, budget=ctx.regex_budget)
        except PatternTimeout:
            return LeafResult(
                None,
                "error",
                "The pattern could not be checked in the time allowed; a teacher will review it.",
            )
        evidence = (found.first or "")[:_EVIDENCE_CHARS]
        if counted:
            wanted = f"at least {low}" if high is None else f"between {low} and {high}"
            ok = found.count >= low and (high is None or found.count <= high)
            if high is not None and found.count > high:
                count = f"more than {_count(high, 'match', 'matches')}"
            elif high is None and found.count == enough:
                count = f"at least {_count(found.count, 'match', 'matches')}"
            else:
                count = _count(found.count, "match", "matches")
            return _passed(ok, f"Found {count} of the pattern ({wanted} expected).", evidence)
        if self.must_match:
            reason = "The pattern was found." if found.count else "The pattern was not found."
            return _passed(found.count > 0, reason, evidence)
        if found.count:
            return _passed(False, "The pattern appears, which it should not.", evidence)
        return _passed(True, "The pattern does not appear.")


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
        if self.whole_words:
            haystack = _flagged(haystack)
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
        """``phrase`` in ``haystack``, which is :func:`_flagged` for whole words."""
        needle = _normalize(phrase, self.case_sensitive)
        return (_flagged(needle) if self.whole_words else needle) in haystack


_NON_WORD, _WORD_CHAR = "\ufdd0", "\ufdd1"  # Unicode noncharacters: never in a text as such


def _flagged(text: str) -> str:
    """``text`` with each character between two flags saying whether it is a word character
    (Python's ``\\w``), and a non-word flag at both ends: a whole-word phrase is then a plain
    substring of it, found in linear time. (``(?<!\\w)phrase(?!\\w)`` retried the phrase at
    every place: 40 phrases of 1,000 characters took 25 s on 1 MB.)"""
    table = {}
    for char in set(text):
        flag = _WORD_CHAR if char.isalnum() or char == "_" else _NON_WORD
        shown = "\ufffd" if char in (_NON_WORD, _WORD_CHAR) else char
        table[ord(char)] = flag + shown + flag
    return _NON_WORD + text.translate(table) + _NON_WORD


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
