"""Assignment and Grade Services client, built from stored platform data (no live launch).

Every failure becomes an :class:`AgsError`; ``retryable`` tells the caller whether trying
again later can help. One token asks for every scope the launch granted, so a grade push
needs one token request, not one per call (see :mod:`app.lti.service_client`).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit, urlunsplit

from app.lti import claims
from app.lti.service_client import ServiceClient, ServiceError, with_query


class AgsError(ServiceError):
    """A failed AGS exchange."""


def scores_url(lineitem_url: str) -> str:
    """``…/lineitem?type_id=1`` → ``…/lineitem/scores?type_id=1`` (Moodle's URLs carry a query)."""
    parts = urlsplit(lineitem_url)
    return urlunsplit(parts._replace(path=parts.path.rstrip("/") + "/scores"))


class AgsClient(ServiceClient):
    error = AgsError

    def get_lineitem(self, url: str) -> dict[str, Any]:
        readable = {claims.SCOPE_LINEITEM_READONLY, claims.SCOPE_LINEITEM}
        response = self._call(
            "GET",
            url,
            sorted(readable & self._granted) or [claims.SCOPE_LINEITEM_READONLY],
            headers={"Accept": claims.LINEITEM_CONTENT_TYPE},
        )
        return self._json(response)

    def update_lineitem(
        self, url: str, *, label: str, score_maximum: float | None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Give the line item a new label and maximum (None keeps its own); returns the item
        (before, after).

        A PUT replaces the whole item (Moodle clears a ``resourceId`` or ``tag`` left out),
        so the item is read first and sent back with only these two fields changed. Nothing
        is sent when it already has them.
        """
        before = self._json(
            self._call(
                "GET",
                url,
                [claims.SCOPE_LINEITEM],
                headers={"Accept": claims.LINEITEM_CONTENT_TYPE},
            )
        )
        if not isinstance(before, dict):
            raise AgsError(
                "the platform returned a line item that is not an object", retryable=False
            )
        wanted = {"label": label, "scoreMaximum": score_maximum or before.get("scoreMaximum")}
        if all(before.get(name) == value for name, value in wanted.items()):
            return before, before
        response = self._call(
            "PUT",
            url,
            [claims.SCOPE_LINEITEM],
            json=before | wanted,
            headers={
                "Content-Type": claims.LINEITEM_CONTENT_TYPE,
                "Accept": claims.LINEITEM_CONTENT_TYPE,
            },
        )
        after = self._json(response) if response.content else {}
        return before, after if isinstance(after, dict) else {}

    def find_or_create_lineitem(
        self, lineitems_url: str, *, resource_link_id: str, label: str, score_maximum: float
    ) -> dict[str, Any]:
        """The line item bound to ``resource_link_id``; created when the platform has none."""
        scopes = [claims.SCOPE_LINEITEM]
        listing = self._call(
            "GET",
            with_query(lineitems_url, resource_link_id=resource_link_id),
            scopes,
            headers={"Accept": claims.LINEITEM_CONTAINER_CONTENT_TYPE},
        )
        for item in self._json(listing):
            if isinstance(item, dict) and item.get("resourceLinkId") == resource_link_id:
                return item
        created = self._call(
            "POST",
            lineitems_url,
            scopes,
            json={
                "label": label or "Evaluaitor",
                "scoreMaximum": score_maximum,
                "resourceLinkId": resource_link_id,
                "tag": "evaluaitor",
            },
            headers={"Content-Type": claims.LINEITEM_CONTENT_TYPE},
        )
        return self._json(created)

    def post_score(self, lineitem_url: str, score: dict[str, Any]) -> None:
        self._call(
            "POST",
            scores_url(lineitem_url),
            [claims.SCOPE_SCORE],
            json=score,
            headers={"Content-Type": claims.SCORE_CONTENT_TYPE},
        )
