"""Word (.docx) text extraction with python-docx.

Text comes out in body order, one line per paragraph and one line per table row (cells joined
with " | "), so a table sits where the student put it. The walk looks through content controls
(fill-in fields of assignment templates) and includes tracked insertions, which python-docx's
``Paragraph.text`` would skip; headers, footers, footnotes and comments are left out.
"""

from __future__ import annotations

import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import docx
from docx.document import Document as DocxDocument
from docx.opc.exceptions import OpcError
from docx.oxml.ns import qn
from lxml import etree

from app.catalogue import N_
from app.extract.errors import CorruptFileError, NoTextError, UnsupportedFileError
from app.extract.extraction import Extraction
from app.extract.kinds import Kind

MAIN_PART = "word/document.xml"
#: Largest uncompressed main document we parse: ~10 000 pages of text. Checked from the zip
#: directory before python-docx inflates anything (Python's zipfile enforces declared sizes).
MAX_DOCUMENT_XML_BYTES = 50 * 1024 * 1024
#: Largest uncompressed package: python-docx loads every part, images included, into memory.
MAX_PACKAGE_BYTES = 200 * 1024 * 1024

_P, _TBL, _TR, _TC, _R = qn("w:p"), qn("w:tbl"), qn("w:tr"), qn("w:tc"), qn("w:r")
# Containers that only wrap blocks, rows or cells: content controls and custom XML.
_WRAPPERS = frozenset({qn("w:sdt"), qn("w:sdtContent"), qn("w:customXml")})
# Runs under these are not visible text: deleted or moved-away revisions, and the legacy copy
# of a text box that Word stores next to the modern one.
_HIDDEN = frozenset(
    {
        qn("w:del"),
        qn("w:moveFrom"),
        "{http://schemas.openxmlformats.org/markup-compatibility/2006}Fallback",
    }
)

# What python-docx lets through from a damaged package: missing parts, a non-Word content type,
# broken XML, or a compressed stream that does not inflate.
_DOCX_FAILURES = (
    OpcError,
    KeyError,
    ValueError,
    zipfile.BadZipFile,
    etree.XMLSyntaxError,
    zlib.error,
    EOFError,
)

CORRUPT_MESSAGE = N_(
    "This Word document is damaged and cannot be read. Open it in Word, save it again as .docx "
    "or PDF, and upload the new file."
)


def check_docx(path: Path) -> None:
    """Refuse, at upload, a Word document that does not open: not a complete zip, no main
    document, a part that does not inflate or fails its checksum, or a main document that is
    not well-formed XML (CorruptFileError); or one too large to process (UnsupportedFileError).

    It streams rather than letting python-docx build the document: a 200 KB upload can hold
    50 MB of XML, which python-docx turns into 400 MB of objects, in the web worker.
    """
    _check_package(path)
    try:
        with zipfile.ZipFile(path) as archive:
            broken = archive.testzip()  # inflates every part in chunks, checking its CRC
            if broken is not None:
                raise zipfile.BadZipFile(f"{broken} fails its checksum")
            with archive.open(MAIN_PART) as part:
                _parse_streaming(part)
    except _DOCX_FAILURES as exc:
        detail = f"the package does not open: {type(exc).__name__}: {exc}"
        raise CorruptFileError(CORRUPT_MESSAGE, detail) from exc


def _parse_streaming(source: IO[bytes]) -> None:
    """Parse the main document to its end in constant memory (no entities, no network), one
    paragraph or table at a time; errors raise."""
    events = etree.iterparse(
        source, events=("end",), tag=(_P, _TBL), resolve_entities=False, no_network=True
    )
    for _event, element in events:
        element.clear()
        while element.getprevious() is not None:  # drop what was already read
            del element.getparent()[0]


def extract_docx(path: Path) -> Extraction:
    """Body text of a Word document; the package is vetted before python-docx opens it."""
    document = _open(path)
    text = "\n".join(_lines(document.element.body))
    if not text.strip():
        raise NoTextError(
            N_(
                "This Word document has no text to grade (it may contain only images). Upload "
                "the document that contains your written work."
            ),
            "DOCX body has no text",
        )
    return Extraction.from_raw(text, kind=Kind.DOCX, method="python-docx")


def _open(path: Path) -> DocxDocument:
    """The document as python-docx reads it, once its zip directory has been vetted."""
    _check_package(path)
    try:
        return docx.Document(str(path))
    except _DOCX_FAILURES as exc:
        detail = f"python-docx could not open it: {type(exc).__name__}: {exc}"
        raise CorruptFileError(CORRUPT_MESSAGE, detail) from exc


def _check_package(path: Path) -> None:
    """Refuse non-Word archives and zip bombs using only the zip directory."""
    try:
        with zipfile.ZipFile(path) as archive:
            entries = archive.infolist()
    except (zipfile.BadZipFile, ValueError, EOFError) as exc:
        raise CorruptFileError(CORRUPT_MESSAGE, f"not a readable zip: {exc}") from exc
    sizes = {entry.filename: entry.file_size for entry in entries}
    if MAIN_PART not in sizes:
        raise CorruptFileError(
            N_(
                "This file is named .docx but is not a Word document (it may be another kind of "
                "archive). Save your work from Word as .docx or PDF and upload it again."
            ),
            f"zip has no {MAIN_PART}",
        )
    if sizes[MAIN_PART] > MAX_DOCUMENT_XML_BYTES or sum(sizes.values()) > MAX_PACKAGE_BYTES:
        raise UnsupportedFileError(
            N_(
                "This Word document is too large to process. Remove large images or split the "
                "document, and upload it again."
            ),
            f"uncompressed sizes over the cap: {MAIN_PART}={sizes[MAIN_PART]}, "
            f"total={sum(sizes.values())}",
        )


def _lines(container: etree._Element) -> Iterator[str]:
    """One line per paragraph and per table row, in document order."""
    for block in _unwrapped(container):
        if block.tag == _P:
            yield _paragraph_text(block)
        elif block.tag == _TBL:
            for row in _unwrapped(block):
                if row.tag == _TR:
                    cells = (_cell_text(cell) for cell in _unwrapped(row) if cell.tag == _TC)
                    yield " | ".join(cells)


def _unwrapped(parent: etree._Element) -> Iterator[etree._Element]:
    """Children of ``parent``, looking through content controls and custom-XML wrappers."""
    for child in parent.iterchildren():
        if child.tag in _WRAPPERS:
            yield from _unwrapped(child)
        else:
            yield child


def _cell_text(cell: etree._Element) -> str:
    # A cell holds paragraphs and maybe nested tables; a row stays on one line.
    return " ".join(line for line in _lines(cell) if line)


def _paragraph_text(paragraph: etree._Element) -> str:
    # python-docx's run elements turn <w:t>, <w:tab/> and <w:br/> into text for us.
    return "".join(
        run.text
        for run in paragraph.iter(_R)
        if not any(ancestor.tag in _HIDDEN for ancestor in run.iterancestors())
    )
