"""LTI Deep Linking 2.0 (LTI 1.3), tool side: a teacher adds Evaluaitor to a course from the LMS's
activity chooser, sets the activity up, and the tool answers with one resource link.

The same exchange attaches Evaluaitor to an assignment of the LMS's own as an LTI Asset
Processor (Canvas: "Add Document Processing App"): the request offers ``ltiAssetProcessor``
and names the assignment (the activity claim) and the Platform Notification Service; the
answer is one ``ltiAssetProcessor`` item, sent only once the notice handler is registered
(app.web.setup). An item type the request did not offer is never returned.

The platform's ``deep_linking_settings`` (return URL, accepted types, ``data``) are part of
the launch data pylti1p3 keeps in Redis under the launch id; the answer is built from them by
pylti1p3's :meth:`get_deep_link` and signed with the tool's active key (with its ``kid``,
which pylti1p3 would take from a thumbprint the tool's JWKS does not publish).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jwt
from flask import current_app
from flask_babel import lazy_gettext as _l
from pylti1p3.contrib.flask import FlaskRequest
from pylti1p3.deep_link import DeepLink
from pylti1p3.deep_link_resource import DeepLinkResource
from pylti1p3.exception import LtiException
from pylti1p3.lineitem import LineItem

from app.errors import LaunchError
from app.lti import claims, keys
from app.lti.launch import StrictMessageLaunch, _storage, _tool_conf
from app.models import Activity, Deployment, Platform

DEEP_LINKING_REQUEST = claims.DEEP_LINKING_REQUEST
DEEP_LINKING_SETTINGS = claims.DEEP_LINKING_SETTINGS
DEEP_LINKING_DATA = claims.DEEP_LINKING_DATA
CUSTOM = claims.CUSTOM
RESOURCE_LINK_TYPE = claims.RESOURCE_LINK_ITEM
#: The custom parameter that names a deep-linked activity in its link's launches.
ACTIVITY_PARAMETER = "activity"
#: The line item tag that marks columns Evaluaitor made through deep linking.
LINEITEM_TAG = "evaluaitor"

TEACHERS_ONLY = _l(
    "Only teachers can add an Evaluaitor activity to a course. Open the activity from the "
    "course page instead."
)
NO_RESOURCE_LINKS = _l(
    "This course cannot receive an activity link from Evaluaitor: the LMS did not offer to "
    "accept one (ltiResourceLink). Add Evaluaitor from the course's activity chooser instead."
)
NO_ASSIGNMENT = _l(
    "The LMS asked to attach Evaluaitor to an assignment but did not say which one (the "
    "activity claim). Save the assignment and add Evaluaitor again; if this persists, the "
    "LMS does not support the LTI Asset Processor as Evaluaitor needs."
)
NO_NOTICES = _l(
    "The LMS asked to attach Evaluaitor to an assignment but offers no way to tell it about "
    "submissions (the Platform Notification Service, for LtiAssetProcessorSubmissionNotice). "
    "Ask the LMS administrator to give Evaluaitor's registration the noticehandlers scope."
)
NO_ASSET_PROCESSORS = _l(
    "The LMS did not offer to attach a processor (ltiAssetProcessor) in this request. Add "
    "Evaluaitor again from the assignment's settings."
)


@dataclass(frozen=True)
class ProcessorTarget:
    """What an asset processor request attaches to: the LMS's assignment and where the tool
    registers for its submission notices."""

    lms_activity_id: str
    notice_service_url: str


class DeepLinkingExpired(LaunchError):
    code = "deep_linking_expired"
    user_message = _l(
        "This setup page has expired. Start adding the activity again from your course."
    )


@dataclass(frozen=True)
class Answer:
    """The signed answer and where the browser must post it."""

    return_url: str
    jwt: str


def check_request(body: dict[str, Any]) -> None:
    """Name a deep-linking request the tool cannot answer before pylti1p3 refuses it vaguely.

    ``body`` holds the id_token's claims, not yet verified: this can refuse a launch, never
    accept one.
    """
    if body.get(claims.MESSAGE_TYPE) != DEEP_LINKING_REQUEST:
        return
    accepted = accept_types(body)
    if not wants_processor(body):
        if RESOURCE_LINK_TYPE not in accepted:
            raise LaunchError(NO_RESOURCE_LINKS, detail=f"deep linking accept_types {accepted!r}")
        return
    processor_target(body)


def accept_types(body: dict[str, Any]) -> list[str]:
    """The content item types a deep-linking request offers to take (empty if none)."""
    settings = body.get(DEEP_LINKING_SETTINGS)
    accepted = settings.get("accept_types") if isinstance(settings, dict) else None
    return [t for t in accepted if isinstance(t, str)] if isinstance(accepted, list) else []


def wants_processor(body: dict[str, Any]) -> bool:
    """Whether a deep-linking request attaches an asset processor: it offers
    ``ltiAssetProcessor`` and either nothing else we make or an assignment (activity claim)
    to attach to. An LMS offering both types without an assignment gets a resource link."""
    accepted = accept_types(body)
    if claims.ASSET_PROCESSOR_ITEM not in accepted:
        return False
    return RESOURCE_LINK_TYPE not in accepted or isinstance(body.get(claims.ACTIVITY), dict)


def processor_target(body: dict[str, Any]) -> ProcessorTarget:
    """The assignment and notice service of an asset processor request; LaunchError naming
    what is missing (the processor would never hear of a submission without them)."""
    activity = body.get(claims.ACTIVITY)
    activity_id = activity.get("id") if isinstance(activity, dict) else None
    if (
        not isinstance(activity_id, str | int)
        or not str(activity_id)
        or len(str(activity_id)) > 255
    ):
        raise LaunchError(NO_ASSIGNMENT, detail=f"asset processor request activity {activity!r}")
    service = body.get(claims.PNS)
    url = service.get("platform_notification_service_url") if isinstance(service, dict) else None
    supported = service.get("notice_types_supported") if isinstance(service, dict) else None
    usable = isinstance(url, str) and url.startswith(("https://", "http://")) and len(url) <= 1000
    if not usable or (isinstance(supported, list) and claims.SUBMISSION_NOTICE not in supported):
        raise LaunchError(NO_NOTICES, detail=f"asset processor request PNS claim {service!r}")
    return ProcessorTarget(lms_activity_id=str(activity_id), notice_service_url=url)


def answer(
    platform: Platform, deployment: Deployment, launch_id: str, activity: Activity, url: str
) -> Answer:
    """The signed LtiDeepLinkingResponse with one item for ``activity`` at ``url``: an
    ``ltiAssetProcessor`` for an attached processor, else a resource link; each only if the
    request offered its type.

    Raises DeepLinkingExpired when the launch data is gone from Redis.
    """
    deep_link, settings = _deep_link(platform, deployment, launch_id)
    offered = accept_types({DEEP_LINKING_SETTINGS: settings})
    if activity.is_asset_processor:
        if claims.ASSET_PROCESSOR_ITEM not in offered:
            raise LaunchError(NO_ASSET_PROCESSORS, detail=f"accept_types {offered!r}")
        item: DeepLinkResource = _AssetProcessorItem(activity, url)
    else:
        if RESOURCE_LINK_TYPE not in offered:
            raise LaunchError(NO_RESOURCE_LINKS, detail=f"accept_types {offered!r}")
        item = _resource(activity, url, settings)
    message = deep_link.get_message_jwt([item])
    if message.get(DEEP_LINKING_DATA) is None:
        message.pop(DEEP_LINKING_DATA, None)  # nothing to echo: the claim is left out
    key = keys.active_key(current_app.config["EVALUAITOR_KEY_DIR"])
    token = jwt.encode(message, key.private_pem, algorithm="RS256", headers={"kid": key.kid})
    return Answer(return_url=settings["deep_link_return_url"], jwt=token)


def launch_settings(
    platform: Platform, deployment: Deployment, launch_id: str
) -> dict[str, Any] | None:
    """The deep_linking_settings of a stored launch, or None when it was no such launch."""
    try:
        return _deep_link(platform, deployment, launch_id)[1]
    except DeepLinkingExpired:
        return None


def _deep_link(
    platform: Platform, deployment: Deployment, launch_id: str
) -> tuple[DeepLink, dict[str, Any]]:
    """pylti1p3's DeepLink (and its settings) for a launch it validated and stored earlier."""
    try:
        launch = StrictMessageLaunch.from_cache(
            launch_id,
            FlaskRequest(),
            _tool_conf(platform, deployment),
            launch_data_storage=_storage(),
        )
        ours = (launch.get_iss(), launch.get_client_id()) == (platform.issuer, platform.client_id)
        if not ours or not launch.is_deep_link_launch():
            raise DeepLinkingExpired(detail=f"launch {launch_id} is no deep-linking request here")
        deep_link = launch.get_deep_link()
        settings = dict(launch.get_launch_data()[DEEP_LINKING_SETTINGS])
    except LtiException as exc:
        raise DeepLinkingExpired(detail=str(exc)) from exc
    return_url = settings.get("deep_link_return_url")
    if not isinstance(return_url, str) or not return_url.startswith(("https://", "http://")):
        raise DeepLinkingExpired(detail=f"deep_link_return_url {return_url!r} is not http(s)")
    return deep_link, settings


