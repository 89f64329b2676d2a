"""Deciding what an upload really is from its first bytes, before it is stored.

The extension only chooses between text-like kinds; the content must agree with it. A renamed
file (a photo called essay.pdf) is refused here, with a message the student can act on.
"""

from __future__ import annotations

import os

from app.catalogue import N_
from app.extract.errors import EmptyFileError, UnsupportedFileError
from app.extract.kinds import KIND_BY_EXTENSION, TEXT_KINDS, Kind
from app.extract.text import EMPTY_MESSAGE, as_text

PDF_MAGIC = b"%PDF-"
#: PDF readers accept the header anywhere in the first 1024 bytes (some tools prepend junk).
PDF_HEADER_WINDOW = 1024
ZIP_MAGIC = b"PK\x03\x04"
#: OLE2 compound file: legacy .doc/.xls/.ppt, and also password-protected .docx files.
OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"

#: What a file "really is", by magic number (besides PDF); only used to word refusals.
_MAGICS: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", N_("a PNG image")),
    (b"\xff\xd8\xff", N_("a JPEG image")),
    (b"GIF87a", N_("a GIF image")),
    (b"GIF89a", N_("a GIF image")),
    (ZIP_MAGIC, N_("a ZIP archive or Office document")),
    (b"\x7fELF", N_("a program")),
    (b"MZ", N_("a Windows program")),
    (OLE_MAGIC, N_("an old-format Office document (.doc, .xls or .ppt)")),
)

LEGACY_DOC_MESSAGE = N_(
    "Old Word documents (.doc) cannot be read. Open the file in Word, save it as .docx or PDF, "
    "and upload it again."
)
OLE_DOCX_MESSAGE = N_(
    "This Word document is either password-protected or saved in the old .doc format. Remove "
    "any password, save it as .docx or PDF, and upload it again."
)


def sniff(filename: str, head: bytes) -> Kind:
    """Return the kind of an upload named ``filename`` whose first bytes are ``head``.

    Callers pass at least the first 64 KiB (or the whole file if smaller). A DOCX is only
    recognised by its ZIP signature here; ``extract`` checks the archive's contents.
    Raises UnsupportedFileError or EmptyFileError.
    """
    extension = os.path.splitext(filename)[1].lower()
    if extension == ".doc":
        raise UnsupportedFileError(LEGACY_DOC_MESSAGE, "legacy .doc upload")
    kind = KIND_BY_EXTENSION.get(extension)
    if kind is None:
        if extension:
            message = N_(
                "'%(extension)s' files cannot be graded. Upload a PDF, a Word document (.docx), "
                "or a plain-text or code file."
            ) % {"extension": extension}
        else:
            message = N_(
                "Files without an extension cannot be graded. Upload a PDF, a Word document "
                "(.docx), or a plain-text or code file."
            )
        raise UnsupportedFileError(
            message,
            f"extension not accepted: {extension!r}",
        )
    if not head.strip():
        raise EmptyFileError(EMPTY_MESSAGE)

    if kind is Kind.PDF and not _has_pdf_header(head):
        raise _mismatch(extension, head, N_("a PDF"))
    if kind is Kind.DOCX:
        if head.startswith(OLE_MAGIC):
            raise UnsupportedFileError(OLE_DOCX_MESSAGE, "OLE compound file named .docx")
        if not head.startswith(ZIP_MAGIC):
            raise _mismatch(extension, head, N_("a Word document"))
    if kind in TEXT_KINDS:
        _check_text(extension, head)
    return kind


def _has_pdf_header(head: bytes) -> bool:
    return head.find(PDF_MAGIC, 0, PDF_HEADER_WINDOW + len(PDF_MAGIC)) >= 0


def _check_text(extension: str, head: bytes) -> None:
    # A PDF can be pure ASCII, so the binary test alone would let it through.
    text = None if _has_pdf_header(head) else as_text(head)
    if text is None:
        raise _mismatch(extension, head, N_("a text file"))
    if not text.strip():  # e.g. UTF-16 spaces, which the byte-level check cannot see
        raise EmptyFileError(EMPTY_MESSAGE)


def _mismatch(extension: str, head: bytes, expected: str) -> UnsupportedFileError:
    actual = _describe(head)
    if actual:
        message = N_(
            "This file is named '%(extension)s' but its content is %(actual)s. Save your work in "
            "the right format and upload it again."
        ) % {"extension": extension, "actual": actual}
    else:
        message = N_(
            "This file is named '%(extension)s' but its content is not %(expected)s. Save your "
            "work in the right format and upload it again."
        ) % {"extension": extension, "expected": expected}
    return UnsupportedFileError(
        message,
        f"content does not match extension {extension!r} (found: {actual or 'unknown'})",
    )


def _describe(head: bytes) -> str | None:
    if _has_pdf_header(head):
        return N_("a PDF document")
    return next((what for magic, what in _MAGICS if head.startswith(magic)), None)
