"""The site administrator's page at /admin: platforms, deployments, usage, signing keys.

It is a normal browser page, never framed by an LMS, so unlike the LTI pages it uses a
cookie (signed, HttpOnly, SameSite=Lax, Secure over HTTPS, expiring) and Flask-WTF's CSRF
tokens. The cookie names a session kept in Redis (:mod:`app.admin.auth`), so signing out
ends it on the server. CSRF checks run for this blueprint only: the LTI pages are protected by the
page token in their URL and an LMS iframe may not keep cookies at all.
"""

from __future__ import annotations

from datetime import timedelta

from flask import Flask, request
from flask.sessions import SecureCookieSessionInterface

from app.extensions import csrf


class AdminSessionInterface(SecureCookieSessionInterface):
    """Flask's signed-cookie session, with SameSite=Lax and Secure whenever served over HTTPS.

    Only the admin page writes to the session; the LTI flow keeps its state in Redis.
    """

    def get_cookie_samesite(self, app: Flask) -> str:
        return "Lax"

    def get_cookie_secure(self, app: Flask) -> bool:
        return request.is_secure or super().get_cookie_secure(app)


def init_app(app: Flask) -> None:
    # Loaded here, as create_app loads its blueprints: importing any app.* module runs
    # app/__init__.py, which imports this package, and need not load the admin views.
    from app.admin.views import bp

    # CSRFProtect checks nothing by itself; the admin blueprint calls csrf.protect().
    app.config["WTF_CSRF_CHECK_DEFAULT"] = False
    app.config["SESSION_COOKIE_HTTPONLY"] = True
    app.permanent_session_lifetime = timedelta(hours=app.config["EVALUAITOR_ADMIN_SESSION_HOURS"])
    app.session_interface = AdminSessionInterface()
    csrf.init_app(app)
    app.register_blueprint(bp)
