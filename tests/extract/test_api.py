"""The contract other packages code against: names, types, error messages, normalisation."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

import app.extract as extract_package
from app.extract import (
    ACCEPTED_EXTENSIONS,
    CorruptFileError,
    EmptyFileError,
    EncryptedFileError,
    Extraction,
    ExtractionError,
    Kind,
    NoTextError,
    UnsupportedFileError,
    extract,
    sniff,
)
from app.extract import extraction as extraction_module

PDF_DIR = Path(__file__).parents[1] / "data" / "pdf"


def test_accepted_extensions() -> None:
    assert isinstance(ACCEPTED_EXTENSIONS, frozenset)
    expected = ".pdf .docx .txt .md .py .java .c .cpp .h .js .ts .html .css .json .sql"
    assert set(ACCEPTED_EXTENSIONS) == set(expected.split())


def test_kind_is_a_string_enum() -> None:
    assert [kind.value for kind in Kind] == ["pdf", "docx", "text", "markdown", "code"]
    assert Kind("markdown") is Kind.MARKDOWN
    assert Kind.PDF == "pdf"


@pytest.mark.parametrize(
    "error",
    [UnsupportedFileError, EmptyFileError, CorruptFileError, EncryptedFileError, NoTextError],
)
def test_errors_carry_a_user_message(error: type[ExtractionError]) -> None:
    exc = error("Upload it again.", "technical detail")
    assert isinstance(exc, ExtractionError)
    assert exc.user_message == "Upload it again."
    assert str(exc) == "technical detail"
    assert str(error("Only a message.")) == "Only a message."


def test_public_names() -> None:
    expected = (
        "sniff check extract Kind Extraction ExtractionError UnsupportedFileError EmptyFileError "
        "CorruptFileError EncryptedFileError NoTextError ACCEPTED_EXTENSIONS"
    )
    assert set(extract_package.__all__) == set(expected.split())
    assert all(hasattr(extract_package, name) for name in extract_package.__all__)


def test_extraction_is_frozen() -> None:
    result = Extraction.from_raw("a b", kind=Kind.TEXT, method="text:utf-8", encoding="utf-8")
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.text = "changed"  # type: ignore[misc]


def test_from_raw_normalises_and_counts() -> None:
    result = Extraction.from_raw("uno\r\ndos\x00\rtres  cuatro", kind=Kind.TEXT, method="m")
    assert result.text == "uno\ndos\ntres  cuatro"
    assert (result.word_count, result.char_count) == (4, len(result.text))
    assert not result.truncated


def test_from_raw_applies_the_character_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(extraction_module, "MAX_CHARS", 5)
    result = Extraction.from_raw("abcdefgh", kind=Kind.TEXT, method="m")
    assert (result.text, result.char_count, result.truncated) == ("abcde", 5, True)


def test_sniff_then_extract_with_a_string_path(tmp_path: Path) -> None:
    """The upload flow: sniff the head at upload time, store the kind, extract later."""
    path = tmp_path / "3-0123abcd.py"
    path.write_bytes(b"def nota():\n    return 10\n")
    stored_kind = sniff("practica.py", path.read_bytes()).value
    result = extract(str(path), Kind(stored_kind))
    assert result.text == "def nota():\n    return 10\n"
    assert result.language_hint == "python"


def test_missing_file_is_not_the_students_fault(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        extract(tmp_path / "gone.pdf", Kind.PDF)
