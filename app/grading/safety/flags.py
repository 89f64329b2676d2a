"""Flags for the teacher: where a submission tries to instruct the grader, hides text, or
grades itself. Flags never edit the text; ``strip_invisible`` is the one edit, and it only
removes characters a person cannot see.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass

from app.grading.safety import steering
from app.grading.safety.folding import _Folded
from app.grading.safety.patterns import (
    _BIDI,
    _BLANK_RUN,
    _CLAUSE_START,
    _DISCUSSION,
    _INVISIBLE,
    _LONG_BLANK,
    _LOOKALIKES,
    _PHRASES,
    _TAG_RUN,
    _TAG_TO_ASCII,
    _ZERO_WIDTH,
)
from app.grading.safety.reader import reader

#: A first-person subject right before a phrase: no imperative has one.
_OPINION = re.compile(r"\b(?:i|we)(?:'d| would| could| might)(?: \w+)? \Z")
MAX_FLAGS = 20  # a teacher reads them; past this the submission is clearly hostile anyway
_PER_PATTERN = 5  # distinct hits kept per pattern, so one repeated trick cannot hide the others


@dataclass(frozen=True)
class SafetyFlag:
    #: "PromptInjection", "HiddenText", "ScoreClaim", or "QuotedSteering": an order to the
    #: grader that reads as a quotation or a discussion of one (an essay on AI safety).
    code: str
    message: str  # for the teacher
    evidence: str  # the matched snippet, shortened, invisible characters shown as <U+200B>
    #: Where the flagged passage is in the text given to ``inspect``: ``text[start:end]``
    #: (hidden text: its run), so a grading can be tried without it (app.grading.runner).
    start: int
    end: int


def strip_invisible(text: str) -> str:
    """The text without zero-width, bidi and tag characters: what the model is sent."""
    return _INVISIBLE.sub("", text)


def inspect(text: str, *, learnt: bool = True) -> list[SafetyFlag]:
    """Flags for the teacher, at most ``MAX_FLAGS``, one per distinct evidence; never edits.
    ``learnt=False``: the rules alone, without the learnt reader (what it is trained from)."""
    found: dict[tuple[str, str], SafetyFlag] = {}
    for flag in _flags(text, learnt):
        found.setdefault((flag.code, flag.evidence.casefold()), flag)
        if len(found) == MAX_FLAGS:
            break
    return list(found.values())


def _flags(text: str, learnt: bool) -> Iterator[SafetyFlag]:
    hidden = " ".join(_TAG_RUN.findall(text)).translate(_TAG_TO_ASCII)
    yield from _hidden_text(text, hidden)
    yield from _phrases(text, hidden=False, learnt=learnt)
    if hidden.strip():
        run = _TAG_RUN.search(text)
        where = (run.start(), run.end()) if run else None
        yield from _phrases(hidden, hidden=True, learnt=learnt, span=where)


def _hidden_text(text: str, tag_text: str) -> Iterator[SafetyFlag]:
    removed = " They are removed before grading."
    for pattern, what in (
        (_ZERO_WIDTH, "zero-width character(s) that can split words so that filters miss them"),
        (_BIDI, "bidirectional control character(s) that make text show in another order"),
    ):
        if first := pattern.search(text):
            count = pattern.subn("", text)[1]
            snippet = text[max(0, first.start() - 30) : first.end() + 30]
            evidence = _render(snippet)
            yield SafetyFlag("HiddenText", f"{count} {what}.{removed}", evidence, *first.span())
    if tag_text.strip() and (tags := _TAG_RUN.search(text)):
        message = "Unicode tag characters hide text that a model can read but a person cannot."
        yield SafetyFlag("HiddenText", message + removed, _render(tag_text), *tags.span())
    for m in _BLANK_RUN.finditer(text):
        run = m.group()
        if run.count("\n") >= 100 or len(run) - run.rfind("\n") - 1 >= 200:
            message = "Text is pushed out of view by a long run of blank space; the model reads it."
            shown = text[m.start() : m.end() + 80]
            yield SafetyFlag(
                "HiddenText", message, _render(shown), m.start(), m.start() + len(shown)
            )
            return


def _phrases(
    text: str, *, hidden: bool, learnt: bool, span: tuple[int, int] | None = None
) -> Iterator[SafetyFlag]:
    """Phrase flags; hidden text's (``span``: where it hides in the original) point there."""
    folded = _Folded(text)
    discussed = not hidden and _DISCUSSION.search(folded.text) is not None
    read = reader().read(folded.text) if learnt else []  # each paragraph's chance
    flagged: list[tuple[int, int]] = []  # folded spans already flagged by a phrase
    fences = steering.fences(folded.text)
    for code, label, pattern in _PHRASES:
        seen: set[str] = set()
        for m in pattern.finditer(folded.text):
            key = " ".join(m.group().split())
            if key in seen:
                continue
            seen.add(key)
            start, end = folded.orig(m.start()), folded.orig(m.end())
            original = text[start:end]
            disguised = _disguised(original)
            flag_code = code
            if code == "PromptInjection" and _OPINION.search(
                folded.text, max(0, m.start() - 40), m.start()
            ):
                continue  # "I'd give it full marks if I could": an opinion, not an order
            if code == "ScoreClaim" and steering.in_code(folded.text, m.start(), fences):
                continue  # a tutorial's example or a program's output: data, not a claim
            if code == "ScoreClaim" and steering.reported(folded.text, m.start()):
                flag_code = "QuotedSteering"  # "frases como «este trabajo merece un 10»"
                message = f"Text that {label}, reported or given as an example; check it."
            elif code == "ScoreClaim":
                message = f"Text that {label}; an AI grader may take it as its verdict."
            elif (
                hidden
                or disguised
                or not (
                    discussed
                    or _quoted_or_mid_sentence(folded.text, m.start())
                    or steering.reported(folded.text, m.start())  # in single quotes too
                    or steering.staged(folded.text, m.start())  # a character's line
                )
            ):
                message = f"The submission seems to {label}. Check the grade by hand."
            else:
                message = (
                    f"Text that could {label}. It may be a quotation or part of a discussion "
                    "(e.g. an essay on AI safety) rather than an attack; check it in context."
                )
                if steering.reported(folded.text, m.start()):
                    flag_code = "QuotedSteering"  # in quotes, said or given as an example
                else:  # the rules are unsure already: the learnt reader may tip it
                    flag_code, message = _second_opinion(flag_code, message, read, m.span())
            if code != "ScoreClaim":
                flagged.append(m.span())
            if disguised:
                message += " It is disguised with invisible, lookalike or stylised characters."
            message = ("Hidden text: " if hidden else "") + message
            yield SafetyFlag(flag_code, message, _render(original), *(span or (start, end)))
            if len(seen) == _PER_PATTERN:
                break
    for hit in steering.find(folded.text):
        if any(start < hit.end and hit.start < end for start, end in flagged):
            continue  # a phrase already named this passage
        flagged.append((hit.start, hit.end))
        start, end = folded.orig(hit.start), folded.orig(hit.end)
        if hit.code == "ScoreClaim":
            message = f"Text that {hit.label}; an AI grader may take it as its verdict."
        else:
            message = f"The submission seems to {hit.label}. Check the grade by hand."
        code = hit.code
        if not (hidden or hit.disguised):
            code, message = _second_opinion(code, message, read, (hit.start, hit.end))
        message = ("Hidden text: " if hidden else "") + message
        yield SafetyFlag(code, message, _render(text[start:end].strip()), *(span or (start, end)))
    for piece_start, piece_end, chance in read:
        if chance < reader().addressed_at or any(
            start < piece_end and piece_start < end for start, end in flagged
        ):
            continue  # ordinary, or a rule already named something in this paragraph
        if chance < reader().flag_at and not steering.speaks_to_the_grader(
            folded.text, piece_start, piece_end
        ):
            continue  # less sure, of a paragraph that does not speak to the grader
        head = "This paragraph reads like the attempts to steer a grader the tool learnt from "
        if steering.speaks_to_nobody(folded.text, piece_start, piece_end, fences):
            code = "QuotedSteering"
            message = (
                f"{head}({chance:.0%} likely), but it quotes the marking's rules or a program; "
                "the grade is held only if leaving it out changes it."
            )
        else:
            code = "PromptInjection"
            message = f"{head}({chance:.0%} likely), though no rule names it. Check the grade."
        narrowed = reader().narrow(folded.text, piece_start, piece_end)
        start, end = folded.orig(narrowed[0]), folded.orig(narrowed[1])
        message = ("Hidden text: " if hidden else "") + message
        yield SafetyFlag(code, message, _render(text[start:end].strip()), *(span or (start, end)))


