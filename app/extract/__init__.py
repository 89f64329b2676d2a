"""Turning an uploaded document into text a grader can read.

Three steps, at two moments: when the upload arrives, ``sniff`` (is it what its name says, and do
we accept it?) and ``check`` (does it open?); when it is graded, ``extract`` (the full text). Every
refusal is an ``ExtractionError`` whose ``user_message`` can be shown to the student as is.
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
from app.extract.pdf import check_pdf, extract_pdf
from app.extract.sniff import sniff
from app.extract.text import extract_text
from app.extract.word import check_docx, extract_docx

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
    "check",
    "extract",
    "sniff",
]


def check(path: Path | str, kind: Kind) -> None:
    """Refuse a document that does not open, before anything is stored: a truncated or garbled
    PDF, a PDF with a password, a Word file whose archive or XML is broken. Every upload path
    (students' submissions, API evaluations, teachers' reference material) calls it on the
    size-capped upload. It reads the file's structure, not its text: a PDF's cross-reference
    table and page tree (at most ``pdf.MAX_UPLOAD_PAGES`` pages), a Word file's parts. Text
    kinds were already read by ``sniff``.
    """
    path = Path(path)
    kind = Kind(kind)
    if kind is Kind.PDF:
        check_pdf(path)
    elif kind is Kind.DOCX:
        check_docx(path)


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
