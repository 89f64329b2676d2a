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
3. Otherwise the launch page explains what happened and offers to start the launch again
   in a new top-level window, where the cookie is first-party.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlsplit

from flask import Response, g, make_response, render_template, request

from app.lti.launch import CookiesBlocked, LoginRecord, oidc_login, remember_login
from app.models import Platform

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
    back instead of redirecting at once (``after_request`` of the LTI blueprint)."""
    check = g.pop("lti_storage_check", None)
    if check is None or response.status_code not in (302, 303):
        return response
    login, nonce = check
    return make_response(
        render_template(
            "lti/storage.html", mode="get", login=login, nonce=nonce, next_url=response.location
        )
    )


def new_window_page(error: CookiesBlocked):
    """The fallback: say why, and offer the same launch again at top level."""
    return render_template("lti/new_window.html", login=error.login)


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"
