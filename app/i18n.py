"""Translated interface text (Flask-Babel), English and Spanish.

The language is the one the LMS asked for in the launch (``launch_presentation.locale``,
kept in the page token), else the browser's Accept-Language, else English. Templates use
``_()``; Python code uses :func:`flask_babel.gettext` / ``lazy_gettext``.
Catalogues live in ``app/translations``; ``scripts/translations.sh`` updates and compiles them.
"""

from __future__ import annotations

from flask import Flask, has_request_context, request
from flask_babel import Babel

LANGUAGES = ("en", "es")


def _locale() -> str:
    if not has_request_context():
        return LANGUAGES[0]  # the CLI and the worker speak English
    token = (request.view_args or {}).get("token")
    if token:
        from app.lti.session import peek_locale

        wanted = peek_locale(token)
        if wanted:
            language = wanted.replace("_", "-").split("-")[0].lower()
            if language in LANGUAGES:
                return language
    return request.accept_languages.best_match(LANGUAGES) or LANGUAGES[0]


def init_app(app: Flask) -> None:
    Babel(app, locale_selector=_locale)
