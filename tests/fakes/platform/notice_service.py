"""Attaching an asset processor, platform side, as Canvas does it (doc/api/document_processor.md,
doc/api/pns.md, app/controllers/lti/ims/notice_handlers_controller.rb):

- the deep-linking request of "Add Document Processing App": ``accept_types`` only
  ``ltiAssetProcessor``, the activity claim (the assignment), the PNS claim and Canvas's own
  placement claim; the answer's ``ltiAssetProcessor`` items become attached processors
  (see DeepLinking._make_links);
- the Platform Notification Service: ``PUT``/``GET`` on the notice-handlers URL with a token of
  scope ``noticehandlers``; one handler per notice type and deployment, ``""`` removes it, the
  handler must be on the tool's domain; both answer with the deployment's handler list;
- the settings launch (LtiAssetProcessorSettingsRequest) and the report review launch
  (LtiReportReviewRequest) of an attached processor, with the custom parameters Canvas merges.

    settings = platform.processors.attach_request()
    browser_launch(client, platform, tool_url, user="1", roles=TEACHER, **settings)
    ... the tool registers its handler, then posts JWT= to the deep-linking return URL ...
    browser_launch(client, platform, tool_url, user="1", roles=TEACHER,
                   **platform.processors.settings_launch(n))
"""

from __future__ import annotations

import itertools
import json
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from werkzeug.wrappers import Request, Response

from .vocab import LTI_CLAIM, SCOPE_NOTICE_HANDLERS

if TYPE_CHECKING:
    from .server import FakePlatform

PNS_PATH = "/api/lti/notice-handlers"
PLACEMENT_CLAIM = "https://www.instructure.com/placement"
PLACEMENT = "ActivityAssetProcessor"
ITEM_TYPE = "ltiAssetProcessor"
#: Canvas's notice types (doc/api/pns.md).
NOTICE_TYPES = ("LtiHelloWorldNotice", "LtiAssetProcessorSubmissionNotice", "LtiContextCopyNotice")


class ProcessorItemError(ValueError):
    """An ``ltiAssetProcessor`` content item the platform refuses; the message says why."""


@dataclass
class AttachedProcessor:
    """An asset processor attached to an assignment from the tool's content item."""

    n: int
    assignment_id: str
    assignment_title: str
    title: str
    text: str
    url: str | None
    custom: dict[str, str]
    report_url: str | None
    report_custom: dict[str, str]


