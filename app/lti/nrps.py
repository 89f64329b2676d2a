"""Names and Role Provisioning Service: who is enrolled in a course, for the teacher page.

The roster lists students who never submitted, which the tool cannot know otherwise. It is
read with the same OAuth2 client as AGS (:mod:`app.lti.service_client`), page by page along
``rel="next"`` links, and cached in Redis for a few minutes so a teacher clicking through
filters does not ask the LMS every time. When the LMS does not offer the service or it fails,
:func:`course_roster` says why and the page falls back to the students known from submissions.
"""

from __future__ import annotations

import html
import json
import logging
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from flask_babel import gettext as _
from redis.exceptions import RedisError

from app import privacy
from app.extensions import redis_connection
from app.lti import claims
from app.lti.service_client import ServiceClient, ServiceError, with_query
from app.models import Course, Platform

log = logging.getLogger(__name__)

#: A roster longer than this many pages is cut (a platform whose links loop, or a huge site).
MAX_PAGES = 100
#: Seconds a failed roster request is remembered before the LMS is asked again.
FAILURE_CACHE_SECONDS = 30
_LINK = re.compile(r"<([^<>]*)>\s*;([^,<]*)")  # [^<>]: a run of "<" is not rescanned from each
_REL = re.compile(r"""rel\s*=\s*["'“”]?([^"'“”;]+)""")


class NrpsError(ServiceError):
    """A failed or unusable memberships exchange."""


@dataclass(frozen=True)
class Member:
    sub: str
    name: str
    email: str
    roles: tuple[str, ...]
    status: str = "Active"

    @property
    def is_student(self) -> bool:
        return any(role in (claims.LEARNER, "Learner") for role in self.roles)


@dataclass(frozen=True)
class Roster:
    """The course's active students; ``problem`` says why the list may be incomplete."""

    members: tuple[Member, ...]
    problem: str | None = None


class NrpsClient(ServiceClient):
    error = NrpsError

    def members(self, url: str, *, page_size: int) -> list[Member]:
        """Every member of the context, following the platform's ``next`` links."""
        found: list[Member] = []
        next_url: str | None = with_query(url, limit=page_size)
        visited: set[str] = set()
        while next_url and next_url not in visited:
            if len(visited) >= MAX_PAGES:
                log.warning("roster at %s cut after %s pages", url, MAX_PAGES)
                break
            visited.add(next_url)
            response = self._call(
                "GET",
                next_url,
                [claims.SCOPE_NRPS],
                headers={"Accept": claims.MEMBERSHIPS_CONTENT_TYPE},
            )
            found.extend(_parse_page(self._json(response)))
            next_url = next_link(response.headers.get("Link", ""))
        return found


def _parse_page(body: Any) -> list[Member]:
    members = body.get("members") if isinstance(body, dict) else None
    if not isinstance(members, list):
        raise NrpsError("the membership container has no members list", retryable=False)
    parsed = []
    for entry in members:
        if not isinstance(entry, dict) or not isinstance(entry.get("user_id"), str | int):
            continue  # a member without an id cannot be matched to anything
        roles = entry.get("roles")
        parsed.append(
            Member(
                sub=str(entry["user_id"]),
                name=_text(entry.get("name"))
                or " ".join(
                    filter(None, (_text(entry.get(k)) for k in ("given_name", "family_name")))
                ),
                email=_text(entry.get("email")),
                roles=tuple(r for r in roles if isinstance(r, str))
                if isinstance(roles, list)
                else (),
                status=_text(entry.get("status")) or "Active",
            )
        )
    return parsed


def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def next_link(header: str) -> str | None:
    """The ``rel="next"`` URL of a Link header. Tolerates what Moodle writes elsewhere
    (typographic quotes, ``&amp;`` in URLs) as well as the RFC 8288 form."""
    for url, params in _LINK.findall(header):
        rels = _REL.search(params)
        if rels and "next" in rels.group(1).split():
            return html.unescape(url.strip())
    return None


def course_roster(platform: Platform, course: Course | None, config: Mapping[str, Any]) -> Roster:
    """The course's active students from the LMS, cached; an empty roster with the reason
    when the service is not offered or fails (never raises for the LMS's failures)."""
    if course is None or not course.memberships_url:
        return Roster((), _("The LMS does not share the course's member list with this tool."))
    cache_key = f"{privacy.ROSTER_PREFIX}{platform.id}:{course.id}"
    cached = _cache_get(cache_key)
    if cached is not None:
        return cached
    try:
        with NrpsClient.configured(platform, timeout="EVALUAITOR_NRPS_TIMEOUT") as client:
            members = client.members(
                course.memberships_url, page_size=config["EVALUAITOR_NRPS_PAGE_SIZE"]
            )
    except RedisError as exc:  # the token cache is down: the page still works without a roster
        log.warning("roster of course %s unavailable: %s", course.id, exc)
        return Roster((), _("The course's member list is unavailable right now."))
    except NrpsError as exc:
        log.warning("roster of course %s unavailable: %s", course.id, exc)
        # Remembered briefly too, so a slow or broken LMS does not delay every page view.
        roster = Roster((), _explain(exc))
        _cache_set(cache_key, roster, FAILURE_CACHE_SECONDS)
        return roster
    roster = Roster(tuple(m for m in members if m.is_student and m.status == "Active"))
    _cache_set(cache_key, roster, config["EVALUAITOR_ROSTER_CACHE_SECONDS"])
    return roster


def _explain(exc: NrpsError) -> str:
    if exc.status is not None and exc.status >= 400:
        return _(
            "The LMS did not provide the course's member list (HTTP %(status)s).",
            status=exc.status,
        )
    if "timed out" in str(exc):
        return _("The LMS did not send the course's member list in time.")
    if exc.retryable:
        return _("The LMS could not be reached for the course's member list.")
    return _("The LMS sent a course member list that could not be read.")


def _cache_get(key: str) -> Roster | None:
    try:
        raw = redis_connection().get(key)
    except RedisError:
        return None
    if not raw:
        return None
    data = json.loads(raw)
    members = tuple(Member(**{**m, "roles": tuple(m["roles"])}) for m in data["members"])
    return Roster(members, data["problem"])


def _cache_set(key: str, roster: Roster, seconds: int) -> None:
    data = {"members": [asdict(m) for m in roster.members], "problem": roster.problem}
    try:
        redis_connection().set(key, json.dumps(data), ex=max(1, int(seconds)))
    except RedisError as exc:
        log.info("roster not cached: %s", exc)
