"""Turning an uploaded document into text a grader can read.

Two steps, at two moments: ``sniff`` when the upload arrives (is it what its name says, and do we
accept it?), and ``extract`` when it is graded (the full text). Every refusal is an
``ExtractionError`` whose ``user_message`` can be shown to the student as is.
"""

from __future__ import annotations

from pathlib import Path

from app.extract.errors import (
    CorruptFileError,
    EmptyFileError,
    EncryptedFileError,
    ExtractionError,
    NoTextError,
    UnsupportedFileError,
)
from app.extract.extraction import Extraction
from app.extract.kinds import ACCEPTED_EXTENSIONS, Kind
from app.extract.pdf import extract_pdf
from app.extract.sniff import sniff
from app.extract.text import extract_text
from app.extract.word import extract_docx

__all__ = [
    "ACCEPTED_EXTENSIONS",
    "CorruptFileError",
    "EmptyFileError",
    "EncryptedFileError",
    "Extraction",
    "ExtractionError",
    "Kind",
    "NoTextError",
    "UnsupportedFileError",
    "extract",
    "sniff",
]


def extract(path: Path | str, kind: Kind) -> Extraction:
    """Full text of the file at ``path``, read as ``kind`` (the kind ``sniff`` returned).

    A missing or unreadable file raises ``OSError``: that is our fault, not the student's.
    """
    path = Path(path)
    kind = Kind(kind)
    if kind is Kind.PDF:
        return extract_pdf(path)
    if kind is Kind.DOCX:
        return extract_docx(path)
    return extract_text(path, kind)
