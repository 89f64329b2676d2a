"""Names and short texts that users or other systems supply, made safe to show.

A file name, a student's name from the LMS, an activity title, a platform's or an
organization's name, a rubric criterion: any of them may carry characters that change how
the text around them *looks* without being visible themselves. ``essay\\u202efdp.exe``
(U+202E, right-to-left override) reads as ``essayexe.pdf``; zero-width characters make two
different names look alike. The rule, decided once here:

- format characters (Unicode category Cf: bidi overrides, embeddings and isolates, the
  LRM/RLM/ALM marks, zero-width spaces and joiners, the BOM, soft hyphens, tag characters),
  private-use (Co), surrogates (Cs) and unassigned code points (Cn) are removed;
- control characters (Cc) and line or paragraph separators become a space in a one-line
  name (a multi-line text keeps its line breaks and tabs);
- the result is NFC-normalised, blanks are collapsed and trimmed, and a name is cut to a
  length limit.

Names are cleaned where they enter (an upload's file name, an organization's name) and again
where they are shown (the ``clean_name`` template filter, the CSV export, the API's
documents), so rows stored before this rule are shown safely without a migration.

The grading safety checks (:mod:`app.grading.safety`) look at a *document's* text, where they
flag hidden characters instead of silently removing them; this module is about labels.
"""

from __future__ import annotations

import unicodedata
from pathlib import PurePosixPath

#: Longest name kept (characters); file names are stored in 255.
NAME_MAX_CHARS = 255
#: Categories removed outright: format, private use, surrogates, unassigned.
_REMOVED = frozenset({"Cf", "Co", "Cs", "Cn"})
#: Categories that end a line; in a one-line name they become a space.
_BREAKS = frozenset({"Cc", "Zl", "Zp"})
#: Controls a multi-line text keeps.
_KEPT_CONTROLS = frozenset("\n\t")


def clean_name(value: object, limit: int = NAME_MAX_CHARS) -> str:
    """``value`` as one line of plain, visible text, at most ``limit`` characters."""
    if value is None:
        return ""
    kept = []
    for char in str(value):
        category = unicodedata.category(char)
        if category in _BREAKS:
            kept.append(" ")
        elif category not in _REMOVED:
            kept.append(char)
    name = " ".join(unicodedata.normalize("NFC", "".join(kept)).split())
    return name[:limit].rstrip()


def clean_text(value: str | None) -> str:
    """A multi-line text (e.g. a comment for the gradebook) without hidden characters: the
    same rule as :func:`clean_name`, but line breaks and tabs stay and nothing is cut."""
    if not value:
        return ""
    kept = []
    for char in value.replace("\r\n", "\n").replace("\r", "\n"):
        category = unicodedata.category(char)
        if char in _KEPT_CONTROLS:
            kept.append(char)
        elif category in ("Zl", "Zp"):
            kept.append("\n")
        elif category not in _REMOVED and category != "Cc":
            kept.append(char)
    return unicodedata.normalize("NFC", "".join(kept))


def reveal_hidden(value: str | None) -> str:
    """A text shown as evidence of exactly what was sent or received (a prompt, a model's
    reply): every character the rule above would remove is written out as a visible
    ``[U+202E]`` instead, so nothing is hidden and nothing is silently dropped."""
    if not value:
        return ""
    return "".join(
        f"[U+{ord(char):04X}]"
        if unicodedata.category(char) in _REMOVED
        or (unicodedata.category(char) == "Cc" and char not in "\n\r\t")
        else char
        for char in value
    )


def clean_filename(raw: str | None, limit: int = NAME_MAX_CHARS) -> str:
    """An uploaded file's name as stored and shown: no folders (from either kind of slash),
    cleaned like a name, and cut in its stem so the extension survives; "" if nothing is left.
    """
    name = clean_name(PurePosixPath((raw or "").replace("\\", "/")).name, limit=len(raw or ""))
    if len(name) <= limit:
        return name
    suffix = PurePosixPath(name).suffix[:limit]
    return name[: limit - len(suffix)].rstrip() + suffix
