"""Text as the patterns see it: compatibility forms, no accents, lower case, Latin lookalikes
for Cyrillic/Greek letters, invisible characters removed; so "ig<U+200B>nоre" (with a Cyrillic
o) still reads "ignore". Offsets map back, so a match can be shown in the original text.
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_right
from functools import lru_cache

from app.grading.safety.patterns import _ASCII_LOWER, _LOOKALIKES


@lru_cache(maxsize=4096)
def _fold_char(char: str) -> str:
    """One character as the patterns see it, so disguised letters read as the plain ones."""
    if unicodedata.category(char) in ("Cf", "Mn", "Me"):
        return ""
    kept = "".join(c for c in unicodedata.normalize("NFKD", char) if not unicodedata.combining(c))
    folded = unicodedata.normalize("NFC", kept).casefold().translate(_LOOKALIKES)
    return " " if folded.isspace() else folded


class _Folded:
    """Text folded for matching, and the way back from a folded offset to the original."""

    def __init__(self, text: str) -> None:
        table = {ord(c): _fold_char(c) for c in set(text) if not c.isascii()} | _ASCII_LOWER
        self.text = text.translate(table)
        self._folded, self._orig = [0], [0]  # offsets where the two texts' alignment changes
        resized = "".join(chr(c) for c, folded in table.items() if len(folded) != 1)
        shift = 0
        for m in re.finditer(f"[{re.escape(resized)}]", text) if resized else ():
            self._folded.append(m.start() + shift)
            self._orig.append(m.start())
            shift += len(table[ord(m.group())]) - 1
            self._folded.append(m.end() + shift)
            self._orig.append(m.end())

    def orig(self, offset: int) -> int:
        """Offset in the original text; removed characters before ``offset`` are skipped."""
        i = bisect_right(self._folded, offset) - 1
        position = self._orig[i] + offset - self._folded[i]
        return min(position, self._orig[i + 1] - 1) if i + 1 < len(self._orig) else position
