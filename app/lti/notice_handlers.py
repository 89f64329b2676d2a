"""Platform Notification Service (PNS), tool side: registering the tool's notice handler.

An asset processor hears of submissions only through notices the LMS posts to a handler the
tool registered: ``PUT <platform_notification_service_url>`` with ``{"notice_type",
"handler"}`` and a client-credentials token of scope ``noticehandlers``. The LMS keeps one
handler per notice type and deployment; an empty ``handler`` removes it. Canvas does not
check the handler when the processor is attached, nor retry a notice it could not deliver,
so the registration is made, and confirmed, before the attaching deep-linking answer is sent
(app.web.setup): a processor the LMS would never notify is never attached.

pylti1p3 has no PNS support. The exchange goes through :class:`ServiceClient` (tokens,
app.outbound's address rules, deadlines and size caps).
"""

from __future__ import annotations

from typing import Any

from app.lti import claims
from app.lti.service_client import ServiceClient, ServiceError, safe_url
from app.models import Activity


class NoticeHandlerError(ServiceError):
    """The LMS refused the registration, failed, or did not confirm it."""


class PnsClient(ServiceClient):
    error = NoticeHandlerError

    def register(self, service_url: str, notice_type: str, handler: str) -> None:
        """Set ``handler`` for ``notice_type``, and check the LMS now holds it.

        Canvas answers the PUT with the deployment's handler list (its own documentation
        shows the single handler echoed); an answer that confirms neither way is checked with
        a GET. Raises NoticeHandlerError.
        """
        response = self._call(
            "PUT",
            service_url,
            [claims.SCOPE_NOTICE_HANDLERS],
            json={"notice_type": notice_type, "handler": handler},
        )
        held = _handlers(self._json(response)) if response.content.strip() else {}
        if notice_type not in held:
            held = self.handlers(service_url)
        if held.get(notice_type) != handler:
            raise self.error(
                f"PUT {safe_url(service_url)}: the LMS holds {held.get(notice_type)!r} for "
                f"{notice_type}, not the handler sent",
                retryable=False,
            )

    def handlers(self, service_url: str) -> dict[str, str]:
        """The handler the LMS holds for each notice type (``""``: none)."""
        response = self._call("GET", service_url, [claims.SCOPE_NOTICE_HANDLERS])
        return _handlers(self._json(response))


def _handlers(body: Any) -> dict[str, str]:
    """``{notice_type: handler}`` from a handler list (``{"notice_handlers": [...]}``) or a
    single echoed handler (``{"notice_type", "handler"}``); empty for anything else."""
    if not isinstance(body, dict):
        return {}
    entries = body.get("notice_handlers")
    entries = entries if isinstance(entries, list) else [body]
    return {
        entry["notice_type"]: entry["handler"]
        for entry in entries
        if isinstance(entry, dict)
        and isinstance(entry.get("notice_type"), str)
        and isinstance(entry.get("handler"), str)
    }


def register_submission_handler(activity: Activity, handler: str) -> None:
    """Register ``handler`` for the submission notices of an attached processor's
    deployment, with the notice service its attaching launch named. Raises
    NoticeHandlerError (``retryable`` when trying again later may help)."""
    if not activity.notice_service_url:
        raise NoticeHandlerError("the activity has no notice service URL", retryable=False)
    with PnsClient.configured(activity.platform) as client:
        client.register(activity.notice_service_url, claims.SUBMISSION_NOTICE, handler)
