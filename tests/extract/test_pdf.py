"""PDF extraction on real files: faithful text in reading order, clear refusals otherwise."""

from __future__ import annotations

from pathlib import Path

import pytest
from PIL import Image
from pypdf import PdfReader, PdfWriter
from reportlab.lib.pagesizes import A4
from reportlab.lib.utils import ImageReader
from reportlab.pdfgen import canvas

from app.extract import (
    CorruptFileError,
    EncryptedFileError,
    Extraction,
    Kind,
    NoTextError,
    extract,
    sniff,
)
from app.extract import pdf as pdf_module

PDF_DIR = Path(__file__).parents[1] / "data" / "pdf"


def read(name: str) -> Extraction:
    path = PDF_DIR / name
    assert sniff(name, path.read_bytes()[: 64 * 1024]) is Kind.PDF
    return extract(path, Kind.PDF)


def assert_in_order(text: str, *phrases: str) -> None:
    positions = [text.index(phrase) for phrase in phrases]
    assert positions == sorted(positions), list(zip(phrases, positions, strict=True))


def test_libreoffice_paragraph_is_exact() -> None:
    result = read("002-trivial-libre-office-writer.pdf")
    sentence = (
        "Lorem ipsum dolor sit amet, consetetur sadipscing elitr, sed diam nonumy eirmod tempor "
        "invidunt ut labore et dolore magna aliquyam erat, sed diam voluptua. At vero eos et "
        "accusam et justo duo dolores et ea rebum. Stet clita kasd gubergren, no sea takimata "
        "sanctus est Lorem ipsum dolor sit amet."
    )
    assert " ".join(result.text.split()) == f"{sentence} {sentence}"
    assert (result.kind, result.method, result.page_count) == (Kind.PDF, "pypdf", 1)
    assert result.word_count == 100
    assert result.encoding is None
    assert not result.truncated


def test_pdftex_ligatures_become_plain_letters() -> None:
    result = read("crazyones-pdfa.pdf")
    assert_in_order(
        result.text,
        "The Crazy Ones",
        "October 14, 1998",
        "The misfits. The rebels. The troublemakers.",  # "ﬁ" in the PDF
        "The ones who see things differently.",  # "ﬀ" in the PDF
        "are the ones who do.",
    )
    assert "\ufb01" not in result.text


def test_google_docs_list_then_table_by_rows() -> None:
    result = read("google-doc-document.pdf")
    assert_in_order(
        result.text,
        "Example document",
        "Beautiful is better than ugly.",
        "Readability counts.",
        "Namespaces are one honking great idea -- let's do more of those!",
        "Continent\nAsia\nEurope",
        "Capital\nJakarta\nBerlin\nVienna\nParis\nVatican City",
        "Currency\nRupia\nEUR (€)",
        "Population",
    )


def test_arabic_comes_out_in_logical_order() -> None:
    result = read("habibi.pdf")
    assert result.text == "حَبيبي habibi حَبيبي"
    assert result.text[0] == "\u062d"  # ح: the first letter in reading order, not the last


def test_pages_are_separated_by_blank_lines() -> None:
    result = read("pdflatex-4-pages.pdf")
    assert result.page_count == 4
    assert result.text.count("\n\n") == 3
    assert result.text.startswith("Hello, here is some text without a meaning.")
    assert "“Huardest gefburn”? Kjift – not at all!" in result.text
    assert result.text.endswith("the length of words should match the language.\n4")


def test_hyphenation_is_kept_as_printed() -> None:
    result = read("minimal-document.pdf")
    assert "sea taki-\nmata sanctus est" in result.text


def test_two_columns_are_read_column_by_column() -> None:
    result = read("multicolumn.pdf")
    assert result.page_count == 3
    assert_in_order(
        result.text,
        "Two-Column Document with Lorem Ipsum",
        "Lorem ipsum dolor sit amet, consectetuer adip-\niscing elit.",  # column 1, top
        "Donec nonummy",  # column 1, bottom
        "pellentesque ante. Phasellus adipiscing semper elit.",  # column 2, top
        "risus porta vehicula.",  # column 2
        "Table 1: EU Countries Information",  # page 3
        "Austria 8.9 83,879 Vienna German",
        "Finland 5.5 338,424 Helsinki Finnish, Swedish",
    )


def test_password_protected_pdf_is_refused() -> None:
    path = PDF_DIR / "libreoffice-writer-password.pdf"
    with pytest.raises(EncryptedFileError) as caught:
        extract(path, Kind.PDF)
    assert "password" in caught.value.user_message
    assert "Remove the password" in caught.value.user_message
    # It is a sound file that simply needs its password: refused for the right reason.
    reader = PdfReader(path)
    assert reader.decrypt("openpassword")
    assert "Lorem ipsum" in reader.pages[0].extract_text()


