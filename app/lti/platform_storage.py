"""Launching inside an LMS frame whose cookies the browser blocks.

pylti1p3 ties a launch to its login with a short state cookie. Inside the LMS iframe that
cookie is third-party, and browsers block it more and more. In order of preference:

1. Over HTTPS the cookie is ``SameSite=None; Secure; Partitioned``: Chrome keeps partitioned
   cookies even when it blocks third-party ones, and nothing more is needed.
2. If the platform names a storage frame (``lti_storage_target`` in the login initiation,
   the 1EdTech "LTI Client Side postMessages" platform storage), the login page stores the
   state and nonce there with ``lti.put_data`` before going on to the platform; when the
   cookie is missing at launch, the launch page reads them back with ``lti.get_data`` and
   opens the tool only if both match what this launch carries.
3. Otherwise the launch is checked in full but for the cookie, and the page explains what
   happened and offers to open the tool in a new top-level window. The frame cannot start
   the login again: Moodle's ``lti_message_hint`` is single-use, so a second login with it
   gets "Invalid request". It hands the checked launch over instead, by a random token that
   works once, for :data:`HANDOFF_SECONDS`, posted (never in a URL) to :func:`take_handoff`
   (docs/decisions.md, "A new window without a second login").
"""

from __future__ import annotations

import re
import secrets
from urllib.parse import parse_qs, urlsplit

from flask import Response, g, make_response, redirect, render_template, request
from flask_babel import lazy_gettext as _l

from app.errors import LaunchError
from app.extensions import redis_connection
from app.lti.launch import LoginRecord, oidc_login, remember_login
from app.models import Platform

#: How long the token handing a launch to a new window works: one click.
HANDOFF_SECONDS = 120
HANDOFF_KEY = "evaluaitor:lti-handoff:"

#: The login initiation parameters a restarted launch sends again (OIDC and LTI 1.3).
LOGIN_PARAMS = (
    "iss",
    "login_hint",
    "target_link_uri",
    "lti_message_hint",
    "lti_deployment_id",
    "client_id",
)
_FRAME_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


def start_login(platform: Platform, launch_url: str) -> Response:
    """Answer a login initiation: the redirect to the platform, or, when the platform offers
    storage, a page that stores the state there first and then follows that redirect."""
    redirect = oidc_login(platform).redirect(launch_url)
    query = parse_qs(urlsplit(redirect.location).query)
    target = request.values.get("lti_storage_target", "")
    login = LoginRecord(
        state=query["state"][0],
        nonce=query["nonce"][0],
        storage_target=target if _FRAME_NAME.match(target) else None,
        platform_origin=_origin(platform.auth_login_url),
        params={k: request.values[k] for k in LOGIN_PARAMS if request.values.get(k)},
    )
    remember_login(login)
    if login.storage_target is None:
        return redirect
    page = make_response(
        render_template(
            "lti/storage.html",
            mode="put",
            login=login,
            nonce=login.nonce,
            next_url=redirect.location,
        )
    )
    for cookie in redirect.headers.getlist("Set-Cookie"):  # the cookie may work after all
        page.headers.add("Set-Cookie", cookie)
    return page


def hold_redirect_for_check(response: Response) -> Response:
    """After a launch whose state came from platform storage, show the page that reads it
    back instead of redirecting at once; after one whose cookie was blocked, the page that
    hands it to a new window (``after_request`` of the LTI blueprint)."""
    check = g.pop("lti_storage_check", None)
    new_window = g.pop("lti_new_window", False)
    if response.status_code not in (302, 303):
        return response
    if new_window:
        token = secrets.token_urlsafe(32)
        redis_connection().set(HANDOFF_KEY + token, response.location, ex=HANDOFF_SECONDS)
        return make_response(render_template("lti/new_window.html", handoff=token))
    if check is None:
        return response
    login, nonce = check
    return make_response(
        render_template(
            "lti/storage.html", mode="get", login=login, nonce=nonce, next_url=response.location
        )
    )


def take_handoff(token: str) -> Response:
    """The new window's request: the page the launch opened, once."""
    location = redis_connection().getdel(HANDOFF_KEY + token) if token else None
    if location is None:
        raise LaunchError(
            _l("This link to Evaluaitor has expired. Open the activity again from your course."),
            detail="new-window handoff token unknown, used or expired",
        )
    return redirect(location.decode(), code=303)


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"
