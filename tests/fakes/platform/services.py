"""Moodle's mod/lti/services.php: AGS line items, scores, results and NRPS memberships.

Requests go through the same gates, in the same order, as in Moodle: content negotiation (400),
method (405), bearer token and scope (401), course (404), line item (404), then the body.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from werkzeug.wrappers import Request, Response

from .store import ServiceError
from .vocab import (
    LINEITEM_TYPE,
    LINEITEMS_TYPE,
    MEMBERSHIPS_TYPE,
    RESULTS_TYPE,
    SCOPE_LINEITEM,
    SCOPE_LINEITEM_READONLY,
    SCOPE_NRPS,
    SCOPE_RESULT_READONLY,
    SCOPE_SCORE,
    SCORE_TYPE,
)

if TYPE_CHECKING:
    from .server import FakePlatform


@dataclass(frozen=True)
class Resource:
    formats: tuple[str, ...]
    scopes: dict[str, tuple[str, ...]]  # method -> scopes of which the token needs one


_READ = (SCOPE_LINEITEM, SCOPE_LINEITEM_READONLY)
RESOURCES = {
    "lineitems": Resource(
        (LINEITEMS_TYPE, LINEITEM_TYPE), {"GET": _READ, "POST": (SCOPE_LINEITEM,)}
    ),
    "lineitem": Resource(
        (LINEITEM_TYPE,),
        {"GET": _READ, "PUT": (SCOPE_LINEITEM,), "DELETE": (SCOPE_LINEITEM,)},
    ),
    "scores": Resource((SCORE_TYPE,), {"POST": (SCOPE_SCORE,)}),
    "results": Resource((RESULTS_TYPE,), {"GET": (SCOPE_RESULT_READONLY,)}),
    "memberships": Resource((MEMBERSHIPS_TYPE,), {"GET": (SCOPE_NRPS,)}),
}


class Services:
    def __init__(self, platform: FakePlatform) -> None:
        self.platform = platform
        self.gradebook = platform.gradebook

    def handle(self, kind: str, request: Request, args: dict[str, Any]) -> Response:
        resource = RESOURCES[kind]
        try:
            self._negotiate(request, resource)
            if request.method not in resource.scopes:
                raise ServiceError(405)
            type_id = args.get("type_id", request.args.get("type_id"))
            refusal = self.platform.tokens.check_bearer(
                request.headers.get("Authorization"), resource.scopes[request.method]
            )
            if type_id != self.platform.type_id or refusal:
                raise ServiceError(401, refusal or f"no tool with type_id {type_id!r}")
            if args["course"] != self.platform.course_id:
                raise ServiceError(404, f"Not Found: Course {args['course']} doesn't exist")
            if "n" in args:
                self.gradebook.item(args["n"])
            return getattr(self, f"_{kind}_{request.method.lower()}")(request, args)
        except ServiceError as exc:
            return _error(request, exc)

    @staticmethod
    def _negotiate(request: Request, resource: Resource) -> None:
        """Moodle's router: a GET's whole Accept header, or a body's media type, must match."""
        accept = request.headers.get("Accept", "")
        content_type = request.headers.get("Content-Type", "").split(";", 1)[0].strip()
        if request.method == "GET":
            refused = bool(accept) and "*/*" not in accept and accept not in resource.formats
        else:
            refused = request.method != "DELETE" and content_type not in resource.formats
        if refused:
            raise ServiceError(400, f"No handler found for {request.path} {accept} {content_type}")

    def _lineitems_get(self, request: Request, args: dict[str, Any]) -> Response:
        accept = request.headers.get("Accept", "")
        if accept and accept != LINEITEMS_TYPE:  # Moodle refuses even */* here
            raise ServiceError(400, "No context or unsupported content type")
        query = request.args
        link = query.get("resource_link_id", query.get("lti_link_id"))
        # A filter that is absent matches every item.
        items = [
            item
            for item in self.gradebook.lineitems.values()
            if (link is None or item.resource_link_id == link)
            and query.get("resource_id", item.resource_id) == item.resource_id
            and query.get("tag", item.tag) == item.tag
        ]
        headers = {}
        limit, start = query.get("limit", 0, type=int), query.get("from", 0, type=int)
        if limit > 0:
            headers["Link"] = self._page_links(request, len(items), limit, start)
            items = items[start : start + limit]
        body = [item.to_json(self.platform.lineitem_url(item.n)) for item in items]
        return _json(body, LINEITEMS_TYPE, headers=headers)

    def _page_links(self, request: Request, total: int, limit: int, start: int) -> str:
        """The Link header as Moodle writes it: &amp; in the URLs and typographic quotes."""
        names = ("resource_id", "resource_link_id", "tag")
        params = {name: request.args[name] for name in names if name in request.args}
        params |= {"type_id": self.platform.type_id, "limit": limit}
        base = self.platform.lineitems_url.split("?", 1)[0]
        in_range = 0 <= start < total
        pages = [("first", 0)]
        if start > 0 and in_range:
            pages.append(("prev", max(start - limit, 0)))
        pages.append(("canonical", start))
        if start + limit <= total - 1 and in_range:
            pages.append(("next", start + limit))
        pages.append(("last", max(total - limit + 1, 0)))
        links = ", ".join(
            f"<{base}?{urlencode({**params, 'from': page})}>; rel=“{rel}”".replace("&", "&amp;")
            for rel, page in pages
        )
        # PHP sends the UTF-8 bytes; WSGI wants them smuggled through latin-1.
        return links.encode("utf-8").decode("latin-1")

    def _lineitems_post(self, request: Request, args: dict[str, Any]) -> Response:
        if request.headers.get("Content-Type", "").split(";", 1)[0].strip() != LINEITEM_TYPE:
            raise ServiceError(400, "No context or unsupported content type")
        data = _body(request)
        item = self.gradebook.create_item(data)
        return _json({**data, "id": self.platform.lineitem_url(item.n)}, LINEITEM_TYPE, 201)

    def _lineitem_get(self, request: Request, args: dict[str, Any]) -> Response:
        item = self.gradebook.item(args["n"])
        return _json(item.to_json(self.platform.lineitem_url(item.n)), LINEITEM_TYPE)

    def _lineitem_put(self, request: Request, args: dict[str, Any]) -> Response:
        """Moodle answers with the item as stored (its GET body), whatever id the body names."""
        item = self.gradebook.update_item(args["n"], _body(request))
        return _json(item.to_json(self.platform.lineitem_url(item.n)), LINEITEM_TYPE)

    def _lineitem_delete(self, request: Request, args: dict[str, Any]) -> Response:
        self.gradebook.delete_item(args["n"])
        return Response(status=204)

    def _scores_post(self, request: Request, args: dict[str, Any]) -> Response:
        """Moodle answers an accepted score with 200, its media type, and an empty body; a
        refused one (400, 409) with its reason in the status line only, a body of ``[]`` and
        the request's media type (scores.php keeps its ``$json = '[]'`` when it catches)."""
        try:
            self.gradebook.record_score(args["n"], _body(request))
        except ServiceError as exc:
            media_type = request.headers.get("Content-Type", "").split(";", 1)[0]
            return Response(
                "[]", status=_status_line(exc), content_type=f"{media_type}; charset=utf-8"
            )
        return Response(status=200, content_type=f"{SCORE_TYPE}; charset=utf-8")

    def _results_get(self, request: Request, args: dict[str, Any]) -> Response:
        n, user_id = args["n"], request.args.get("user_id")
        item_url = self.platform.lineitem_url(n)
        base = item_url.split("?", 1)[0]
        results = []
        for (item_n, uid), grade in sorted(self.gradebook.grades.items()):
            if item_n != n or user_id not in (None, uid):
                continue
            query = urlencode({"type_id": self.platform.type_id, "user_id": uid})
            result: dict[str, Any] = {"id": f"{base}/results?{query}", "userId": uid}
            if grade["grade"] is not None:  # Moodle leaves the score out of a cleared result
                result |= {
                    "resultScore": grade["grade"],
                    "resultMaximum": self.gradebook.item(n).score_maximum,
                    "scoreOf": item_url,
                    "timestamp": datetime.fromtimestamp(grade["timemodified"], UTC).isoformat(),
                }
                if grade["comment"]:
                    result["comment"] = grade["comment"]
            results.append(result)
        return _json(results, RESULTS_TYPE)

    def _memberships_get(self, request: Request, args: dict[str, Any]) -> Response:
        members = [
            {
                "status": "Active",
                "user_id": user.user_id,
                "roles": user.roles,
                "name": user.name,
                "given_name": user.given_name,
                "family_name": user.family_name,
                "email": user.email,
            }
            for user in self.gradebook.users.values()
        ]
        headers = {}
        limit, start = request.args.get("limit", 0, type=int), request.args.get("from", 0, type=int)
        if limit > 0:  # Moodle pages only when asked, and then links the next page only
            if start + limit < len(members):
                query = urlencode({"limit": limit, "from": start + limit})
                headers["Link"] = f'<{self.platform.memberships_url}?{query}>; rel="next"'
            members = members[start : start + limit]
        body = {
            "id": self.platform.memberships_url,
            "context": {"id": self.platform.course_id, "label": "ESSAY101", "title": "Essays"},
            "members": members,
        }
        return _json(body, MEMBERSHIPS_TYPE, headers=headers)


