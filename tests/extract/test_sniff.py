"""sniff: the content must agree with the name, and refusals must say what to do."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest
from PIL import Image

from app.extract import (
    ACCEPTED_EXTENSIONS,
    EmptyFileError,
    Kind,
    UnsupportedFileError,
    sniff,
)

PDF_DIR = Path(__file__).parents[1] / "data" / "pdf"
SAMPLE_PDFS = sorted(PDF_DIR.glob("*.pdf"))
OLE_HEADER = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(504)


def head_of(path: Path) -> bytes:
    return path.read_bytes()[: 64 * 1024]


def png_bytes() -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (8, 8), "red").save(buffer, format="PNG")
    return buffer.getvalue()


def zip_bytes(entries: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, content in entries.items():
            archive.writestr(name, content)
    return buffer.getvalue()


@pytest.mark.parametrize("path", SAMPLE_PDFS, ids=lambda p: p.name)
def test_real_pdfs_are_pdf(path: Path) -> None:
    assert sniff(path.name, head_of(path)) is Kind.PDF


def test_pdf_header_may_follow_some_junk() -> None:
    real = head_of(PDF_DIR / "minimal-document.pdf")
    assert sniff("essay.pdf", b"\x00junk from a mail gateway\r\n" * 30 + real) is Kind.PDF


def test_pdf_header_past_1024_bytes_is_not_a_pdf() -> None:
    real = head_of(PDF_DIR / "minimal-document.pdf")
    with pytest.raises(UnsupportedFileError):
        sniff("essay.pdf", b" " * 1100 + real)


def test_extension_is_case_insensitive() -> None:
    assert sniff("ESSAY.PDF", head_of(PDF_DIR / "minimal-document.pdf")) is Kind.PDF


def test_png_renamed_pdf_is_named_as_an_image() -> None:
    with pytest.raises(UnsupportedFileError) as caught:
        sniff("essay.pdf", png_bytes())
    assert "PNG image" in caught.value.user_message
    assert "'.pdf'" in caught.value.user_message


@pytest.mark.parametrize(
    ("head", "what"),
    [
        (b"MZ\x90\x00\x03\x00\x00\x00\x04\x00\x00\x00\xff\xff", "Windows program"),
        (zip_bytes({"a.txt": "hello"}), "ZIP archive"),
        (b"just some text that someone renamed", "not a PDF"),
    ],
)
def test_other_content_renamed_pdf(head: bytes, what: str) -> None:
    with pytest.raises(UnsupportedFileError) as caught:
        sniff("essay.pdf", head)
    assert what in caught.value.user_message


def test_docx_needs_a_zip_signature() -> None:
    head = zip_bytes({"word/document.xml": "<w:document/>"})
    assert sniff("essay.docx", head) is Kind.DOCX
    with pytest.raises(UnsupportedFileError) as caught:
        sniff("essay.docx", head_of(PDF_DIR / "minimal-document.pdf"))
    assert "PDF document" in caught.value.user_message


def test_legacy_doc_extension_gets_save_as_advice() -> None:
    with pytest.raises(UnsupportedFileError) as caught:
        sniff("essay.doc", OLE_HEADER)
    assert ".docx or PDF" in caught.value.user_message


def test_ole_file_named_docx_is_old_format_or_password_protected() -> None:
    with pytest.raises(UnsupportedFileError) as caught:
        sniff("essay.docx", OLE_HEADER)
    message = caught.value.user_message
    assert "password" in message
    assert ".doc" in message


@pytest.mark.parametrize("name", ["setup.exe", "photo.png", "notes.odt", "README", "archive.zip"])
def test_extension_not_accepted(name: str) -> None:
    with pytest.raises(UnsupportedFileError) as caught:
        sniff(name, b"plain text")
    assert "Upload a PDF" in caught.value.user_message


def test_user_message_does_not_leak_the_path() -> None:
    with pytest.raises(UnsupportedFileError) as caught:
        sniff("/srv/uploads/alice/secret-plan.exe", b"MZ")
    assert "/srv" not in caught.value.user_message
    assert "secret-plan" not in caught.value.user_message


@pytest.mark.parametrize("name", ["essay.pdf", "essay.docx", "notes.txt", "main.py"])
@pytest.mark.parametrize("head", [b"", b"   \n\t\r\n  "])
def test_empty_or_whitespace_only(name: str, head: bytes) -> None:
    with pytest.raises(EmptyFileError) as caught:
        sniff(name, head)
    assert "empty" in caught.value.user_message


def test_utf16_whitespace_only_is_empty() -> None:
    with pytest.raises(EmptyFileError):
        sniff("notes.txt", "  \n  ".encode("utf-16"))


@pytest.mark.parametrize(
    ("name", "kind"),
    [(".txt", Kind.TEXT), (".md", Kind.MARKDOWN)]
    + [(ext, Kind.CODE) for ext in sorted(ACCEPTED_EXTENSIONS - {".pdf", ".docx", ".txt", ".md"})],
)
def test_text_like_kinds_follow_the_extension(name: str, kind: Kind) -> None:
    assert sniff(f"work{name}", b"print('hello')\n") is kind


@pytest.mark.parametrize(
    "head",
    [
        "Qualificació: 8,5\r\nPuntuación del año\r\n".encode("cp1252"),
        "Qualificació: 8,5\nPuntuación del año\n".encode("utf-16"),
        "Qualificació".encode("utf-8-sig"),
        # a head cut in the middle of a UTF-8 character
        ("año " * 20000).encode("utf-8")[: 64 * 1024],
        b"Columns:\tname\tgrade\x0c\n",
    ],
)
def test_text_in_various_encodings_is_text(head: bytes) -> None:
    assert sniff("notes.txt", head) is Kind.TEXT


@pytest.mark.parametrize(
    ("head", "what"),
    [
        (png_bytes(), "PNG image"),
        (b"\xff\xd8\xff\xe0\x00\x10JFIF\x00", "JPEG image"),
        (b"GIF89a\x01\x00\x01\x00\x80\x00\x00", "GIF image"),
        (zip_bytes({"word/document.xml": "<w:document/>"}), "ZIP archive"),
        (b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)), "a program"),
        (OLE_HEADER, "old-format Office document"),
        (bytes(range(256)) * 4, "not a text file"),
    ],
)
def test_binary_named_txt_is_refused(head: bytes, what: str) -> None:
    with pytest.raises(UnsupportedFileError) as caught:
        sniff("notes.txt", head)
    assert what in caught.value.user_message


def test_control_characters_without_nul_are_binary() -> None:
    head = bytes(b for b in range(1, 32) if b not in b"\t\n\r\x0b\x0c") * 10 + b"abc" * 10
    with pytest.raises(UnsupportedFileError):
        sniff("notes.txt", head)


def test_pdf_named_txt_is_refused_as_a_pdf() -> None:
    with pytest.raises(UnsupportedFileError) as caught:
        sniff("essay.txt", head_of(PDF_DIR / "minimal-document.pdf"))
    assert "PDF document" in caught.value.user_message


def test_ascii_only_pdf_named_txt_is_refused_too() -> None:
    with pytest.raises(UnsupportedFileError):
        sniff("essay.md", b"%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\n")
