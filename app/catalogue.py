"""Texts for the message catalogue, marked and translated without importing Flask.

The grading layer (strategies, extractors, the LLM client, the judge) runs in the worker and
in ``evaluaitor grade`` as well as in requests, and must not import Flask. It writes English
and marks it here. :func:`app.i18n.init_app` installs Flask-Babel's ``gettext``
(:func:`install`), so in a request the texts come out in the reader's language, and anywhere
else in English, as before. ``scripts/translations.sh`` extracts ``_``, ``_l`` and ``N_``.
"""

from __future__ import annotations

from collections.abc import Callable

#: gettext's shape: a message with ``%(name)s`` placeholders, and their values.
Translate = Callable[..., str]


def english(message: str, /, **params: object) -> str:
    """The source language, as gettext gives it when there is no catalogue."""
    return message % params if params else message


_translate: Translate = english


def install(translate: Translate) -> None:
    """Translate the texts marked here with ``translate`` from now on. One per process is
    enough: Flask-Babel's gettext takes the language from the request it is called in."""
    global _translate
    _translate = translate


def N_(message: str) -> str:  # noqa: N802 - the conventional name of gettext_noop
    """Mark an English text for the catalogue without translating it now: the worker stores
    it, and :func:`app.i18n.localize` translates it when a page shows it."""
    return message


def gettext(message: str, /, **params: object) -> str:
    """``message`` in the language of whoever is being answered now."""
    return _translate(message, **params)


class LazyText:
    """A message translated when it is shown rather than when it is made: an error raised
    while checking settings is read by whoever it reaches."""

    __slots__ = ("_message", "_params")

    def __init__(self, message: str, params: dict[str, object]) -> None:
        self._message = message
        self._params = params

    def __str__(self) -> str:
        return _translate(self._message, **self._params)

    def __repr__(self) -> str:
        return f"LazyText({self._message!r})"


def lazy_gettext(message: str, /, **params: object) -> LazyText:
    return LazyText(message, params)
