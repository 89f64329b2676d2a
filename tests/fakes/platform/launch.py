"""The OIDC side of an LTI 1.3 launch: what Moodle's mod/lti/auth.php accepts and answers."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from html import escape


class AuthorizationError(ValueError):
    """An authentication request the platform refuses; the message says why."""


class InvalidRequest(AuthorizationError):
    """A launch id Moodle no longer holds (used once already, or never made): auth.php
    cannot trust the redirect URI and shows its own error page, "Invalid request" (404)."""


def invalid_request_page() -> str:
    """Moodle's error page for ``moodle_exception('invalidrequest')``, in short."""
    return (
        "<!DOCTYPE html>\n<html><head><title>Error | Moodle</title></head><body>\n"
        '<div data-rel="fatalerror" class="errorbox alert alert-danger">'
        '<p class="errormessage">Invalid request</p></div>\n</body></html>\n'
    )


@dataclass(frozen=True)
class PendingLaunch:
    """What Moodle keeps in the session between login initiation and authentication."""

    user: str
    target_link_uri: str


REQUIRED = (
    "scope",
    "response_type",
    "response_mode",
    "prompt",
    "client_id",
    "redirect_uri",
    "login_hint",
    "lti_message_hint",
    "nonce",
    "state",
)
_ERROR_CODES = {
    "scope": "invalid_scope",
    "response_type": "unsupported_response_type",
    "client_id": "unauthorized_client",
}


def check_auth_request(
    params: Mapping[str, str], *, client_id: str, redirect_uris: list[str]
) -> str:
    """Validate the tool's authentication request; return the launch id from its message hint."""
    missing = [name for name in REQUIRED if not params.get(name)]
    if missing:
        raise AuthorizationError(f"invalid_request: missing {', '.join(missing)}")
    expected = {
        "scope": "openid",
        "response_type": "id_token",
        "response_mode": "form_post",
        "prompt": "none",
        "client_id": client_id,
    }
    for name, value in expected.items():
        if params[name] != value:
            code = _ERROR_CODES.get(name, "invalid_request")
            raise AuthorizationError(f"{code}: {name} must be {value!r}, not {params[name]!r}")
    if params["redirect_uri"] not in redirect_uris:
        raise AuthorizationError(
            f"invalid_request: redirect_uri {params['redirect_uri']!r} is not registered "
            f"(registered: {redirect_uris})"
        )
    try:
        hint = json.loads(params["lti_message_hint"])
    except ValueError:
        hint = None
    if not isinstance(hint, dict) or not hint.get("launchid"):
        raise AuthorizationError("invalid_request: No launch id in LTI hint")
    return str(hint["launchid"])


def auto_submit_form(action: str, fields: Mapping[str, str]) -> str:
    """The page Moodle answers with: a form the browser posts to the tool straight away."""
    inputs = "".join(
        f'  <input type="hidden" name="{escape(name)}" value="{escape(value)}"/>\n'
        for name, value in fields.items()
    )
    return (
        f'<form action="{escape(action)}" name="ltiAuthForm" id="ltiAuthForm" method="post" '
        f'enctype="application/x-www-form-urlencoded">\n{inputs}</form>\n'
        '<script type="text/javascript">\n//<![CDATA[\ndocument.ltiAuthForm.submit();\n//]]>\n'
        "</script>\n"
    )
