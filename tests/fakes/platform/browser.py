"""Drive an LTI launch with an HTTP client the way a browser would, without JavaScript."""

from __future__ import annotations

import html
import json
import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlencode, urljoin, urlsplit

import httpx

if TYPE_CHECKING:
    import requests

    from .server import FakePlatform

_REDIRECTS = {301, 302, 303, 307, 308}
_MAX_HOPS = 5


class BrowserFlowError(AssertionError):
    """The launch stopped where a browser would have been stuck too; the message says where."""


@dataclass(frozen=True)
class Hop:
    method: str
    url: str
    data: dict[str, str] | None = None


@dataclass
class Form:
    action: str
    method: str
    fields: dict[str, str] = field(default_factory=dict)

    def hop(self) -> Hop:
        if self.method == "POST":
            return Hop("POST", self.action, self.fields)
        return Hop("GET", self.action.split("?", 1)[0] + "?" + urlencode(self.fields))


class _FormParser(HTMLParser):
    def __init__(self, base_url: str) -> None:
        super().__init__()
        self.base_url = base_url
        self.forms: list[Form] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name: value or "" for name, value in attrs}
        if tag == "form":
            action = urljoin(self.base_url, values.get("action", ""))
            self.forms.append(Form(action, values.get("method", "get").upper()))
        elif tag == "input" and self.forms and values.get("name"):
            self.forms[-1].fields[values["name"]] = values.get("value", "")


def parse_forms(page: str, base_url: str) -> list[Form]:
    parser = _FormParser(base_url)
    parser.feed(page)
    return parser.forms


def browser_launch(
    http: httpx.Client | requests.Session,
    platform: FakePlatform,
    tool_url: str,
    *,
    user: str = "2",
    **launch_kwargs: Any,
) -> httpx.Response | requests.Response:
    """Open the activity as `user`: login initiation, authentication, launch; return the launch.

    `launch_kwargs` (make_id_token arguments) are registered with `set_launch` first. Between
    login and authentication the tool may redirect, render a form, a JS redirect, or pylti1p3's
    cookie-check page; all are followed. The launch response itself is not followed.
    """
    if launch_kwargs:
        platform.set_launch(user, **launch_kwargs)
    params = platform.login_params(target_link_uri=tool_url + "/lti/launch", user=user)
    hop = Hop("POST", tool_url + "/lti/login", params)
    response = _send(http, hop)
    for _ in range(_MAX_HOPS):
        hop = _next_hop(response, hop, platform.auth_login_url)
        response = _send(http, hop)
        if hop.url.startswith(platform.auth_login_url):
            break
    else:
        raise BrowserFlowError(f"the tool never sent the browser to {platform.auth_login_url}")
    if response.status_code != 200:
        raise BrowserFlowError(
            f"the platform refused authentication ({response.status_code}): {response.text}"
        )
    forms = parse_forms(response.text, str(response.url))
    if not forms:
        raise BrowserFlowError(f"no form in the platform's answer: {response.text[:500]}")
    return _send(http, forms[0].hop())


def _next_hop(response: Any, hop: Hop, auth_url: str) -> Hop:
    """Where a browser goes next from this answer of the tool."""
    base = str(response.url)
    if response.status_code in _REDIRECTS and "Location" in response.headers:
        target = urljoin(base, response.headers["Location"])
        if response.status_code in (307, 308):
            return Hop(hop.method, target, hop.data)
        return Hop("GET", target)
    if response.status_code != 200:
        raise BrowserFlowError(
            f"{hop.method} {hop.url} answered {response.status_code}: {response.text[:500]}"
        )
    page = response.text
    forms = parse_forms(page, base)
    for form in forms:
        if form.action.startswith(auth_url):
            return form.hop()
    found = re.search(re.escape(auth_url) + r"[^\s\"'<>\\]*", _unescape(page))
    if found:
        return Hop("GET", found.group(0))
    cookie_check = re.search(r"var urlParams = (\{.*?\});", page, re.S)
    if cookie_check:  # pylti1p3 reloads the login URL with these parameters added
        params = json.loads(cookie_check.group(1))
        return Hop("GET", _add_params(base, {k: html.unescape(v) for k, v in params.items()}))
    located = re.search(r"""location(?:\.href)?\s*=\s*["']([^"']+)["']""", page)
    if located:
        return Hop("GET", urljoin(base, _unescape(located.group(1))))
    if forms:
        return forms[0].hop()
    raise BrowserFlowError(f"nothing to follow in the answer to {hop.url}: {page[:500]}")


def _unescape(text: str) -> str:
    """Undo HTML and JavaScript string escaping of URLs embedded in a page."""
    return html.unescape(text).replace("\\/", "/").replace("\\u0026", "&").replace("\\x26", "&")


def _add_params(url: str, params: dict[str, str]) -> str:
    parts = urlsplit(url)
    present = dict(parse_qsl(parts.query))
    added = urlencode({k: v for k, v in params.items() if k not in present})
    return parts._replace(query="&".join(filter(None, [parts.query, added]))).geturl()


def _send(http: Any, hop: Hop) -> Any:
    no_follow = (
        {"follow_redirects": False}
        if isinstance(http, httpx.Client)
        else {"allow_redirects": False}
    )
    return http.request(hop.method, hop.url, data=hop.data, **no_follow)
