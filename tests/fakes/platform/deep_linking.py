"""Deep Linking 2.0 (LTI 1.3), platform side, as strict as Moodle 4.5 or stricter.

A teacher starts a deep-linking request from the activity chooser; the tool answers by
posting a signed LtiDeepLinkingResponse to the return URL. Moodle then makes each
ltiResourceLink a course activity with its grade item and custom parameters, and later
launches of that activity carry both.

    settings = platform.deep_linking.request(data="abc")
    browser_launch(client, platform, tool_url, user="1", roles=TEACHER, **settings)
    ... the tool posts JWT= to platform.deep_linking.return_url ...
    browser_launch(client, platform, tool_url, **platform.deep_linking.launch(link_id))
"""

from __future__ import annotations

import itertools
import json
import math
import secrets
from dataclasses import dataclass, field
from html import escape
from typing import TYPE_CHECKING, Any

import httpx
import jwt
from jwt.algorithms import RSAAlgorithm
from werkzeug.wrappers import Request, Response

from .notice_service import AttachedProcessor, ProcessorItemError
from .vocab import LTI_CLAIM

if TYPE_CHECKING:
    from .server import FakePlatform

DL_CLAIM = "https://purl.imsglobal.org/spec/lti-dl/claim/"
SETTINGS_CLAIM = DL_CLAIM + "deep_linking_settings"
CUSTOM_CLAIM = LTI_CLAIM + "custom"
RETURN_PATH = "/mod/lti/contentitem_return.php"
#: Seconds of clock difference tolerated on iat/exp.
LEEWAY = 60


class DeepLinkingError(ValueError):
    """The tool's answer is refused; the message says why (Moodle shows a similar page)."""


@dataclass
class ResourceLink:
    """An activity the platform made from an ltiResourceLink content item."""

    link_id: str
    title: str
    text: str
    url: str
    custom: dict[str, str]
    lineitem_n: int | None


