"""The grading layer's texts: English without Flask, the reader's language once the app wires
Flask-Babel in (app.catalogue, installed by app.i18n.init_app)."""

from __future__ import annotations

import pytest

from app import catalogue
from app.grading import registry
from app.grading.rubric import RubricError, parse_rubric


def test_texts_are_english_until_a_translator_is_installed(monkeypatch):
    monkeypatch.setattr(catalogue, "_translate", catalogue.english)
    later = catalogue.lazy_gettext("%(n)s files", n=2)
    assert catalogue.gettext("%(n)s files", n=1) == "1 files"
    assert str(later) == "2 files"

    spanish = {"%(n)s files": "%(n)s ficheros"}
    catalogue.install(lambda message, **params: spanish[message] % params)

    assert str(later) == "2 ficheros"  # translated when shown, not when made
    assert catalogue.gettext("%(n)s files", n=3) == "3 ficheros"


@pytest.mark.parametrize(
    ("language", "unknown", "rubric"),
    [
        ("es", "No existe ninguna estrategia", "criterio 1"),
        ("en", "There is no grading strategy", "criterion 1"),
    ],
)
def test_grading_errors_speak_the_readers_language(app, language, unknown, rubric):
    with app.test_request_context(headers={"Accept-Language": language}):
        with pytest.raises(registry.UnknownPlugin) as raised:
            registry.get("nope")
        assert str(raised.value).startswith(unknown)
        with pytest.raises(RubricError, match=rubric):
            parse_rubric([{"name": "a", "requirement": "b", "weight": 0}])
