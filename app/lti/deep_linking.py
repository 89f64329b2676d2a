"""LTI Deep Linking 2.0 (LTI 1.3), tool side: a teacher adds Evaluaitor to a course from the LMS's
activity chooser, sets the activity up, and the tool answers with one resource link.

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

DEEP_LINKING_REQUEST = "LtiDeepLinkingRequest"
DEEP_LINKING_SETTINGS = "https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings"
DEEP_LINKING_DATA = "https://purl.imsglobal.org/spec/lti-dl/claim/data"
CUSTOM = "https://purl.imsglobal.org/spec/lti/claim/custom"
RESOURCE_LINK_TYPE = "ltiResourceLink"
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
    settings = body.get(DEEP_LINKING_SETTINGS)
    accepted = settings.get("accept_types") if isinstance(settings, dict) else None
    if not isinstance(accepted, list) or RESOURCE_LINK_TYPE not in accepted:
        raise LaunchError(NO_RESOURCE_LINKS, detail=f"deep linking accept_types {accepted!r}")


def answer(
    platform: Platform, deployment: Deployment, launch_id: str, activity: Activity, url: str
) -> Answer:
    """The signed LtiDeepLinkingResponse with one resource link to ``activity`` at ``url``.

    Raises DeepLinkingExpired when the launch data is gone from Redis.
    """
    deep_link, settings = _deep_link(platform, deployment, launch_id)
    message = deep_link.get_message_jwt([_resource(activity, url, settings)])
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