class _Resource(DeepLinkResource):
    """pylti1p3's resource link content item, with the ``text`` it does not offer."""

    def __init__(self, text: str) -> None:
        self._text = text

    def to_dict(self) -> dict[str, object]:
        item = super().to_dict()
        if self._text:
            item["text"] = self._text
        return item


class _AssetProcessorItem(DeepLinkResource):
    """An ``ltiAssetProcessor`` content item (pylti1p3 knows none). Its launches (settings)
    and its report's (report review) name the activity in the ``activity`` custom parameter,
    as a resource link's do; both open ``url``, the tool's launch URL."""

    def __init__(self, activity: Activity, url: str) -> None:
        self._activity = activity
        self._url = url

    def to_dict(self) -> dict[str, object]:
        custom = {ACTIVITY_PARAMETER: self._activity.public_id}
        item: dict[str, object] = {
            "type": claims.ASSET_PROCESSOR_ITEM,
            "title": self._activity.title,
            "url": self._url,
            "custom": custom,
            "report": {"url": self._url, "custom": dict(custom)},
        }
        text = _summary(self._activity.instructions)
        if text:
            item["text"] = text
        return item


def _resource(activity: Activity, url: str, settings: dict[str, Any]) -> DeepLinkResource:
    """One ltiResourceLink; its launches name the activity in the ``activity`` custom
    parameter. The line item is left out when the platform says it takes none."""
    resource = (
        _Resource(_summary(activity.instructions))
        .set_title(activity.title)
        .set_url(url)
        .set_custom_params({ACTIVITY_PARAMETER: activity.public_id})
    )
    if settings.get("accept_lineitem", True) not in (False, "false"):
        resource.set_lineitem(
            LineItem()
            .set_score_maximum(activity.max_score)
            .set_label(activity.title)
            .set_resource_id(activity.public_id)
            .set_tag(LINEITEM_TAG)
        )
    return resource


def _summary(instructions: str, limit: int = 500) -> str:
    """The start of the instructions, as the link's plain-text description."""
    text = " ".join(instructions.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
