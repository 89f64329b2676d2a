"""PDF text extraction with pypdf.

pypdf itself bounds decompression (a FlateDecode bomb stops at its own output limit); the caps
here bound how much of a long or hostile document we walk through.
"""

from __future__ import annotations

import re
import unicodedata
import zlib
from itertools import islice
from pathlib import Path

from pypdf import PageObject, PasswordType, PdfReader
from pypdf.errors import PyPdfError

from app.extract.errors import CorruptFileError, EncryptedFileError, NoTextError
from app.extract.extraction import MAX_CHARS, Extraction
from app.extract.kinds import Kind
from app.i18n import N_

#: Most pages read; the rest of a longer document is dropped (``Extraction.truncated``).
MAX_PAGES = 500
#: Fewer non-whitespace characters than this in the whole document means there is nothing to
#: grade. Kept low: a short Arabic line is under 20 characters.
MIN_TEXT_CHARS = 10
#: A page that shows an image and yields fewer non-whitespace characters than this counts as
#: scanned: scanner apps stamp a line such as "Scanned with CamScanner" on each page, and image
#: converters may leave a label behind the picture.
SCANNED_PAGE_MAX_CHARS = 50

# pypdf reports most damage as PyPdfError, but some malformed files surface as built-in errors
# raised from deep inside its parser.
_PYPDF_FAILURES = (
    PyPdfError,
    ValueError,
    TypeError,
    KeyError,
    IndexError,
    AttributeError,
    RecursionError,
    zlib.error,
)

# Ligatures (ﬁ, ﬀ) and Arabic presentation forms are how PDF fonts draw letters, not what the
# author typed. NFKC maps them back; it is applied to these blocks only, because on everything it
# would also turn "x²" into "x2".
_PRESENTATION_FORMS = re.compile("[\ufb00-\ufdff\ufe70-\ufefe]")

NO_TEXT_MESSAGE = N_(
    "This PDF has no text layer (it looks like a scan or a set of images), so it cannot be "
    "graded as it is. Export your document to PDF from your word processor, or upload the "
    ".docx file, and try again."
)


def extract_pdf(path: Path) -> Extraction:
    """Text of each page in order, pages separated by a blank line."""
    try:
        reader = PdfReader(path)
        _unlock(reader)
        page_count = len(reader.pages)
        texts: list[str] = []
        scanned_pages = 0
        chars = 0
        for page in islice(reader.pages, MAX_PAGES):
            text = _unligate(page.extract_text()).strip()
            if _visible_chars(text) < SCANNED_PAGE_MAX_CHARS and _shows_image(page):
                scanned_pages += 1
            texts.append(text)
            chars += len(text)
            if chars >= MAX_CHARS:
                break
    except _PYPDF_FAILURES as exc:
        raise CorruptFileError(
            N_(
                "This PDF is damaged and cannot be read. Export it to PDF again and upload the "
                "new file."
            ),
            f"pypdf could not read the PDF: {type(exc).__name__}: {exc}",
        ) from exc

    text = "\n\n".join(t for t in texts if t)
    if _visible_chars(text) < MIN_TEXT_CHARS or 2 * scanned_pages > len(texts):
        raise NoTextError(
            NO_TEXT_MESSAGE,
            f"{_visible_chars(text)} characters, {scanned_pages}/{len(texts)} pages scanned",
        )
    return Extraction.from_raw(
        text,
        kind=Kind.PDF,
        method="pypdf",
        page_count=page_count,
        truncated=len(texts) < page_count,
    )


def _unlock(reader: PdfReader) -> None:
    """Open PDFs that are encrypted only to restrict printing or copying.

    Those have an empty user password; anything else needs a password we do not have.
    """
    if reader.is_encrypted and reader.decrypt("") == PasswordType.NOT_DECRYPTED:
        raise EncryptedFileError(
            N_("This PDF is password-protected. Remove the password and upload it again."),
            "PDF is encrypted with a non-empty user password",
        )


def _unligate(text: str) -> str:
    return _PRESENTATION_FORMS.sub(lambda m: unicodedata.normalize("NFKC", m.group()), text)


def _shows_image(page: PageObject) -> bool:
    """Whether the page draws an image; if pypdf cannot tell, assume not rather than fail."""
    try:
        return len(page.images) > 0
    except _PYPDF_FAILURES:
        return False


def _visible_chars(text: str) -> int:
    return sum(1 for char in text if not char.isspace())