def test_pdf_with_empty_user_password_is_read(tmp_path: Path) -> None:
    writer = PdfWriter(clone_from=PDF_DIR / "minimal-document.pdf")
    writer.encrypt(user_password="", owner_password="teacher-only", algorithm="AES-256")
    path = tmp_path / "restricted.pdf"
    writer.write(path)
    assert PdfReader(path).is_encrypted
    assert "Lorem ipsum dolor sit amet" in extract(path, Kind.PDF).text


def test_pdf_with_a_real_password_is_refused(tmp_path: Path) -> None:
    writer = PdfWriter(clone_from=PDF_DIR / "minimal-document.pdf")
    writer.encrypt(user_password="secret", algorithm="AES-256")
    path = tmp_path / "locked.pdf"
    writer.write(path)
    with pytest.raises(EncryptedFileError):
        extract(path, Kind.PDF)


def test_image_only_pdf_has_no_text() -> None:
    # Each page hides a "Background" label behind its picture: 40 characters in all.
    with pytest.raises(NoTextError) as caught:
        read("imagemagick-images.pdf")
    assert "no text layer" in caught.value.user_message
    assert "cannot be graded" in caught.value.user_message


def scanned_pdf(path: Path, pages: int, stamp: str) -> Path:
    """Pages that are a photo plus a scanner app's stamp, as phone scanners produce."""
    photo = ImageReader(Image.new("L", (60, 80), 200))
    sheet = canvas.Canvas(str(path), pagesize=A4)
    for _ in range(pages):
        sheet.drawImage(photo, 0, 0, *A4)
        sheet.drawString(40, 20, stamp)
        sheet.showPage()
    sheet.save()
    return path


def test_scanned_pages_with_a_scanner_stamp_have_no_text(tmp_path: Path) -> None:
    path = scanned_pdf(tmp_path / "scan.pdf", 3, "Scanned with CamScanner")
    with pytest.raises(NoTextError):
        extract(path, Kind.PDF)


def test_a_figure_page_among_text_pages_is_fine(tmp_path: Path) -> None:
    path = tmp_path / "report.pdf"
    sheet = canvas.Canvas(str(path), pagesize=A4)
    for number in range(1, 3):
        text = sheet.beginText(40, 800)
        for line in range(40):
            text.textLine(f"Page {number}, line {line}: the results support the hypothesis.")
        sheet.drawText(text)
        sheet.showPage()
    sheet.drawImage(ImageReader(Image.new("L", (60, 80), 200)), 40, 300, 400, 400)
    sheet.drawString(40, 280, "Figure 1: results")
    sheet.showPage()
    sheet.save()
    result = extract(path, Kind.PDF)
    assert result.page_count == 3
    assert_in_order(result.text, "Page 1, line 0:", "Page 2, line 39:", "Figure 1: results")


def test_blank_pdf_has_no_text(tmp_path: Path) -> None:
    writer = PdfWriter()
    writer.add_blank_page(width=595, height=842)
    path = tmp_path / "blank.pdf"
    writer.write(path)
    with pytest.raises(NoTextError):
        extract(path, Kind.PDF)


def test_truncated_pdf_is_corrupt(tmp_path: Path) -> None:
    data = (PDF_DIR / "pdflatex-4-pages.pdf").read_bytes()
    path = tmp_path / "half.pdf"
    path.write_bytes(data[: len(data) // 2])
    assert sniff("half.pdf", path.read_bytes()) is Kind.PDF  # the header is intact
    with pytest.raises(CorruptFileError) as caught:
        extract(path, Kind.PDF)
    assert "damaged" in caught.value.user_message
    assert str(tmp_path) not in caught.value.user_message
    assert caught.value.__cause__ is not None


def test_header_followed_by_garbage_is_corrupt(tmp_path: Path) -> None:
    path = tmp_path / "garbage.pdf"
    path.write_bytes(b"%PDF-1.7\n" + bytes(range(256)) * 8)
    with pytest.raises(CorruptFileError):
        extract(path, Kind.PDF)


def test_page_cap_cuts_long_documents(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pdf_module, "MAX_PAGES", 2)
    result = read("pdflatex-4-pages.pdf")
    assert result.page_count == 4  # the document's length, not what was read
    assert result.text.count("\n\n") == 1
    assert result.truncated


def test_character_cap_stops_reading_pages(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pdf_module, "MAX_CHARS", 100)
    result = read("pdflatex-4-pages.pdf")
    assert "\n\n" not in result.text  # only the first page was read
    assert result.truncated


def test_superscripts_and_symbols_are_kept(tmp_path: Path) -> None:
    path = tmp_path / "physics.pdf"
    sheet = canvas.Canvas(str(path), pagesize=A4)
    sheet.drawString(40, 800, "Energy: E = mc², area: 3 m², half: ½, price: 5 €")
    sheet.save()
    assert extract(path, Kind.PDF).text == "Energy: E = mc², area: 3 m², half: ½, price: 5 €"