def _body(request: Request) -> Any:
    try:
        return json.loads(request.get_data(as_text=True))
    except ValueError:
        raise ServiceError(400, "Request body is not JSON") from None


def _json(
    body: Any, media_type: str, status: int = 200, headers: dict[str, str] | None = None
) -> Response:
    return Response(
        json.dumps(body),
        status=status,
        content_type=f"{media_type}; charset=utf-8",
        headers=headers,
    )


def _error(request: Request, exc: ServiceError) -> Response:
    """Moodle's error body: status, reason, and an echo of the request."""
    echo = {"method": request.method, "url": request.full_path.rstrip("?")}
    if "Accept" in request.headers:
        echo["accept"] = request.headers["Accept"]
    if "Content-Type" in request.headers:
        echo["contentType"] = request.headers["Content-Type"].split(";", 1)[0]
    body = {"status": exc.status, "reason": exc.reason, "request": echo}
    return Response(
        json.dumps(body), status=_status_line(exc), content_type="application/json; charset=utf-8"
    )


def _status_line(exc: ServiceError) -> str:
    """Moodle's response.php sends ``HTTP/1.0 <code> <reason>``: its reason, not the standard
    phrase, so a tool that reads only the body or the code loses why it was refused."""
    reason = " ".join(exc.reason.split())  # one header line
    return f"{exc.status} {reason.encode('latin-1', 'replace').decode('latin-1')}"
