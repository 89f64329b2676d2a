"""DOCX extraction on files made with python-docx: body order, tables in place, safe refusals."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import docx
import pytest
from docx.oxml import parse_xml
from PIL import Image

from app.extract import (
    CorruptFileError,
    Kind,
    NoTextError,
    UnsupportedFileError,
    extract,
    sniff,
)
from app.extract import word as word_module

W = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'
MC = 'xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006"'


def save(document: docx.document.Document, path: Path) -> Path:
    document.save(str(path))
    return path


def essay(path: Path) -> Path:
    """Heading, paragraph, a table in the middle, then more paragraphs."""
    document = docx.Document()
    document.add_heading("Pràctica 2: Qualificació", level=1)
    document.add_paragraph("Introducció: l'anàlisi del año 2024 és correcta.")
    table = document.add_table(rows=3, cols=2)
    for row, (criterion, points) in zip(
        table.rows, [("Criterio", "Puntuación"), ("Análisis", "8"), ("Redacción", "7")], strict=True
    ):
        row.cells[0].text, row.cells[1].text = criterion, points
    document.add_paragraph("Conclusió: cal revisar la bibliografia.")
    document.add_paragraph("Bibliografia\tpàgina 3")
    return save(document, path)


def rewrite_zip(source: Path, target: Path, replace: dict[str, bytes | None]) -> Path:
    """Copy a zip, replacing, adding or (with None) dropping entries."""
    with zipfile.ZipFile(source) as old, zipfile.ZipFile(target, "w") as new:
        for item in old.infolist():
            data = replace.get(item.filename, old.read(item.filename))
            if data is not None:
                new.writestr(item, data)
        for name, data in replace.items():
            if data is not None and name not in old.namelist():
                new.writestr(name, data)
    return target


def test_paragraphs_and_table_in_body_order(tmp_path: Path) -> None:
    path = essay(tmp_path / "essay.docx")
    assert sniff("essay.docx", path.read_bytes()[: 64 * 1024]) is Kind.DOCX
    result = extract(path, Kind.DOCX)
    assert result.text == (
        "Pràctica 2: Qualificació\n"
        "Introducció: l'anàlisi del año 2024 és correcta.\n"
        "Criterio | Puntuación\n"
        "Análisis | 8\n"
        "Redacción | 7\n"
        "Conclusió: cal revisar la bibliografia.\n"
        "Bibliografia\tpàgina 3"
    )
    assert (result.kind, result.method) == (Kind.DOCX, "python-docx")
    assert (result.page_count, result.encoding, result.language_hint) == (None, None, None)
    assert result.word_count == len(result.text.split())
    assert result.char_count == len(result.text)


def test_merged_cells_are_not_repeated(tmp_path: Path) -> None:
    document = docx.Document()
    table = document.add_table(rows=2, cols=3)
    table.cell(0, 0).merge(table.cell(0, 1)).text = "Wide header"
    table.cell(0, 2).text = "Points"
    table.cell(1, 0).merge(table.cell(1, 2)).text = "Whole row"
    result = extract(save(document, tmp_path / "merged.docx"), Kind.DOCX)
    assert result.text == "Wide header | Points\nWhole row"


def test_nested_table_stays_inside_its_cell(tmp_path: Path) -> None:
    document = docx.Document()
    outer = document.add_table(rows=1, cols=2)
    outer.cell(0, 0).text = "Exercise 1"
    inner = outer.cell(0, 1).add_table(rows=1, cols=2)
    inner.cell(0, 0).text, inner.cell(0, 1).text = "a = 1", "b = 2"
    document.add_paragraph("After the table.")
    result = extract(save(document, tmp_path / "nested.docx"), Kind.DOCX)
    assert result.text == "Exercise 1 | a = 1 | b = 2\nAfter the table."


def test_answers_in_content_controls_are_read(tmp_path: Path) -> None:
    """Assignment templates put the student's answer inside a content control (w:sdt)."""
    document = docx.Document()
    document.add_paragraph("Question 1: define recursion.")
    document.add_paragraph("Question 2: give an example.")
    answer = parse_xml(
        f"<w:sdt {W}><w:sdtPr><w:alias w:val='Answer 1'/></w:sdtPr><w:sdtContent>"
        "<w:p><w:r><w:t>A function that calls itself.</w:t></w:r></w:p>"
        "</w:sdtContent></w:sdt>"
    )
    document.paragraphs[0]._p.addnext(answer)
    result = extract(save(document, tmp_path / "form.docx"), Kind.DOCX)
    assert result.text == (
        "Question 1: define recursion.\nA function that calls itself.\nQuestion 2: give an example."
    )