@dataclass
class Processors:
    platform: FakePlatform
    #: Attached processors by number.
    attached: dict[int, AttachedProcessor] = field(default_factory=dict)
    #: Notice handlers per deployment id: {notice_type: handler URL}.
    handlers: dict[str, dict[str, str]] = field(default_factory=dict)
    #: Every PNS request: {"method", "status", "body"} (body as sent, for PUT).
    pns_requests: list[dict[str, Any]] = field(default_factory=list)
    #: The assignment each pending deep-linking request (by its data) attaches to.
    _assignments: dict[str, tuple[str, str]] = field(default_factory=dict)
    _numbers: itertools.count = field(default_factory=lambda: itertools.count(1))

    def notice_service_url(self, deployment_id: str | None = None) -> str:
        return f"{self.platform.url}{PNS_PATH}/{deployment_id or self.platform.deployment_id}"

    # --- launches --------------------------------------------------------------------------

    def attach_request(
        self,
        *,
        assignment_id: str | None = None,
        assignment_title: str = "Essay assignment",
        accept_types: list[str] | None = None,
        drop_claims: tuple[str, ...] = (),
    ) -> dict[str, Any]:
        """`make_id_token` arguments for "Add Document Processing App" on an assignment.

        `drop_claims` removes the activity or PNS claim (full names), for refusal tests.
        """
        assignment_id = assignment_id or str(uuid.uuid4())
        settings = self.platform.deep_linking.request(
            accept_types=[ITEM_TYPE] if accept_types is None else accept_types,
            accept_multiple=True,
        )
        claims = settings["extra_claims"]
        data = claims[_SETTINGS]["data"]
        self._assignments[data] = (assignment_id, assignment_title)
        claims |= {
            LTI_CLAIM + "activity": {"id": assignment_id},
            LTI_CLAIM + "platformnotificationservice": {
                "service_versions": ["1.0"],
                "platform_notification_service_url": self.notice_service_url(),
                "scope": [SCOPE_NOTICE_HANDLERS],
                "notice_types_supported": list(NOTICE_TYPES),
            },
            PLACEMENT_CLAIM: PLACEMENT,
        }
        for name in drop_claims:
            del claims[name]
        return settings | {"lineitems": False}

    def settings_launch(self, n: int, **changes: Any) -> dict[str, Any]:
        """`make_id_token` arguments for a teacher's "Modify" of processor `n`."""
        processor = self.attached[n]
        return self._launch(
            processor,
            "LtiAssetProcessorSettingsRequest",
            processor.custom,
            processor.url,
            {},
            changes,
        )

    def report_launch(
        self, n: int, *, submission_id: str, for_user: str, asset_id: str = "asset-1", **changes
    ) -> dict[str, Any]:
        """`make_id_token` arguments for "View Report" on a report of processor `n`. Canvas
        names the person launching in ``for_user`` (lib/lti/messages/report_review_request.rb)."""
        processor = self.attached[n]
        claims = {
            LTI_CLAIM + "submission": {"id": submission_id},
            LTI_CLAIM + "assetreport_type": "evaluaitor",
            LTI_CLAIM + "for_user": {"user_id": for_user},
            LTI_CLAIM + "asset": {"id": asset_id},
        }
        custom = processor.custom | processor.report_custom
        return self._launch(
            processor, "LtiReportReviewRequest", custom, processor.report_url, claims, changes
        )

    def _launch(
        self,
        processor: AttachedProcessor,
        message_type: str,
        custom: dict[str, str],
        url: str | None,
        claims: dict[str, Any],
        changes: dict[str, Any],
    ) -> dict[str, Any]:
        extra = {
            LTI_CLAIM + "activity": {
                "id": processor.assignment_id,
                "title": processor.assignment_title,
            },
            LTI_CLAIM + "custom": dict(custom),
            PLACEMENT_CLAIM: None,
            **claims,
        }
        arguments = {
            "message_type": message_type,
            "lineitem": False,
            "lineitems": False,
            "extra_claims": extra,
            "drop_claims": ["resource_link"],
        }
        if url:  # Canvas falls back to the tool's launch URL
            arguments["target_link_uri"] = url
        return arguments | changes

    # --- the deep-linking answer's items ---------------------------------------------------

    def attach(self, item: dict[str, Any], data: Any) -> AttachedProcessor:
        """Attach one ``ltiAssetProcessor`` item of the answer to the request's assignment."""
        assignment = self._assignments.get(data) if isinstance(data, str) else None
        if assignment is None:
            raise ProcessorItemError("this request attaches no processor to an assignment")
        for name in ("title", "text"):
            if not isinstance(item.get(name, ""), str):
                raise ProcessorItemError(f"{name} must be a string")
        url = item.get("url")
        if url is not None and not _is_http(url):
            raise ProcessorItemError("url must be an http(s) URL")
        report = item.get("report", {})
        if not isinstance(report, dict) or (
            report.get("url") is not None and not _is_http(report["url"])
        ):
            raise ProcessorItemError("report must be an object whose url is http(s)")
        custom, report_custom = item.get("custom", {}), report.get("custom", {})
        for params in (custom, report_custom):
            if not isinstance(params, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in params.items()
            ):
                raise ProcessorItemError("custom must map names to strings")
        processor = AttachedProcessor(
            n=next(self._numbers),
            assignment_id=assignment[0],
            assignment_title=assignment[1],
            title=str(item.get("title") or ""),
            text=str(item.get("text") or ""),
            url=url,
            custom=dict(custom),
            report_url=report.get("url"),
            report_custom=dict(report_custom),
        )
        self.attached[processor.n] = processor
        return processor

    # --- the Platform Notification Service ---------------------------------------------------

    def handle(self, request: Request, deployment_id: str) -> Response:
        entry: dict[str, Any] = {"method": request.method, "status": 200, "body": None}
        self.pns_requests.append(entry)
        refusal = self.platform.tokens.check_bearer(
            request.headers.get("Authorization"), [SCOPE_NOTICE_HANDLERS]
        )
        if refusal is not None:
            return _error(entry, 401, refusal)
        if deployment_id != self.platform.deployment_id:
            return _error(entry, 404, "not found")
        if request.method == "PUT":
            try:
                entry["body"] = body = json.loads(request.get_data(as_text=True) or "null")
            except ValueError:
                return _error(entry, 400, "the body is not JSON")
            problem = self._set(deployment_id, body)
            if problem:
                return _error(entry, 400, problem)
        elif request.method != "GET":
            return _error(entry, 405, "method not allowed")
        held = self.handlers.get(deployment_id, {})
        catalog = {
            "client_id": self.platform.client_id,
            "deployment_id": deployment_id,
            "notice_handlers": [
                {"handler": held.get(kind, ""), "notice_type": kind} for kind in NOTICE_TYPES
            ],
        }
        return Response(json.dumps(catalog), content_type="application/json")

    def _set(self, deployment_id: str, body: Any) -> str | None:
        """Subscribe or unsubscribe; the reason for a 400, or None."""
        if not isinstance(body, dict) or not body.get("notice_type"):
            return "param is missing or the value is empty: notice_type"
        notice_type, handler = body["notice_type"], body.get("handler")
        if notice_type not in NOTICE_TYPES:
            return f"unsupported notice type {notice_type!r}"
        held = self.handlers.setdefault(deployment_id, {})
        if handler == "":
            held.pop(notice_type, None)
            return None
        if not isinstance(handler, str) or not _is_http(handler):
            return "handler must be a valid URL or an empty string"
        if urlsplit(handler).netloc != self.tool_domain:
            return f"handler {handler!r} is not on the tool's domain {self.tool_domain!r}"
        held[notice_type] = handler
        return None

    @property
    def tool_domain(self) -> str:
        """The tool's domain (host and port), as its registration gave it."""
        uris = self.platform.tool_redirect_uris
        return urlsplit(uris[0]).netloc if uris else ""


_SETTINGS = "https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings"


def _is_http(url: Any) -> bool:
    return isinstance(url, str) and url.startswith(("http://", "https://"))


def _error(entry: dict[str, Any], status: int, message: str) -> Response:
    entry["status"] = status
    body = {"errors": [{"message": message}]}
    return Response(json.dumps(body), status=status, content_type="application/json")
