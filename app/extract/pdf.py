"""PDF checks and text extraction with pypdf.

:func:`check_pdf` runs when the file is uploaded, in the web worker: it only opens the file
(trailer, cross-reference table, catalog) and counts the pages, so a truncated or garbled PDF
is refused at once instead of failing later. :func:`extract_pdf` runs in the grading job.

pypdf itself bounds decompression (a FlateDecode bomb stops at its own output limit) and the
size of what it parses; the caps here bound how much of a long or hostile document we walk
through.
"""

from __future__ import annotations

import io
import re
import unicodedata
import zlib
from itertools import islice
from pathlib import Path

from pypdf import PageObject, PasswordType, PdfReader
from pypdf.errors import PdfReadError, PyPdfError
from pypdf.generic import ArrayObject, DictionaryObject, PdfObject

from app.catalogue import N_
from app.extract.errors import (
    CorruptFileError,
    EncryptedFileError,
    NoTextError,
    UnsupportedFileError,
)
from app.extract.extraction import MAX_CHARS, Extraction
from app.extract.kinds import Kind

#: Most pages read; the rest of a longer document is dropped (``Extraction.truncated``).
MAX_PAGES = 500
#: Most pages an uploaded PDF may have. Counting stops past it, so a file of 100 000 empty
#: pages costs no more than one of this many (pypdf's own count resolves every page: 6 s).
MAX_UPLOAD_PAGES = 2000
#: Most cross-reference stream entries pypdf reads. Each costs a few microseconds, and a stream
#: of identical entries compresses to nothing: pypdf's default (2 000 000) lets a 20 KB file
#: keep a worker busy for 15 s. Long real documents have tens of thousands of objects.
MAX_XREF_STREAM_ENTRIES = 200_000
#: The end-of-file marker. pypdf looks for it one line at a time from the end of the file, which
#: takes seconds through megabytes appended after it, so :func:`_reader` cuts the file there.
EOF_MARKER = b"%%EOF"
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

DAMAGED_MESSAGE = N_(
    "This PDF is damaged or incomplete (it could not be opened): please export it again and "
    "re-upload."
)
TOO_MANY_PAGES_MESSAGE = N_(
    "This PDF has more than %(pages)s pages, more than can be graded. Upload only your work, "
    "or split the document."
)
PASSWORD_MESSAGE = N_("This PDF is password-protected. Remove the password and upload it again.")

NO_TEXT_MESSAGE = N_(
    "This PDF has no text layer (it looks like a scan or a set of images), so it cannot be "
    "graded as it is. Export your document to PDF from your word processor, or upload the "
    ".docx file, and try again."
)


def check_pdf(path: Path) -> int:
    """The page count of a PDF that opens; CorruptFileError, EncryptedFileError or
    UnsupportedFileError (too many pages) otherwise. Reads no page content.

    Encrypted files are accepted when they open with the empty password (restrictions on
    printing or copying only), as :func:`extract_pdf` reads them; a real password is refused.
    """
    try:
        reader = _reader(path)
        _unlock(reader)
        pages = _count_pages(reader.trailer["/Root"]["/Pages"], MAX_UPLOAD_PAGES)
    except _PYPDF_FAILURES as exc:
        raise CorruptFileError(
            DAMAGED_MESSAGE, f"pypdf could not open the PDF: {type(exc).__name__}: {exc}"
        ) from exc
    if pages > MAX_UPLOAD_PAGES:
        raise UnsupportedFileError(
            TOO_MANY_PAGES_MESSAGE % {"pages": MAX_UPLOAD_PAGES},
            f"more than {MAX_UPLOAD_PAGES} pages",
        )
    if pages == 0:
        raise CorruptFileError(DAMAGED_MESSAGE, "the page tree has no pages")
    return pages


def _reader(path: Path) -> PdfReader:
    """pypdf's lenient reader on the file up to its last end-of-file marker, with bounds."""
    data = path.read_bytes()
    end = data.rfind(EOF_MARKER)
    if end < 0:
        raise PdfReadError("no %%EOF marker: the file is incomplete")
    return PdfReader(
        io.BytesIO(data[: end + len(EOF_MARKER)]),
        strict=False,
        xref_stream_maximum_entries=MAX_XREF_STREAM_ENTRIES,
    )


def _count_pages(root: DictionaryObject, limit: int) -> int:
    """Leaves of the page tree under ``root``, counted up to ``limit + 1``.

    Every node visited is resolved (a missing object raises), and the walk ends after a bounded
    number of nodes, so a tree with a loop or a huge fan-out cannot keep it busy.
    """
    count, visits = 0, 0
    stack: list[PdfObject] = [root]
    while stack and count <= limit:
        visits += 1
        if visits > 2 * limit + 10:
            raise PdfReadError("the page tree has too many nodes or a loop")
        node = stack.pop().get_object()
        if not isinstance(node, DictionaryObject):
            raise PdfReadError(f"a page tree node is a {type(node).__name__}")
        if "/Kids" in node:
            kids = node["/Kids"]
            if not isinstance(kids, ArrayObject):
                raise PdfReadError("a page tree node's /Kids is not an array")
            stack.extend(reversed(kids))
        elif node.get("/Type") != "/Pages":  # an intermediate node without kids holds none
            count += 1
    return count


def extract_pdf(path: Path) -> Extraction:
    """Text of each page in order, pages separated by a blank line."""
    try:
        reader = _reader(path)
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
            PASSWORD_MESSAGE, "PDF is encrypted with a non-empty user password"
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