def _second_opinion(
    code: str, message: str, read: list[tuple[int, int, float]], span: tuple[int, int]
) -> tuple[str, str]:
    """A class rule's flag (:mod:`~app.grading.safety.steering`) in a paragraph the learnt
    reader finds ordinary is tested, not trusted: it becomes "QuotedSteering", so the grade is
    held only if grading again without the passage moves it (app.grading.runner). A known
    injection phrase is doubted only where the rules already read it as a possible quotation;
    disguised and hidden text, and paragraphs too short to read, never are."""
    if code not in ("PromptInjection", "ScoreClaim") or not read:
        return code, message
    chance = max((c for start, end, c in read if start < span[1] and span[0] < end), default=1.0)
    if chance >= reader().doubt_below:
        return code, message
    return "QuotedSteering", (
        f"{message} The paragraph otherwise reads as ordinary work (the tool's learnt reader "
        f"gives it {chance:.0%}), so the grade is held only if leaving it out changes it."
    )


def _quoted_or_mid_sentence(folded: str, start: int) -> bool:
    line = folded[max(folded.rfind("\n", 0, start) + 1, start - 200) : start]
    if line.count('"') % 2 or line.count("`") % 2:
        return True
    return _CLAUSE_START.search(line) is None


def _disguised(original: str) -> bool:
    """Invisible characters, or letters that only look Latin (Cyrillic "о", fullwidth "ｉ")."""
    return _INVISIBLE.search(original) is not None or any(
        c.isalpha()
        and not c.isascii()
        and (
            unicodedata.normalize("NFKC", c) != c
            or c.casefold().translate(_LOOKALIKES) != c.casefold()
        )
        for c in original
    )


def _render(snippet: str, limit: int = 120) -> str:
    shown = _INVISIBLE.sub(lambda m: f"<U+{ord(m.group()):04X}>", snippet[: 4 * limit])
    shown = " ".join(_LONG_BLANK.sub(lambda m: f" <{len(m.group())} blanks> ", shown).split())
    return shown if len(shown) <= limit else shown[: limit - 1] + "…"
