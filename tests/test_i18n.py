"""The interface in English and Spanish: the launch's locale, else Accept-Language, else English.

Pages are fetched over real HTTP after real LTI launches from the fake Moodle; the catalogue
tests extract the messages from the code with Babel, so a new string without a Spanish
translation fails here.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from babel.messages.extract import DEFAULT_KEYWORDS, extract_from_dir
from babel.messages.frontend import parse_mapping_cfg
from babel.messages.mofile import read_mo
from babel.messages.pofile import read_po
from flask_babel import get_locale, ngettext, refresh

from app.extensions import db
from app.grading.grounding import UNGROUNDED
from app.i18n import N_, localize
from app.models import JobStatus, Submission
from tests.conftest import run_jobs
from tests.documents import ESSAY
from tests.fakes.platform import LTI_CLAIM, TEACHER
from tests.test_admin import TOKEN
from tests.test_core_loop import open_activity, status, upload
from tests.test_practice import practice_platform  # noqa: F401  (the fixture)

ROOT = Path(__file__).resolve().parent.parent
CATALOGUE = ROOT / "app" / "translations" / "es" / "LC_MESSAGES" / "messages.po"
COMPILED = CATALOGUE.with_suffix(".mo")
JS_MESSAGES = "app/templates/_js_messages.html"
#: The keywords scripts/translations.sh extracts with, besides Babel's defaults (_, gettext…).
KEYWORDS = DEFAULT_KEYWORDS | {"_l": None, "lazy_gettext": None, "N_": None}
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64


@pytest.fixture(autouse=True)
def compiled_catalogue() -> None:
    """Spanish pages need the compiled catalogue, which is built, not committed."""
    if not COMPILED.exists():
        pytest.fail(
            f"{COMPILED.relative_to(ROOT)} is missing: run `bash scripts/translations.sh "
            "compile` (scripts/setup.sh does it)"
        )


def in_locale(locale: str) -> dict:
    """make_id_token arguments for a launch whose LMS asks for ``locale``."""
    presentation = {"locale": locale, "document_target": "iframe"}
    return {"extra_claims": {LTI_CLAIM + "launch_presentation": presentation}}


@contextmanager
def reading(app, language: str, path: str = "/") -> Iterator[None]:
    """A request from a browser that prefers ``language``. Flask-Babel keeps the chosen
    locale on the app context, which the ``app`` fixture holds open: forget it first."""
    with app.test_request_context(path, headers={"Accept-Language": language}):
        refresh()
        yield


def messages_attribute(page: str) -> dict[str, str]:
    """The texts a page hands to its script (``data-messages``, see _js_messages.html)."""
    found = re.search(r"data-messages='([^']*)'", page)
    assert found, "no data-messages attribute on the page"
    return json.loads(html.unescape(found.group(1)))


# -- the language of a launch -------------------------------------------------------------


@pytest.mark.parametrize(
    ("locale", "lang", "heading", "not_there"),
    [
        ("es-ES", "es", "Entregue su trabajo", "Submit your work"),
        ("es_MX", "es", "Entregue su trabajo", "Submit your work"),
        ("en", "en", "Submit your work", "Entregue su trabajo"),
        ("fr-FR", "en", "Submit your work", "Entregue su trabajo"),  # not offered: English
    ],
)
def test_the_student_page_speaks_the_launch_language(
    browser, platform, live_tool, locale, lang, heading, not_there
):
    page = open_activity(browser, platform, live_tool, **in_locale(locale))
    text = browser.get(page).text
    assert f'<html lang="{lang}">' in text
    assert heading in text and not_there not in text
    # The status script gets its texts in the same language.
    queued = "Waiting in the grading queue"
    shown = "Esperando en la cola de calificación" if lang == "es" else queued
    assert messages_attribute(text)[queued] == shown


def test_the_launch_language_wins_over_the_browser_language(browser, platform, live_tool):
    page = open_activity(browser, platform, live_tool, **in_locale("es-ES"))
    text = browser.get(page, headers={"Accept-Language": "en-GB,en;q=0.9"}).text
    assert "Entregue su trabajo" in text


@pytest.mark.parametrize(
    ("locale", "expected", "not_there"),
    [
        ("es-ES", ["entregas", "Estadísticas", "Ordenar por"], "Sort by"),
        ("en", ["submissions", "Statistics", "Sort by"], "Ordenar por"),
    ],
)
def test_the_teacher_pages_speak_the_launch_language(
    browser, platform, live_tool, locale, expected, not_there
):
    page = open_activity(browser, platform, live_tool, user="3", roles=TEACHER, **in_locale(locale))
    text = browser.get(page).text
    assert all(word in text for word in expected), expected
    assert not_there not in text
    settings = browser.get(page + "settings").text
    add = "Añadir un criterio" if locale == "es-ES" else "Add a criterion"
    assert messages_attribute(settings)["Add a criterion"] == add


def test_a_refused_upload_is_explained_in_spanish(browser, platform, live_tool):
    page = open_activity(browser, platform, live_tool, **in_locale("es-ES"))

    renamed = upload(browser, page, "essay.pdf", PNG)
    assert renamed.status_code == 400
    # The sentence and the noun phrase inside it are both translated.
    assert "pero su contenido es una imagen PNG" in html.unescape(renamed.text)

    wrong_type = upload(browser, page, "essay.exe", b"MZ binary")
    assert wrong_type.status_code == 400
    assert "No se acepta este tipo de archivo" in wrong_type.text
    assert db.session.query(Submission).count() == 0


def test_a_message_the_worker_stored_is_shown_in_each_readers_language(
    browser, platform, live_tool
):
    """No language model is configured: the worker stores its English explanation once;
    the Spanish student and the English teacher each read it in their own language."""
    student = open_activity(browser, platform, live_tool, **in_locale("es-ES"))
    assert upload(browser, student, "essay.txt", ESSAY.encode()).status_code == 303
    run_jobs()

    db.session.expire_all()
    stored = db.session.query(Submission).one()
    assert stored.status == JobStatus.FAILED
    assert stored.error_message.startswith("No language model is configured")

    spanish = "No hay ningún modelo de lenguaje configurado"
    assert spanish in html.unescape(browser.get(student).text)
    assert status(browser, student)["error"].startswith(spanish)

    with_teacher = open_activity(browser, platform, live_tool, user="3", roles=TEACHER)
    teacher_page = browser.get(with_teacher).text
    assert "No language model is configured" in teacher_page and spanish not in teacher_page


# -- pages without a token: Accept-Language -----------------------------------------------


@pytest.mark.parametrize(
    ("accept", "expected"),
    [
        ("es-ES,es;q=0.9", "Esta página no existe."),
        ("fr-FR,es;q=0.5", "Esta página no existe."),
        ("es;q=0.3,en;q=0.9", "This page does not exist."),
        ("de", "This page does not exist."),
        (None, "This page does not exist."),
    ],
)
def test_an_error_page_follows_accept_language(browser, accept, expected):
    headers = {"Accept-Language": accept} if accept else {}
    response = browser.get("/no-such-page", headers=headers)
    assert response.status_code == 404
    assert expected in html.unescape(response.text)


def test_an_expired_page_link_is_explained_in_spanish(browser):
    response = browser.get("/l/not-a-page-token/", headers={"Accept-Language": "es"})
    assert response.status_code == 401
    text = html.unescape(response.text)
    assert '<html lang="es">' in text and "Problema – Evaluaitor" in text
    assert "Su sesión ha caducado. Vuelva a abrir la actividad desde su curso." in text
    assert "Traceback" not in text


@pytest.mark.parametrize(
    ("accept", "expected"), [("es", "Iniciar sesión"), ("en", "Sign in")], ids=["es", "en"]
)
def test_the_admin_sign_in_follows_accept_language(app, browser, accept, expected):
    app.config["EVALUAITOR_ADMIN_TOKEN"] = TOKEN
    page = browser.get("/admin/", headers={"Accept-Language": accept}).text
    assert expected in html.unescape(page)


@pytest.mark.parametrize(
    ("accept", "expected"),
    [("es-ES", ["Lanzar como estudiante", '<html lang="es">']), ("en", ["Launch as student"])],
    ids=["es", "en"],
)
def test_the_practice_platform_follows_accept_language(
    practice_platform,  # noqa: F811  (the fixture imported above)
    accept,
    expected,
):
    page = httpx.get(practice_platform.base_url + "/", headers={"Accept-Language": accept})
    assert page.status_code == 200
    assert all(text in page.text for text in expected), expected


def test_the_rest_api_answers_in_english_whatever_the_browser_says(app, browser):
    response = browser.get("/evaluations", headers={"Accept-Language": "es"})
    assert response.status_code == 401
    message = response.json()["error"]["message"]
    assert message.isascii() and "token" in message
    with reading(app, "es", "/evaluations"):
        assert str(get_locale()) == "en"
    with reading(app, "es", "/no-such-page"):
        assert str(get_locale()) == "es"


# -- stored texts and plural forms --------------------------------------------------------


@pytest.mark.parametrize(
    ("stored", "spanish"),
    [
        (N_("Waiting in the grading queue"), "Esperando en la cola de calificación"),
        (
            N_("Asking the model (%(n)s questions)") % {"n": 3},
            "Consultando al modelo (3 preguntas)",
        ),
        (
            N_(
                "These tests could not give a result: %(tests)s. "
                "A teacher needs to review this submission."
            )
            % {"tests": "base/intro, bonus/style"},
            "Estas pruebas no han podido dar un resultado: base/intro, bonus/style. "
            "Un docente debe revisar esta entrega.",
        ),
        (
            N_(
                "This file is named '%(extension)s' but its content is not %(expected)s. "
                "Save your work in the right format and upload it again."
            )
            % {"extension": ".pdf", "expected": N_("a PDF")},
            "Este archivo tiene la extensión '.pdf', pero su contenido no es un PDF. "
            "Guarde su trabajo en el formato correcto y vuelva a subirlo.",
        ),
        (
            UNGROUNDED % {"criteria": "Thesis, Dates"},
            "El evaluador dio puntos sin un pasaje del trabajo que los justifique en: Thesis, "
            "Dates. Esos puntos no se han contado; un docente debe revisar esta entrega.",
        ),
        # What the gradebook-column and score-push code store for the teacher page.
        (
            "The activity has no gradebook column in the LMS.",
            "La actividad no tiene columna en el libro de calificaciones del LMS.",
        ),
        (
            "The LMS answered with a gradebook column that has no address.",
            "El LMS respondió con una columna del libro de calificaciones que no tiene dirección.",
        ),
        ("Something a plugin wrote that no catalogue knows", None),
        ("", None),
        (None, None),
    ],
)
def test_stored_english_texts_are_localized(app, stored, spanish):
    with reading(app, "es"):
        assert localize(stored) == (spanish if spanish is not None else stored)
    with reading(app, "en"):
        assert localize(stored) == stored


@pytest.mark.parametrize(
    ("n", "expected"), [(1, "Le queda 1 intento."), (3, "Le quedan 3 intentos.")]
)
def test_spanish_plural_forms(app, n, expected):
    with reading(app, "es"):
        assert ngettext("You have %(num)s attempt left.", "You have %(num)s attempts left.", n) == (
            expected
        )


# -- the catalogue ------------------------------------------------------------------------


def extracted_messages() -> set[str]:
    """Every msgid (the singular of plurals) in the code and templates, as babel.cfg says."""
    with open(ROOT / "babel.cfg") as config:
        method_map, options_map = parse_mapping_cfg(config)
    found = set()
    for _file, _line, message, _comments, _context in extract_from_dir(
        str(ROOT), method_map, options_map, keywords=KEYWORDS
    ):
        found.add(message[0] if isinstance(message, tuple) else message)
    return found


def test_every_message_has_a_spanish_translation():
    with open(CATALOGUE, "rb") as po:
        catalogue = read_po(po)
    assert catalogue.plural_forms == "nplurals=2; plural=(n != 1);"
    untranslated = []
    for msgid in sorted(extracted_messages()):
        entry = catalogue.get(msgid)
        strings = (
            entry.string
            if entry and isinstance(entry.string, tuple)
            else ((entry.string,) if entry else ("",))
        )
        if not all(strings):
            untranslated.append(msgid)
    assert not untranslated, (
        "messages without a Spanish translation (run `bash scripts/translations.sh`, then "
        "translate them in app/translations/es/LC_MESSAGES/messages.po):\n"
        + "\n".join(untranslated)
    )
    fuzzy = [m.id for m in catalogue if m.id and m.fuzzy]
    assert not fuzzy, f"fuzzy entries to check and confirm: {fuzzy}"
    # Placeholders: the same %(name)s in the translation as in the English text.
    problems = [(m.id, [str(e) for e in errors]) for m, errors in catalogue.check()]
    assert not problems, problems


def test_every_text_a_page_script_translates_is_handed_to_it():
    """A ``t("…")`` in app/static/*.js needs its entry in templates/_js_messages.html (and so
    in the catalogue), or the script would show it in English on a Spanish page."""
    handed = set(re.findall(r"^\s*'([^']+)': _\(", (ROOT / JS_MESSAGES).read_text(), re.M))
    used = {
        (script.name, text)
        for script in (ROOT / "app" / "static").glob("*.js")
        for text in re.findall(r'\bt\("([^"]+)"', script.read_text())
    }
    assert used, 'no t("…") call found: has the scripts\' translator changed?'
    missing = sorted((name, text) for name, text in used if text not in handed)
    assert not missing, f"add these to {JS_MESSAGES}: {missing}"


def test_the_compiled_catalogue_matches_the_translations():
    with open(CATALOGUE, "rb") as po, open(COMPILED, "rb") as mo:
        source, compiled = read_po(po), read_mo(mo)
    wanted, have = (
        {_plain(m.id): _plain(m.string) for m in catalogue if m.id}
        for catalogue in (source, compiled)
    )
    assert have == wanted, "the .mo is stale: run `bash scripts/translations.sh compile`"


def _plain(value: str | list | tuple) -> str | tuple:
    """Plural entries' ids and strings as tuples (read_mo gives lists, read_po tuples)."""
    return value if isinstance(value, str) else tuple(value)
