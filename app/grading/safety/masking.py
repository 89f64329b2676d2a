"""Personal data replaced by placeholders (``[email]``, ``[phone]``, ``[id]``, ``[name]``)
before the model reads a submission.

In code, masking a number could change the program, so there only the numbers that cannot be
program tokens are masked: phones written in blank-separated groups or with a parenthesised
area code, DNIs that no literal or name can be, and ids after a label longer than a
bare "id". Those can only sit in a comment or a string, where they are the student's data.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from app.grading.safety.folding import _Folded
from app.grading.safety.patterns import (
    _DIGITS,
    _DNI,
    _EMAIL,
    _ES_SHAPES,
    _LABELED_ID,
    _PHONE,
    _PLACEHOLDER,
    _UK_SHAPES,
    _UNIT_AFTER,
)
from app.safe_regex import UserPattern, compile_user_pattern

#: Document kinds (``app.extract.Kind`` values) whose numbers are all masked; in other kinds
#: (code) only the numbers that cannot be part of the program are.
PROSE_KINDS = frozenset({"pdf", "docx", "text", "markdown"})


_WRITTEN_GROUPS = re.compile(r"\d[ \t(]|\)")
_LITERAL_SUFFIXES = frozenset("LFD")
_BARE_ID = re.compile(r"id(?![ \t]+(?:number|no\b))[ \t]*(?:[:#=]|n[º°o]\.?)?[ \t]*\d", re.I)


@dataclass(frozen=True)
class MaskingReport:
    counts: dict[str, int]  # replacements by placeholder: "email", "phone", "id", "name"


def _is_phone(m: re.Match[str]) -> bool:
    """Known phone layouts only, so dates, scores, versions, ISBNs and amounts stay."""
    groups = _DIGITS.findall(m.group())
    digits, shape = "".join(groups), tuple(map(len, groups))
    if _UNIT_AFTER.match(m.string, m.end()) or set(groups[1:]) == {"000"}:
        return False
    if m.group().startswith("+"):
        return 8 <= len(digits) <= 15
    if digits.startswith("00"):
        return 11 <= len(digits) <= 15 and len(groups) > 1
    if "." in m.group() and all(len(g) == 3 for g in groups[1:]):
        return False  # 612.345.678 is an amount with thousands separators
    if digits[0] in "6789" and len(digits) == 9:
        return shape in _ES_SHAPES
    if digits[0] == "0":
        return shape in _UK_SHAPES or (shape == (11,) and digits.startswith("07"))
    return shape == (3, 3, 4) and digits[0] != "1" or shape == (1, 3, 3, 4) and digits[0] == "1"


def _is_written_phone(m: re.Match[str]) -> bool:
    """A phone as only a comment or a string holds it: digit groups apart by blanks, or an
    area code in parentheses (``612-345-678`` may be a subtraction)."""
    return _is_phone(m) and _WRITTEN_GROUPS.search(m.group()) is not None


def _not_a_token(m: re.Match[str]) -> bool:
    """A DNI that no program holds as code: ``X1234567Z`` may be a name, ``12345678-Z`` a
    subtraction, ``12345678L`` a long and ``12345678F`` a float."""
    found = m.group()
    return found[0].isdigit() and "-" not in found and found[-1] not in _LITERAL_SUFFIXES


def _long_label(m: re.Match[str]) -> bool:
    """``student id: 1234567`` is data; ``id = 1234567`` in a program is an assignment."""
    return _BARE_ID.match(m.group()) is None


def mask_pii(
    text: str,
    *,
    names: Sequence[str] = (),
    patterns: Sequence[str] = (),
    emails: bool = True,
    phones: bool = True,
    ids: bool = True,
    kind: str = "text",
) -> tuple[str, MaskingReport]:
    """Replace personal data with placeholders, keeping line breaks and punctuation.

    ``names`` (the launch's name, given and family names) match whole words, ignoring case and
    accents. ``patterns`` are extra student-id regexes, run by RE2 like every pattern a person
    writes (:func:`app.safe_regex.compile_user_pattern`, which raises RefusedPattern). Numbers
    (phones, ids, ``patterns``) are all masked only when ``kind`` is one of ``PROSE_KINDS``;
    in code only those that cannot be program tokens are (see the module's note). Masking
    twice gives the same text: placeholders are never matched again.
    """
    counts = dict.fromkeys(("email", "phone", "id", "name"), 0)
    prose = kind in PROSE_KINDS
    steps: list[Callable[[str], str]] = []
    if emails:
        steps.append(_regex_step(_EMAIL, "email", counts))
    if ids:
        steps += [
            _regex_step(_DNI, "id", counts, accept=None if prose else _not_a_token),
            _regex_step(_LABELED_ID, "id", counts, group=1, accept=None if prose else _long_label),
        ]
    if ids and prose:
        steps += [_regex_step(compile_user_pattern(p), "id", counts) for p in patterns]
    if phones:
        accept = _is_phone if prose else _is_written_phone
        steps.append(_regex_step(_PHONE, "phone", counts, accept=accept))
    if name_pattern := _names_pattern(names):
        steps.append(lambda piece: _mask_names(piece, name_pattern, counts))
    for step in steps:
        pieces = _PLACEHOLDER.split(text)  # placeholders at odd indices stay as they are
        pieces[::2] = [step(piece) for piece in pieces[::2]]
        text = "".join(pieces)
    return text, MaskingReport(counts)


def _regex_step(
    pattern: re.Pattern[str] | UserPattern,
    label: str,
    counts: dict[str, int],
    *,
    group: int = 0,
    accept: Callable[[re.Match[str]], bool] | None = None,
) -> Callable[[str], str]:
    def replace(m: re.Match[str]) -> str:
        if not m.group(group) or (accept and not accept(m)):
            return m.group()
        counts[label] += 1
        whole, start, end = m.group(), m.start(group) - m.start(), m.end(group) - m.start()
        return f"{whole[:start]}[{label}]{whole[end:]}"

    return lambda piece: pattern.sub(replace, piece)


def _names_pattern(names: Sequence[str]) -> re.Pattern[str] | None:
    folded = {" ".join(_Folded(name).text.split()) for name in names}
    longest_first = sorted((name for name in folded if len(name) >= 2), key=len, reverse=True)
    if not longest_first:
        return None
    # "Ana_Perez_essay.pdf": an underscore separates words in file and user names
    alternatives = "|".join(r"[\s_]+".join(map(re.escape, name.split())) for name in longest_first)
    return re.compile(rf"(?<![^\W_])(?:{alternatives})(?![^\W_])")


def _mask_names(piece: str, pattern: re.Pattern[str], counts: dict[str, int]) -> str:
    folded, out, last = _Folded(piece), [], 0
    for m in pattern.finditer(folded.text):
        start, end = folded.orig(m.start()), folded.orig(m.end())
        out += [piece[last:start], "[name]" + "\n" * piece.count("\n", start, end)]
        last = end
        counts["name"] += 1
    return "".join(out) + piece[last:]
