"""Which model servers may receive students' work: the allowlists of the site and of the
organization, checked by the client before every call (app.llm.client).

A school may require that its students' work never leaves for a model outside the school. Two
lists say where work may go, each a list of base URLs where an empty list allows any server:

- the site's, ``EVALUAITOR_LLM_ALLOWED_BASE_URLS`` (set by whoever runs Evaluaitor);
- the organization's, ``organization.model_base_urls`` (set by the administrator through the
  REST API's ``/organizations`` or ``evaluaitor org models``); every platform belongs to one
  organization, so this is also the platform's setting.

A server must be allowed by both lists: an organization can narrow the site's list, never widen
it. An entry allows its own base URL and the paths below it (``https://llm.school.edu``
allows ``https://llm.school.edu/v1``), on the same scheme, host and port only.

The lists travel as plain data (no Flask, no database): the worker reads the organization's
list and hands it down with the grading, and the client refuses a forbidden call before any
byte of the work is sent, with :class:`app.llm.errors.LLMForbiddenError`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from app.llm.errors import LLMForbiddenError

#: The setting of the site's list, comma-separated.
SITE_SETTING = "EVALUAITOR_LLM_ALLOWED_BASE_URLS"
#: Entries an organization's list may hold, and the length of one.
MAX_ENTRIES = 20
MAX_URL_CHARS = 500
#: What the REST API documents an entry to be (:func:`normalize` accepts every match).
URL_PATTERN = (
    r"^https?://[A-Za-z0-9.-]+"
    r"(:([0-9]{1,4}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5]))?"
    r"(/[A-Za-z0-9._~!$&'()*+,;=:@%/-]*)?$"
)


def normalize(url: str) -> str:
    """``url`` as compared: scheme and host in lower case, the port always written, no query,
    fragment or trailing slash. Raises ValueError for anything but an http(s) URL with a host."""
    parsed = _parsed(url)
    if parsed.userinfo or parsed.query or parsed.fragment:
        raise ValueError(f"a base URL has no user, query or fragment: {url[:80]!r}")
    return _compared(parsed)


def shown(url: str) -> str:
    """``url`` as :func:`normalize` writes it, for a log line: without a password it may
    carry, or a placeholder when it is no URL at all."""
    try:
        return _compared(_parsed(url))
    except ValueError:
        return "(not an http(s) URL)"


def _parsed(url: str) -> httpx.URL:
    text = url.strip()
    if not text or len(text) > MAX_URL_CHARS:
        raise ValueError(f"not a base URL: {url[:80]!r}")
    try:
        parsed = httpx.URL(text)
    except httpx.InvalidURL as exc:
        raise ValueError(f"not a base URL: {url[:80]!r} ({exc})") from exc
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise ValueError(f"not an http:// or https:// URL with a host: {url[:80]!r}")
    return parsed


def _compared(parsed: httpx.URL) -> str:
    port = parsed.port if parsed.port is not None else 443 if parsed.scheme == "https" else 80
    return f"{parsed.scheme}://{parsed.host.lower()}:{port}{parsed.path.rstrip('/')}"


def parse(urls: Iterable[str] | str | None) -> tuple[str, ...]:
    """A list as stored: normalized, without repeats, in the given order; a string is split on
    commas and blanks. Raises ValueError naming the first entry that is not a base URL."""
    if urls is None:
        return ()
    items = urls.replace(",", " ").split() if isinstance(urls, str) else list(urls)
    if len(items) > MAX_ENTRIES:
        raise ValueError(f"at most {MAX_ENTRIES} base URLs")
    return tuple(dict.fromkeys(normalize(str(item)) for item in items))


def _allows(entries: tuple[str, ...], base_url: str) -> bool:
    if not entries:
        return True
    try:
        url = normalize(base_url)
    except ValueError:
        return False
    return any(url == entry or url.startswith(entry + "/") for entry in entries)


@dataclass(frozen=True)
class Allowlists:
    """The site's and the organization's lists (normalized, :func:`parse`); empty allows any."""

    site: tuple[str, ...] = ()
    organization: tuple[str, ...] = ()

    @classmethod
    def of(cls, config: Mapping[str, Any], organization: Iterable[str] = ()) -> Allowlists:
        """The site's list from a config mapping, with the organization's list."""
        return cls(site=parse(config.get(SITE_SETTING) or None), organization=parse(organization))

    def allows(self, base_url: str) -> bool:
        return _allows(self.site, base_url) and _allows(self.organization, base_url)

    def check(self, base_url: str) -> None:
        """Raise LLMForbiddenError unless both lists allow ``base_url``; the message names the
        list that forbids it and what it allows."""
        for entries, owner in ((self.organization, "organization"), (self.site, "site")):
            if not _allows(entries, base_url):
                allowed = ", ".join(entries)
                template = (
                    LLMForbiddenError.ORGANIZATION
                    if owner == "organization"
                    else LLMForbiddenError.SITE
                )
                raise LLMForbiddenError(
                    f"the {owner}'s allowlist ({allowed}) does not include {shown(base_url)}",
                    user_message=template % {"allowed": allowed},
                )
