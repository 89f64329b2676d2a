"""Plain-text, Markdown and code files: guessing the encoding and telling text from binary."""

from __future__ import annotations

import codecs
import unicodedata
from pathlib import Path

from charset_normalizer import from_bytes

from app.catalogue import N_
from app.extract.errors import EmptyFileError
from app.extract.extraction import MAX_CHARS, Extraction
from app.extract.kinds import CODE_LANGUAGES, Kind

#: Most bytes read from a text file: enough for MAX_CHARS even at 4 bytes per character.
MAX_TEXT_BYTES = 4 * MAX_CHARS

#: Share of control characters above which "text" is really binary. Real text has almost none
#: besides tabs and newlines; random binary data has about 12 %.
MAX_CONTROL_SHARE = 0.05

# UTF-32 before UTF-16: the UTF-32-LE mark starts with the UTF-16-LE one.
_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
_ALLOWED_CONTROLS = frozenset("\t\n\r\f\v")

EMPTY_MESSAGE = N_("This file is empty. Upload the file that contains your work.")


def detect_encoding(data: bytes, *, partial: bool = False) -> str:
    """Name the codec for ``data``: a byte-order mark, else UTF-8, else a legacy guess.

    With ``partial``, ``data`` is the head of a longer file and may end in the middle of a
    character; that is not held against UTF-8.
    """
    bom_encoding = _bom_encoding(data)
    if bom_encoding:
        return bom_encoding
    try:
        codecs.getincrementaldecoder("utf-8")().decode(data, final=not partial)
    except UnicodeDecodeError:
        return _guess_legacy_encoding(data)
    return "utf-8"


def _bom_encoding(data: bytes) -> str | None:
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            return encoding
    return None


def _guess_legacy_encoding(data: bytes) -> str:
    """Ask charset-normalizer, but let cp1252 win ties.

    On short Western European text many code pages decode without "chaos" and charset-normalizer
    often ranks cp1250 or cp852 first, turning "año" into "ańo" or "Qualificació" into
    "Qualificaciˇ". Our students write mostly Spanish, Catalan and English, and Windows' cp1252 is
    what their non-UTF-8 files use; so cp1252 is chosen whenever it decodes the bytes and
    charset-normalizer either ranks it among its least chaotic candidates or has no language
    evidence for its own pick. Texts it recognises with confidence (e.g. Russian in cp1251) keep
    its answer. latin-1 decodes anything, so it is the last resort.
    """
    try:
        data.decode("cp1252")
        cp1252_fits = True
    except UnicodeDecodeError:
        cp1252_fits = False
    matches = from_bytes(data)
    best = matches.best()
    if best is None:
        return "cp1252" if cp1252_fits else "latin-1"
    if cp1252_fits:
        tied = any("cp1252" in m.could_be_from_charset for m in matches if m.chaos <= best.chaos)
        if tied or best.coherence == 0:
            return "cp1252"
    return codecs.lookup(best.encoding).name


def _decode(data: bytes, encoding: str, *, partial: bool) -> str:
    """Decode leniently; with ``partial``, a character cut off at the end is dropped."""
    return codecs.getincrementaldecoder(encoding)(errors="replace").decode(data, final=not partial)


def as_text(head: bytes) -> str | None:
    """Decode the head of a file, or return None if it is binary, not text.

    NUL bytes never occur in text except in UTF-16/32, which we accept only with a byte-order
    mark; other control characters are allowed only rarely. A character cut off at the end of
    the head is dropped, not counted against the file.
    """
    if b"\x00" in head and _bom_encoding(head) is None:
        return None
    text = _decode(head, detect_encoding(head, partial=True), partial=True)
    odd = sum(
        1
        for char in text
        if char == "\ufffd"
        or (unicodedata.category(char) == "Cc" and char not in _ALLOWED_CONTROLS)
    )
    if "\x00" in text or odd > MAX_CONTROL_SHARE * len(text):
        return None
    return text


def extract_text(path: Path, kind: Kind) -> Extraction:
    """Decode a text-like file; code files get a language hint from their extension."""
    with path.open("rb") as file:
        data = file.read(MAX_TEXT_BYTES + 1)
    truncated = len(data) > MAX_TEXT_BYTES
    data = data[:MAX_TEXT_BYTES]
    encoding = detect_encoding(data, partial=truncated)
    extraction = Extraction.from_raw(
        _decode(data, encoding, partial=truncated),
        kind=kind,
        method=f"text:{encoding}",
        encoding=encoding,
        language_hint=CODE_LANGUAGES.get(path.suffix.lower()) if kind is Kind.CODE else None,
        truncated=truncated,
    )
    if not extraction.text.strip():
        raise EmptyFileError(EMPTY_MESSAGE)
    return extraction
