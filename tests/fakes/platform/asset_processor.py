"""Canvas's side of the LTI Asset Processor: the Asset Service, the Report Service, and the
notices it signs and posts to the tool's notice handler.

Follows instructure/canvas-lms (doc/api/document_processor.md, doc/api/pns.md,
Lti::IMS::AssetProcessorController, Lti::AssetReport):

- An asset is served to a Bearer token with scope ``asset.readonly``; a file may be
  answered with a 302 to its bytes elsewhere (Canvas's file store: :class:`FileStore`, another
  origin, which must not receive the token); a text entry is served as ``text/html``.
- A report needs a token with scope ``report`` and Canvas's fields: ``assetId``, ``type``,
  ``timestamp`` (ISO 8601), ``processingProgress``; ``priority`` 0..5, ``indicationColor``
  ``#RRGGBB``, ``title`` 1..1024 characters, ``comment`` 1..64 KiB, ``result`` at most 255.
  A report older than the one held for (processor, asset, type) is refused with 409; an
  accepted one is answered 201 with its body.
- A notice carries Canvas's claims (notice, for_user, assetreport, assetservice, activity,
  submission, custom) and is signed with the platform's key.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import itertools
import json
import re
import secrets
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

import httpx
from werkzeug.wrappers import Request, Response

from tests.fakes.http import BackgroundServer

from .vocab import LTI_CLAIM, SCOPE_ASSET_READONLY, SCOPE_REPORT

if TYPE_CHECKING:
    from .server import FakePlatform

PROCESSOR_ID = 7
ASSETS_PATH = f"/api/lti/asset_processors/{PROCESSOR_ID}/assets"
REPORTS_PATH = f"/api/lti/asset_processors/{PROCESSOR_ID}/reports"
SUBMISSION_NOTICE = "LtiAssetProcessorSubmissionNotice"
PROGRESS = frozenset(
    {"Processed", "Processing", "PendingManual", "Failed", "NotProcessed", "NotReady"}
)
_COLOR = re.compile(r"#[0-9a-fA-F]{6}")


@dataclass
class Asset:
    asset_id: str
    data: bytes
    content_type: str
    title: str
    filename: str | None
    redirect: bool = False


@dataclass
class AssetProcessor:
    platform: FakePlatform
    assets: dict[str, Asset] = field(default_factory=dict)
    #: Every accepted report, as posted.
    reports: list[dict[str, Any]] = field(default_factory=list)
    #: When each of ``reports`` arrived (time.monotonic()): benchmarks time the whole way.
    arrivals: list[float] = field(default_factory=list)
    #: Every report request: (status, body as posted).
    report_requests: list[tuple[int, Any]] = field(default_factory=list)
    #: The Authorization header of every asset request, by path.
    asset_requests: list[tuple[str, str | None]] = field(default_factory=list)
    #: Where a redirected asset's bytes are: a FileStore's URL, or this platform's own.
    file_store: FileStore | None = None
    _numbers: itertools.count = field(default_factory=lambda: itertools.count(1))
    _lock: threading.Lock = field(default_factory=threading.Lock)

    # --- assets ------------------------------------------------------------------------------

    def add_asset(
        self,
        data: bytes,
        *,
        title: str = "essay.txt",
        filename: str | None = "essay.txt",
        content_type: str = "text/plain",
        redirect: bool = False,
        text_entry: bool = False,
        sha256: str | None = None,
        size: int | None = None,
    ) -> dict[str, Any]:
        """An asset the platform serves, and its entry in a notice (``sha256``/``size``
        override what the notice claims, for checksum and size tests)."""
        asset_id = f"asset-{next(self._numbers)}"
        if text_entry:
            content_type, filename = "text/html", None
        asset = Asset(asset_id, data, content_type, title, filename, redirect)
        with self._lock:
            self.assets[asset_id] = asset
        entry: dict[str, Any] = {
            "asset_id": asset_id,
            "url": f"{self.platform.url}{ASSETS_PATH}/{asset_id}",
            "sha256_checksum": sha256 or base64.b64encode(hashlib.sha256(data).digest()).decode(),
            "timestamp": datetime.now().astimezone().isoformat(),
            "size": len(data) if size is None else size,
            "content_type": content_type,
            "title": title,
        }
        if filename:
            entry["filename"] = filename
        return entry

    def reports_for(self, asset_id: str) -> list[dict[str, Any]]:
        with self._lock:
            return [r for r in self.reports if r["assetId"] == asset_id]

    def arrivals_for(self, asset_id: str) -> list[tuple[float, dict[str, Any]]]:
        """The accepted reports for the asset, each with when it arrived."""
        with self._lock:
            pairs = zip(self.arrivals, self.reports, strict=True)
            return [(when, r) for when, r in pairs if r["assetId"] == asset_id]

    # --- notices -----------------------------------------------------------------------------

    def notice_claims(
        self,
        *,
        activity: str,
        assets: list[dict[str, Any]],
        user: str = "2",
        submission_id: str = "sub-1",
        lms_activity_id: str = "assignment-1",
        notice_id: str | None = None,
        notice_type: str = SUBMISSION_NOTICE,
        deployment_id: str | None = None,
        iss: str | None = None,
        aud: str | list[str] | None = None,
        iat_offset: int = 0,
        lifetime: int = 3600,
    ) -> dict[str, Any]:
        """Canvas's claims for a submission notice to the processor ``activity`` (the tool's
        custom parameter)."""
        platform = self.platform
        iat = int(time.time()) + iat_offset
        return {
            "iss": iss or platform.issuer,
            "aud": platform.client_id if aud is None else aud,
            "azp": platform.client_id,
            "iat": iat,
            "exp": iat + lifetime,
            "nonce": secrets.token_hex(16),
            LTI_CLAIM + "deployment_id": deployment_id or platform.deployment_id,
            LTI_CLAIM + "version": "1.3.0",
            LTI_CLAIM + "notice": {
                "id": notice_id or secrets.token_hex(8),
                "timestamp": datetime.now().astimezone().isoformat(),
                "type": notice_type,
            },
            LTI_CLAIM + "custom": {"activity": activity},
            LTI_CLAIM + "for_user": {"user_id": user},
            LTI_CLAIM + "activity": {"id": lms_activity_id, "title": "Essay"},
            LTI_CLAIM + "submission": {"id": submission_id},
            LTI_CLAIM + "assetreport": {
                "report_url": platform.url + REPORTS_PATH,
                "scope": [SCOPE_REPORT],
            },
            LTI_CLAIM + "assetservice": {"scope": [SCOPE_ASSET_READONLY], "assets": assets},
        }

    def sign(self, claims: dict[str, Any], *, how: str = "platform") -> str:
        """``platform``: the platform's key; ``stranger``: an unpublished one; ``none``: no
        signature (alg none); ``hs256``: HMAC with the platform's public key as the secret."""
        platform = self.platform
        if how == "platform":
            return platform._keys[0].sign(claims)
        if how == "stranger":
            return platform._stranger().sign(claims, kid=platform._keys[0].kid)
        header = {"alg": "none" if how == "none" else "HS256", "kid": platform._keys[0].kid}
        signing_input = f"{_b64(json.dumps(header))}.{_b64(json.dumps(claims))}"
        if how == "none":
            return signing_input + "."
        secret = json.dumps(platform._keys[0].public_jwk()).encode()
        mac = hmac.new(secret, signing_input.encode(), hashlib.sha256).digest()
        return f"{signing_input}.{_b64(mac)}"

    def send(self, handler_url: str, *tokens: str) -> httpx.Response:
        """POST notices as Canvas does: ``{"notices": [{"jwt": ...}]}``."""
        body = {"notices": [{"jwt": token} for token in tokens]}
        return httpx.post(handler_url, json=body, timeout=10)

    # --- HTTP ----------------------------------------------------------------------------------

    def handle(self, kind: str, request: Request, args: dict[str, Any]) -> Response:
        scope = SCOPE_ASSET_READONLY if kind == "asset" else SCOPE_REPORT
        refusal = self.platform.tokens.check_bearer(request.headers.get("Authorization"), [scope])
        if kind == "asset":
            self.asset_requests.append((request.path, request.headers.get("Authorization")))
        if refusal:
            return _json({"errors": [{"message": refusal}]}, 401)
        if kind == "asset":
            return self._asset(args["asset_id"])
        return self._report(request)

    def _asset(self, asset_id: str) -> Response:
        with self._lock:
            asset = self.assets.get(asset_id)
        if asset is None:
            return _json({"errors": [{"message": "not found"}]}, 404)
        if asset.redirect:
            store = self.file_store
            base = store.url if store else self.platform.url + "/files"
            if store:
                store.serve(asset)
            location = f"{base}/{asset.asset_id}/download?verifier={secrets.token_hex(4)}"
            return Response("", status=302, headers={"Location": location})
        return Response(asset.data, content_type=asset.content_type)

    def serve_file(self, asset_id: str) -> Response:
        """The same-origin file path a redirect may point to."""
        with self._lock:
            asset = self.assets.get(asset_id)
        if asset is None:
            return _json({"errors": [{"message": "not found"}]}, 404)
        return Response(asset.data, content_type=asset.content_type)

    def _report(self, request: Request) -> Response:
        try:
            body = json.loads(request.get_data())
        except ValueError:
            body = None
        status, answer = self._check_report(body)
        with self._lock:
            self.report_requests.append((status, body))
            if status == 201:
                self.reports.append(body)
                self.arrivals.append(time.monotonic())
        return _json(answer, status)

    def _check_report(self, body: Any) -> tuple[int, Any]:
        if not isinstance(body, dict):
            return 400, {"errors": [{"message": "body is not an object"}]}
        problems = [
            f"{name} is required"
            for name in ("assetId", "type", "timestamp", "processingProgress")
            if not body.get(name)
        ]
        if body.get("processingProgress") and body["processingProgress"] not in PROGRESS:
            problems.append("processingProgress is not a known value")
        stamp = _timestamp(body.get("timestamp"))
        if body.get("timestamp") and stamp is None:
            problems.append("timestamp must be ISO 8601")
        priority = body.get("priority", 0)
        if not isinstance(priority, int) or not 0 <= priority <= 5:
            problems.append("priority must be 0..5")
        if "indicationColor" in body and not _COLOR.fullmatch(str(body["indicationColor"])):
            problems.append("indicationColor must be #RRGGBB")
        if "title" in body and not 1 <= len(str(body["title"])) <= 1024:
            problems.append("title must be 1..1024 characters")
        if "comment" in body and not 1 <= len(str(body["comment"]).encode()) <= 64 * 1024:
            problems.append("comment must be 1 byte..64 KiB")
        if "result" in body and len(str(body["result"])) > 255:
            problems.append("result must be at most 255 characters")
        if "visibleToOwner" in body and not isinstance(body["visibleToOwner"], bool):
            problems.append("visibleToOwner must be a boolean")
        if problems:
            return 400, {"errors": [{"message": p} for p in problems]}
        with self._lock:
            if body["assetId"] not in self.assets:
                return 404, {"errors": [{"message": "asset not found"}]}
            newer = [
                r
                for r in self.reports
                if r["assetId"] == body["assetId"]
                and r["type"] == body["type"]
                and _timestamp(r["timestamp"]) > stamp
            ]
        if newer:
            return 409, {"errors": [{"message": "a newer report exists"}]}
        return 201, body


class FileStore:
    """Canvas's file store: another origin serving an asset's bytes, without a token; it
    records whether any request carried an Authorization header."""

    def __init__(self) -> None:
        self._files: dict[str, Asset] = {}
        self.authorizations: list[str | None] = []
        self._http = BackgroundServer(self._wsgi, "fake-file-store")

    def __enter__(self) -> FileStore:
        self._http.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._http.stop()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._http.port}/files"

    def serve(self, asset: Asset) -> None:
        self._files[asset.asset_id] = asset

    def _wsgi(self, environ: dict[str, Any], start_response: Any) -> Any:
        request = Request(environ)
        self.authorizations.append(request.headers.get("Authorization"))
        parts = request.path.strip("/").split("/")
        asset = self._files.get(parts[1]) if len(parts) == 3 else None
        if asset is None:
            response = Response("not found", status=404)
        else:
            response = Response(asset.data, content_type=asset.content_type)
        return response(environ, start_response)


def _json(body: Any, status: int) -> Response:
    return Response(json.dumps(body), status=status, content_type="application/json")


def _b64(data: str | bytes) -> str:
    raw = data.encode() if isinstance(data, str) else data
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _timestamp(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    return moment if moment.tzinfo else None
