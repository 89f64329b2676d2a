"""The Asset Service (LTI Asset Processor): downloading the files and text entries a student
submitted in the LMS, with a client-credentials token of scope ``asset.readonly``.

Every hop goes through :mod:`app.outbound` (public addresses or allowed ones, a deadline, a
size cap: the activity's upload limit). Canvas may answer with a redirect to the bytes on
another host (its file store): redirects are followed, each hop checked again, and the
Bearer token goes only to the asset URL's own origin. What arrives is checked against what
the notice promised (size, SHA-256 as base64 of the digest).
"""

from __future__ import annotations

import base64
import hashlib
import html
import re
from typing import Any
from urllib.parse import urljoin, urlsplit

import httpx
import nh3

from app import outbound
from app.lti import claims
from app.lti.service_client import ServiceClient, ServiceError, safe_url
from app.models import Platform
from app.text import clean_text

MAX_REDIRECTS = 5
_REDIRECTS = (301, 302, 303, 307, 308)

#: Report error codes (Canvas's names).
DOWNLOAD_FAILED = "DOWNLOAD_FAILED"
UNSUPPORTED_ASSET_TYPE = "UNSUPPORTED_ASSET_TYPE"
ASSET_TOO_LARGE = "ASSET_TOO_LARGE"


class AssetError(ServiceError):
    """An asset could not be had; ``code`` is the report's errorCode."""

    code = DOWNLOAD_FAILED


class AssetTooLarge(AssetError):
    code = ASSET_TOO_LARGE


class AssetClient(ServiceClient):
    error = AssetError

    def download(self, url: str) -> bytes:
        """The asset's bytes, following redirects; raises AssetError."""
        origin = _origin(url)
        response = self._call("GET", url, [claims.SCOPE_ASSET_READONLY])
        for _hop in range(MAX_REDIRECTS):
            if response.status_code not in _REDIRECTS:
                break
            location = response.headers.get("Location")
            if not location:
                raise AssetError(f"GET {safe_url(url)}: redirect without Location", retryable=False)
            url = urljoin(url, location)
            if _origin(url) == origin:
                response = self._call("GET", url, [claims.SCOPE_ASSET_READONLY])
            else:  # another host (a file store): the token is not for it
                response = self._send("GET", url)
                self._raise_for_status(response, f"GET {safe_url(url)}")
        if response.status_code in _REDIRECTS or response.status_code >= 300:
            raise AssetError(
                f"GET {safe_url(url)}: HTTP {response.status_code} after redirects",
                status=response.status_code,
                retryable=False,
            )
        return response.content

    def _send(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        try:
            return outbound.fetch(self._http, method, url, **kwargs)
        except outbound.OutboundError as exc:
            kind = AssetTooLarge if exc.summary == outbound.TOO_LARGE else AssetError
            raise kind(str(exc), retryable=exc.retryable) from exc


def _origin(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    return parts.scheme, parts.netloc.lower()


def client(platform: Platform, max_bytes: int) -> AssetClient:
    """An Asset Service client whose answers may be as large as the activity's uploads
    (``max_bytes``), not a page of JSON."""
    return AssetClient.configured(platform, max_bytes=max_bytes)


def matches(data: bytes, sha256: str | None) -> bool:
    """Whether ``data`` has the checksum the notice gave: base64 of the SHA-256 digest (as
    Canvas sends it), or hexadecimal; True when the notice gave none."""
    if not sha256:
        return True
    digest = hashlib.sha256(data).digest()
    return sha256.strip() in (base64.b64encode(digest).decode(), digest.hex())


_BLOCK_END = re.compile(r"<\s*(/p|br\s*/?|/div|/h[1-6]|/li|/tr|/blockquote)\s*>", re.IGNORECASE)


def html_text(data: bytes) -> str:
    """A text entry (the LMS's rich text, as text/html) as plain text: every tag dropped by
    nh3, paragraphs kept as lines, entities decoded, hidden characters removed (app.text)."""
    raw = data.decode("utf-8", "replace")
    stripped = nh3.clean(_BLOCK_END.sub("\n", raw), tags=set())
    lines = (line.strip() for line in html.unescape(stripped).splitlines())
    return clean_text("\n".join(lines)).strip()
