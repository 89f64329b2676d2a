"""Text, Markdown and code files: encodings come out right, newlines are normalised."""

from __future__ import annotations

import codecs
from pathlib import Path

import pytest

from app.extract import EmptyFileError, Kind, extract, sniff
from app.extract import text as text_module
from app.extract.text import detect_encoding

SPANISH_CATALAN = "Qualificació: 8,5.\nPuntuación del año: notable; l'alumna té raó.\n"


def write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_utf8_without_bom(tmp_path: Path) -> None:
    result = extract(write(tmp_path, "a.txt", SPANISH_CATALAN.encode()), Kind.TEXT)
    assert result.text == SPANISH_CATALAN
    assert (result.encoding, result.method) == ("utf-8", "text:utf-8")
    assert result.kind is Kind.TEXT
    assert result.page_count is None
    assert result.language_hint is None


def test_utf8_with_bom_drops_the_bom(tmp_path: Path) -> None:
    result = extract(write(tmp_path, "a.txt", SPANISH_CATALAN.encode("utf-8-sig")), Kind.TEXT)
    assert result.text == SPANISH_CATALAN
    assert result.encoding == "utf-8-sig"


@pytest.mark.parametrize("codec", ["utf-16-le", "utf-16-be"])
def test_utf16_with_bom(tmp_path: Path, codec: str) -> None:
    bom = codecs.BOM_UTF16_LE if codec.endswith("le") else codecs.BOM_UTF16_BE
    path = write(tmp_path, "a.txt", bom + SPANISH_CATALAN.encode(codec))
    assert sniff("a.txt", path.read_bytes()) is Kind.TEXT
    result = extract(path, Kind.TEXT)
    assert result.text == SPANISH_CATALAN
    assert result.encoding == "utf-16"


def test_cp1252_spanish_and_catalan(tmp_path: Path) -> None:
    path = write(tmp_path, "a.txt", SPANISH_CATALAN.encode("cp1252"))
    assert sniff("a.txt", path.read_bytes()) is Kind.TEXT
    result = extract(path, Kind.TEXT)
    assert "Qualificació" in result.text
    assert "Puntuación" in result.text
    assert "año" in result.text
    assert result.encoding == "cp1252"
    assert result.method == "text:cp1252"


# Short texts are where charset-normalizer alone guesses cp1250/cp852/big5 ("ańo", "A隳").
@pytest.mark.parametrize(
    "text",
    ["Qualificació", "Puntuación", "año", "Año", "Résumé: 20 € – “bé”", "Größe, Übermaß"],
)
def test_short_cp1252_words(text: str) -> None:
    data = text.encode("cp1252")
    assert data.decode(detect_encoding(data)) == text


def test_other_legacy_encodings_are_left_to_charset_normalizer() -> None:
    text = "Привет, как дела? Это тестовый текст на русском языке, и он достаточно длинный."
    data = text.encode("cp1251")
    assert data.decode(detect_encoding(data)) == text


def test_newlines_are_normalised_and_nul_removed(tmp_path: Path) -> None:
    result = extract(write(tmp_path, "a.txt", b"one\r\ntwo\rthree\x00\nfour"), Kind.TEXT)
    assert result.text == "one\ntwo\nthree\nfour"
    assert (result.word_count, result.char_count) == (4, len("one\ntwo\nthree\nfour"))


@pytest.mark.parametrize(
    ("name", "language"),
    [("main.py", "python"), ("Main.java", "java"), ("util.H", "c"), ("app.ts", "typescript")],
)
def test_code_gets_a_language_hint(tmp_path: Path, name: str, language: str) -> None:
    source = "if (x) {\n\treturn 1; // comentari: qualificació\n}\n"
    result = extract(write(tmp_path, name, source.encode()), Kind.CODE)
    assert result.text == source  # indentation and tabs untouched
    assert result.kind is Kind.CODE
    assert result.language_hint == language


def test_markdown_keeps_its_markup(tmp_path: Path) -> None:
    source = "# Pràctica 1\n\n- **Puntuación**: 7\n"
    result = extract(write(tmp_path, "README.md", source.encode()), Kind.MARKDOWN)
    assert result.text == source
    assert result.language_hint is None


@pytest.mark.parametrize("data", [b"", b" \r\n\t ", "  \n".encode("utf-16"), b"\x00\x00"])
def test_empty_text_file(tmp_path: Path, data: bytes) -> None:
    with pytest.raises(EmptyFileError) as caught:
        extract(write(tmp_path, "a.txt", data), Kind.TEXT)
    assert "empty" in caught.value.user_message


def test_long_text_is_cut_on_a_character_boundary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(text_module, "MAX_TEXT_BYTES", 12)  # ends inside the third "ñ"
    result = extract(write(tmp_path, "a.txt", ("año " * 10).encode()), Kind.TEXT)
    assert result.text == "año año a"
    assert result.truncated
