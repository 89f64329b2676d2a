"""The page token: the launch session that pages carry in their URL, signed and expiring.

The token (itsdangerous, keyed by ``SECRET_KEY``) names the platform, activity, user and role.
Pages carry it in their URL, not in a cookie, so they keep working inside an LMS iframe when
the browser blocks third-party cookies, and keep working when Redis is briefly down. The token
is never sent automatically by the browser, so it also protects form posts against cross-site
request forgery. Reading one needs no database, so :mod:`app.i18n` can take the launch's
language from it without the launch code (:mod:`app.lti.session`) it sits under.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from flask import current_app, g
from itsdangerous import BadData, URLSafeTimedSerializer

from app.errors import SessionExpired

_SALT = "evaluaitor.launch-session"


@dataclass(frozen=True)
class LaunchSession:
    launch_id: str
    platform_id: int
    activity_id: int
    user_id: int
    is_staff: bool
    return_url: str | None = None
    #: The language the LMS asked for (``launch_presentation.locale``), e.g. ``es-ES``.
    locale: str | None = None


def _serializer() -> URLSafeTimedSerializer:
    return URLSafeTimedSerializer(current_app.config["SECRET_KEY"], salt=_SALT)


def issue_token(session: LaunchSession) -> str:
    return _serializer().dumps(asdict(session))


def decode(token: str) -> LaunchSession:
    """The session a token names, if its signature holds and it has not expired; else
    SessionExpired. Whether it still grants access is :func:`app.lti.session.load`'s call.

    Checked once per request: the language selector and the view both read the token.
    """
    if g.get("page_token") == token:
        return g.page_session
    try:
        data = _serializer().loads(token, max_age=current_app.config["EVALUAITOR_LAUNCH_TTL"])
        session = LaunchSession(**data)
    except (BadData, TypeError) as exc:
        raise SessionExpired() from exc
    g.page_token, g.page_session = token, session
    return session


def peek_locale(token: str) -> str | None:
    """The locale in a page token, or None when the token is not valid (no error, and no
    database query: the error page of a refused token still speaks its language)."""
    try:
        return decode(token).locale
    except SessionExpired:
        return None
