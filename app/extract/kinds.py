"""The kinds of document we grade, and which file extensions map to them."""

from __future__ import annotations

from enum import StrEnum


class Kind(StrEnum):
    """A ``str`` (``Kind.PDF == "pdf"``), so it can be stored in a column and read back."""

    PDF = "pdf"
    DOCX = "docx"
    TEXT = "text"
    MARKDOWN = "markdown"
    CODE = "code"


#: Language of a code file, by extension; handed to graders as ``Extraction.language_hint``.
CODE_LANGUAGES: dict[str, str] = {
    ".py": "python",
    ".java": "java",
    ".c": "c",
    ".cpp": "cpp",
    ".h": "c",
    ".js": "javascript",
    ".ts": "typescript",
    ".html": "html",
    ".css": "css",
    ".json": "json",
    ".sql": "sql",
}

KIND_BY_EXTENSION: dict[str, Kind] = {
    ".pdf": Kind.PDF,
    ".docx": Kind.DOCX,
    ".txt": Kind.TEXT,
    ".md": Kind.MARKDOWN,
    **dict.fromkeys(CODE_LANGUAGES, Kind.CODE),
}

ACCEPTED_EXTENSIONS: frozenset[str] = frozenset(KIND_BY_EXTENSION)

#: Kinds whose bytes are read as (encoded) text rather than parsed as a container format.
TEXT_KINDS: frozenset[Kind] = frozenset({Kind.TEXT, Kind.MARKDOWN, Kind.CODE})