def test_tracked_changes_show_the_current_text(tmp_path: Path) -> None:
    document = docx.Document()
    paragraph = parse_xml(
        f"<w:p {W}><w:r><w:t xml:space='preserve'>The answer is </w:t></w:r>"
        "<w:del w:id='1' w:author='A'><w:r><w:delText>41</w:delText></w:r></w:del>"
        "<w:ins w:id='2' w:author='A'><w:r><w:t>42</w:t></w:r></w:ins>"
        "<w:hyperlink><w:r><w:t>, see notes</w:t></w:r></w:hyperlink></w:p>"
    )
    document.element.body.insert(0, paragraph)
    result = extract(save(document, tmp_path / "tracked.docx"), Kind.DOCX)
    assert result.text == "The answer is 42, see notes"


def test_text_box_is_read_once(tmp_path: Path) -> None:
    """Word stores a text box twice: the modern shape and a legacy fallback copy."""
    box = "<w:txbxContent><w:p><w:r><w:t>Box text</w:t></w:r></w:p></w:txbxContent>"
    paragraph = parse_xml(
        f"<w:p {W} {MC}><w:r><w:t xml:space='preserve'>Before </w:t></w:r><w:r>"
        f"<mc:AlternateContent><mc:Choice Requires='wps'><w:drawing>{box}</w:drawing></mc:Choice>"
        f"<mc:Fallback><w:pict>{box}</w:pict></mc:Fallback></mc:AlternateContent>"
        "</w:r></w:p>"
    )
    document = docx.Document()
    document.element.body.insert(0, paragraph)
    result = extract(save(document, tmp_path / "box.docx"), Kind.DOCX)
    assert result.text == "Before Box text"


def test_document_with_only_a_picture_has_no_text(tmp_path: Path) -> None:
    picture = io.BytesIO()
    Image.new("RGB", (20, 20), "blue").save(picture, format="PNG")
    document = docx.Document()
    document.add_picture(picture)
    with pytest.raises(NoTextError) as caught:
        extract(save(document, tmp_path / "photo.docx"), Kind.DOCX)
    assert "no text" in caught.value.user_message


def test_zip_without_word_document_is_corrupt(tmp_path: Path) -> None:
    path = tmp_path / "fake.docx"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("notes.txt", "not a Word document")
    assert sniff("fake.docx", path.read_bytes()) is Kind.DOCX  # sniff only sees a zip
    with pytest.raises(CorruptFileError) as caught:
        extract(path, Kind.DOCX)
    assert "not a Word document" in caught.value.user_message
    assert str(tmp_path) not in caught.value.user_message


def test_truncated_docx_is_corrupt(tmp_path: Path) -> None:
    data = essay(tmp_path / "essay.docx").read_bytes()
    path = tmp_path / "half.docx"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(CorruptFileError) as caught:
        extract(path, Kind.DOCX)
    assert "damaged" in caught.value.user_message
    assert caught.value.__cause__ is not None


def test_broken_xml_is_corrupt(tmp_path: Path) -> None:
    source = essay(tmp_path / "essay.docx")
    path = rewrite_zip(source, tmp_path / "broken.docx", {"word/document.xml": b"<w:document"})
    with pytest.raises(CorruptFileError):
        extract(path, Kind.DOCX)


def test_macro_enabled_document_renamed_docx_is_refused(tmp_path: Path) -> None:
    source = essay(tmp_path / "essay.docx")
    with zipfile.ZipFile(source) as archive:
        types = archive.read("[Content_Types].xml")
    macro_types = types.replace(
        b"wordprocessingml.document.main+xml", b"ms-word.document.macroEnabled.main+xml"
    )
    path = rewrite_zip(source, tmp_path / "macro.docx", {"[Content_Types].xml": macro_types})
    with pytest.raises(CorruptFileError):
        extract(path, Kind.DOCX)


def test_zip_bomb_is_refused_before_parsing(tmp_path: Path) -> None:
    path = tmp_path / "bomb.docx"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("word/document.xml", b" " * (word_module.MAX_DOCUMENT_XML_BYTES + 1))
    assert path.stat().st_size < 200_000
    with pytest.raises(UnsupportedFileError) as caught:
        extract(path, Kind.DOCX)
    assert "too large" in caught.value.user_message


def test_huge_package_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(word_module, "MAX_PACKAGE_BYTES", 10_000)
    source = essay(tmp_path / "essay.docx")
    path = rewrite_zip(source, tmp_path / "big.docx", {"word/media/huge.bin": bytes(20_000)})
    with pytest.raises(UnsupportedFileError):
        extract(path, Kind.DOCX)
