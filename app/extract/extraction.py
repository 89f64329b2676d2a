"""The result of extracting a document's text, shared by every format."""

from __future__ import annotations

from dataclasses import dataclass

from app.extract.kinds import Kind

#: Most characters kept from any document. A long thesis is ~500 000; more than this is either
#: hostile or not something a grader (or a language model's context) can use.
MAX_CHARS = 2_000_000


@dataclass(frozen=True)
class Extraction:
    text: str  # \n newlines only, no NUL bytes
    kind: Kind
    method: str  # which reader produced the text, e.g. "pypdf" or "text:cp1252"
    page_count: int | None
    word_count: int
    char_count: int
    encoding: str | None  # for text kinds
    language_hint: str | None = None  # for code: "python", "java", ...
    truncated: bool = False  # True if a size cap cut the document short

    @classmethod
    def from_raw(
        cls,
        raw: str,
        *,
        kind: Kind,
        method: str,
        page_count: int | None = None,
        encoding: str | None = None,
        language_hint: str | None = None,
        truncated: bool = False,
    ) -> Extraction:
        """Normalise and count in one place, so every format's numbers mean the same thing."""
        text = raw.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "")
        if len(text) > MAX_CHARS:
            text, truncated = text[:MAX_CHARS], True
        return cls(
            text=text,
            kind=kind,
            method=method,
            page_count=page_count,
            word_count=len(text.split()),
            char_count=len(text),
            encoding=encoding,
            language_hint=language_hint,
            truncated=truncated,
        )
