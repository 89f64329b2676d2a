"""Translated interface text (Flask-Babel), English and Spanish.

The language is the one the LMS asked for in the launch (``launch_presentation.locale``,
kept in the page token, or in ``g`` while the launch itself is answered, so that its error
and cookie pages speak it), else the browser's Accept-Language, else English. The REST API
always answers in English: its clients are programs. Templates use ``_()``; Python code uses
:func:`flask_babel.gettext` / ``lazy_gettext``. Catalogues live in ``app/translations``;
``scripts/translations.sh`` updates and compiles them.

Texts the worker stores for a person to read later (a submission's progress and error
messages) are stored in English and marked with :func:`N_`; pages show them through the
``localize`` filter, which translates them in the reader's language (see docs/decisions.md).
``N_`` and the Flask-free ``gettext`` of the grading layer live in :mod:`app.catalogue`;
:func:`init_app` connects them to Flask-Babel.
"""

from __future__ import annotations

import re
from functools import lru_cache

from flask import Flask, g, has_request_context, request
from flask_babel import Babel, get_locale, get_translations, gettext
from flask_babel import support as babel_support

from app import catalogue
from app.catalogue import N_ as N_  # the marker, for the modules above the grading layer
from app.errors import is_rest_api
from app.lti.page_token import peek_locale

LANGUAGES = ("en", "es")

#: ``g`` key for the language a launch asked for, before it has a page token.
LAUNCH_LOCALE = "launch_locale"

_PLACEHOLDER = re.compile(r"%\((\w+)\)s")


def _locale() -> str:
    if not has_request_context():
        return LANGUAGES[0]  # the CLI and the worker speak English
    if is_rest_api():
        return LANGUAGES[0]
    token = (request.view_args or {}).get("token")
    # A page token carries its launch's language; a launch being handled (its error or
    # cookie page) left it in ``g`` (app.lti.views); otherwise the browser decides.
    wanted = peek_locale(token) if token else g.get(LAUNCH_LOCALE)
    if wanted:
        language = wanted.replace("_", "-").split("-")[0].lower()
        if language in LANGUAGES:
            return language
    return request.accept_languages.best_match(LANGUAGES) or LANGUAGES[0]


def _translations() -> babel_support.NullTranslations:
    """The request's catalogue for templates, looked up once per language: Flask-Babel's own
    look-up walks the request context three times per text, and a page has about thirty.
    Keyed by the locale object, so a ``force_locale`` block still gets its own language."""
    locale = getattr(getattr(g, "_flask_babel", None), "babel_locale", None)
    remembered = g.get("_evaluaitor_translations")
    if locale is not None and remembered is not None and remembered[0] is locale:
        return remembered[1]
    translations = get_translations()
    g._evaluaitor_translations = (get_locale(), translations)
    return translations


def localize(text: str | None) -> str | None:
    """A stored English text in the reader's language: the catalogue's translation of the same
    text, or of the message it was filled in from (``N_("… %(kind)s …") % values``, matched
    back to its parameters, which are localized in turn); anything unknown is shown as stored."""
    if not text:
        return text
    translated = gettext(text)
    if translated != text:
        return translated
    for pattern, msgid in _templates(_translations()):
        match = pattern.fullmatch(text)
        if match:
            return gettext(msgid, **{k: localize(v) for k, v in match.groupdict().items()})
    return text


@lru_cache(maxsize=8)
def _templates(translations: babel_support.NullTranslations) -> list[tuple[re.Pattern, str]]:
    """Each translated message with named placeholders, as a pattern that reads them back."""
    catalog = getattr(translations, "_catalog", {})  # gettext's own msgid → msgstr table
    found = []
    for msgid in catalog:
        if not isinstance(msgid, str):
            continue  # a plural form's (msgid, n) key
        names = _PLACEHOLDER.findall(msgid)
        literal = _PLACEHOLDER.sub("\0", msgid).replace("%%", "%")
        if not names or len(set(names)) != len(names) or len(literal) - len(names) < 12:
            continue  # no placeholder, a repeated one, or too little text to recognise
        parts = [re.escape(piece) for piece in literal.split("\0")]
        body = "".join(
            part + (f"(?P<{names[i]}>.+?)" if i < len(names) else "")
            for i, part in enumerate(parts)
        )
        found.append((re.compile(body, re.S), msgid))
    # The most specific first: "… is not %(expected)s" before "… is %(actual)s".
    return sorted(found, key=lambda item: -len(_PLACEHOLDER.sub("", item[1])))


def init_app(app: Flask) -> None:
    """Pages in the reader's language, and the grading layer's texts with them."""
    catalogue.install(gettext)
    Babel(app, locale_selector=_locale)
    app.jinja_env.install_gettext_callables(
        gettext=lambda s: _translations().ugettext(s),
        ngettext=lambda s, p, n: _translations().ungettext(s, p, n),
        pgettext=lambda c, s: _translations().upgettext(c, s),
        npgettext=lambda c, s, p, n: _translations().unpgettext(c, s, p, n),
        newstyle=True,
    )
    app.jinja_env.filters["localize"] = localize
    app.jinja_env.globals["get_locale"] = get_locale