@dataclass
class DeepLinking:
    platform: FakePlatform
    #: Links made from the tool's answers, by resource link id.
    links: dict[str, ResourceLink] = field(default_factory=dict)
    #: Every answer received: {"status", "reason", "claims"} (claims only once verified).
    answers: list[dict[str, Any]] = field(default_factory=list)
    _pending_data: set[str] = field(default_factory=set)
    #: The accept_types each pending request (by its data) offered.
    _offered: dict[str, list[str]] = field(default_factory=dict)
    _used_nonces: set[str] = field(default_factory=set)
    _numbers: itertools.count = field(default_factory=lambda: itertools.count(1))

    @property
    def return_url(self) -> str:
        return f"{self.platform.url}{RETURN_PATH}?course={self.platform.course_id}&id=1"

    def request(
        self,
        *,
        data: str | None = None,
        accept_types: list[str] | None = None,
        accept_multiple: bool = False,
        accept_lineitem: bool = True,
        title: str = "",
    ) -> dict[str, Any]:
        """`make_id_token` arguments for a teacher's LtiDeepLinkingRequest.

        `data` (a fresh random value unless given) must come back in the answer.
        """
        data = secrets.token_urlsafe(12) if data is None else data
        self._pending_data.add(data)
        accept_types = ["ltiResourceLink"] if accept_types is None else accept_types
        self._offered[data] = list(accept_types)
        settings: dict[str, Any] = {
            "deep_link_return_url": self.return_url,
            "accept_types": accept_types,
            "accept_presentation_document_targets": ["iframe", "window"],
            "accept_multiple": accept_multiple,
            "accept_lineitem": accept_lineitem,
            "auto_create": True,
            "data": data,
        }
        if title:
            settings["title"] = title
        return {
            "message_type": "LtiDeepLinkingRequest",
            "resource_link_id": f"deep-linking-request-{next(self._numbers)}",
            "lineitem": False,
            "extra_claims": {SETTINGS_CLAIM: settings},
            "drop_claims": ["resource_link"],
        }

    def launch(self, link_id: str) -> dict[str, Any]:
        """`make_id_token` arguments for a launch of a link made by deep linking."""
        link = self.links[link_id]
        return {
            "resource_link_id": link.link_id,
            "title": link.title,
            "description": link.text,
            "lineitem": link.lineitem_n is not None,
            "extra_claims": {CUSTOM_CLAIM: dict(link.custom)},
        }

    # --- the return endpoint -------------------------------------------------------------

    def handle(self, request: Request) -> Response:
        """POST JWT=<the tool's LtiDeepLinkingResponse>: verify it, make the links."""
        answer: dict[str, Any] = {"status": 400, "reason": "", "claims": None}
        self.answers.append(answer)
        try:
            if request.method != "POST":
                raise DeepLinkingError("the answer must be POSTed")
            claims = self._verify(request.form.get("JWT", ""))
            answer["claims"] = claims
            made = self._make_links(claims)
        except DeepLinkingError as exc:
            answer["reason"] = str(exc)
            return Response(f"Deep linking refused: {exc}", status=400, mimetype="text/plain")
        answer["status"] = 200
        titles = "".join(f"<li>{escape(link.title)}</li>" for link in made)
        return Response(f"<p>Added to the course:</p><ul>{titles}</ul>", mimetype="text/html")

    def _verify(self, token: str) -> dict[str, Any]:
        if not token:
            raise DeepLinkingError("no JWT parameter")
        try:
            header = jwt.get_unverified_header(token)
        except jwt.InvalidTokenError as exc:
            raise DeepLinkingError(f"unreadable JWT: {exc}") from exc
        if header.get("alg") != "RS256":
            raise DeepLinkingError(f"alg must be RS256, not {header.get('alg')!r}")
        key = self._tool_key(header.get("kid"))
        try:
            claims = jwt.decode(
                token,
                key,
                algorithms=["RS256"],
                audience=self.platform.issuer,
                issuer=self.platform.client_id,
                leeway=LEEWAY,
                options={"require": ["iss", "aud", "exp", "iat", "nonce"]},
            )
        except jwt.InvalidTokenError as exc:
            raise DeepLinkingError(f"JWT rejected: {exc}") from exc
        nonce = claims["nonce"]
        if not isinstance(nonce, str) or not nonce or nonce in self._used_nonces:
            raise DeepLinkingError("nonce missing or already used")
        self._used_nonces.add(nonce)
        expected = {
            LTI_CLAIM + "deployment_id": self.platform.deployment_id,
            LTI_CLAIM + "message_type": "LtiDeepLinkingResponse",
            LTI_CLAIM + "version": "1.3.0",
        }
        for name, value in expected.items():
            if claims.get(name) != value:
                raise DeepLinkingError(f"{name} must be {value!r}, not {claims.get(name)!r}")
        data = claims.get(DL_CLAIM + "data")
        if data not in self._pending_data:
            raise DeepLinkingError(f"data {data!r} was not sent in a deep-linking request")
        self._pending_data.discard(data)
        return claims

    def _tool_key(self, kid: Any) -> Any:
        """The tool's public key named by `kid`, from the tool's JWKS URL."""
        if not isinstance(kid, str) or not kid:
            raise DeepLinkingError("the JWT header has no kid")
        if not self.platform.tool_jwks_url:
            raise DeepLinkingError("no tool JWKS URL configured")
        try:
            keys = httpx.get(self.platform.tool_jwks_url, timeout=5).json()["keys"]
        except (httpx.HTTPError, ValueError, KeyError) as exc:
            raise DeepLinkingError(f"cannot read the tool's JWKS: {exc}") from exc
        for jwk in keys:
            if jwk.get("kid") == kid:
                return RSAAlgorithm.from_jwk(json.dumps(jwk))
        raise DeepLinkingError(f"kid {kid!r} is not in the tool's JWKS")

    def _make_links(self, claims: dict[str, Any]) -> list[ResourceLink | AttachedProcessor]:
        """Each item made as what its type asks, if the request offered that type: a course
        link, or (Canvas) an asset processor attached to the request's assignment."""
        items = claims.get(DL_CLAIM + "content_items", [])
        data = claims.get(DL_CLAIM + "data")
        offered = self._offered.pop(data, ["ltiResourceLink"])
        if not isinstance(items, list):
            raise DeepLinkingError("content_items must be a list")
        if len(items) > 1 and "ltiAssetProcessor" not in offered:
            raise DeepLinkingError("accept_multiple was false: at most one content item")
        made: list[ResourceLink | AttachedProcessor] = []
        with self.platform._lock:
            for item in items:
                kind = item.get("type") if isinstance(item, dict) else None
                if kind not in offered:
                    raise DeepLinkingError(f"content item type {kind!r} was not offered")
                if kind == "ltiAssetProcessor":
                    try:
                        made.append(self.platform.processors.attach(item, data))
                    except ProcessorItemError as exc:
                        raise DeepLinkingError(str(exc)) from exc
                else:
                    made.append(self._make_link(item))
        return made

    def _make_link(self, item: Any) -> ResourceLink:
        if not isinstance(item, dict) or item.get("type") != "ltiResourceLink":
            raise DeepLinkingError("only ltiResourceLink content items are accepted")
        title, url = item.get("title"), item.get("url")
        if not isinstance(title, str) or not title.strip():
            raise DeepLinkingError("an ltiResourceLink needs a title")
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise DeepLinkingError("an ltiResourceLink needs an http(s) url")
        custom = item.get("custom", {})
        if not isinstance(custom, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in custom.items()
        ):
            raise DeepLinkingError("custom must map names to strings")
        link_id = f"dl-{next(self._numbers)}"
        lineitem_n = None
        line = item.get("lineItem")
        gradebook = self.platform.gradebook
        if line is not None:
            maximum = line.get("scoreMaximum") if isinstance(line, dict) else None
            if not _is_number(maximum) or maximum <= 0:
                raise DeepLinkingError("lineItem.scoreMaximum must be a number > 0")
            fields = {name: str(line.get(name, "")) for name in ("resourceId", "tag")}
            made = gradebook.add_item(
                label=str(line.get("label") or title),
                score_maximum=maximum,
                resource_id=fields["resourceId"],
                tag=fields["tag"],
                resource_link_id=link_id,
                coupled=True,
            )
            lineitem_n = made.n
        gradebook.links[link_id] = lineitem_n
        link = ResourceLink(
            link_id=link_id,
            title=title,
            text=str(item.get("text") or ""),
            url=url,
            custom=dict(custom),
            lineitem_n=lineitem_n,
        )
        self.links[link_id] = link
        return link


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
