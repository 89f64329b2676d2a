"""FakePlatform: a Moodle 4.5 look-alike LMS served over real HTTP on 127.0.0.1."""

from __future__ import annotations

import inspect
import json
import secrets
import threading
import time
from collections.abc import Mapping
from typing import Any

from werkzeug.exceptions import HTTPException
from werkzeug.routing import Map, Rule
from werkzeug.wrappers import Request, Response

from tests.fakes.http import BackgroundServer

from . import registration
from .asset_processor import ASSETS_PATH, REPORTS_PATH, AssetProcessor
from .deep_linking import RETURN_PATH as DEEP_LINKING_RETURN
from .deep_linking import DeepLinking
from .faults import Fault, Faults, fault_response
from .keys import SigningKey, jwks
from .launch import (
    AuthorizationError,
    InvalidRequest,
    PendingLaunch,
    auto_submit_form,
    check_auth_request,
    invalid_request_page,
)
from .notice_service import PNS_PATH, Processors
from .oauth import TokenService
from .services import Services
from .store import Gradebook
from .vocab import AGS_CLAIM, AGS_SCOPES, LTI_CLAIM, NRPS_CLAIM, STUDENT

_SERVICES = "/mod/lti/services.php"
_ROUTES = Map(
    [
        Rule("/mod/lti/auth.php", endpoint="auth"),
        Rule("/mod/lti/token.php", endpoint="token"),
        Rule("/mod/lti/certs.php", endpoint="jwks"),
        Rule("/mod/lti/return.php", endpoint="return"),
        Rule(DEEP_LINKING_RETURN, endpoint="deep_linking"),
        Rule(registration.CONFIGURATION_PATH, endpoint="openid_configuration"),
        Rule(f"{ASSETS_PATH}/<asset_id>", endpoint="asset"),
        Rule(REPORTS_PATH, endpoint="report", methods=["POST"]),
        Rule("/files/<asset_id>/download", endpoint="file"),
        Rule(registration.REGISTRATION_PATH, endpoint="registration"),
        Rule(f"{PNS_PATH}/<deployment_id>", endpoint="notice_handlers"),
        Rule(f"{_SERVICES}/<course>/lineitems", endpoint="lineitems"),
        Rule(f"{_SERVICES}/<course>/lineitems/<int:n>/lineitem", endpoint="lineitem"),
        Rule(f"{_SERVICES}/<course>/lineitems/<int:n>/lineitem/scores", endpoint="scores"),
        Rule(f"{_SERVICES}/<course>/lineitems/<int:n>/lineitem/results", endpoint="results"),
        Rule(
            f"{_SERVICES}/CourseSection/<course>/bindings/<type_id>/memberships",
            endpoint="memberships",
        ),
    ]
)


class FakePlatform:
    """The LMS side of LTI 1.3 / Advantage, as strict as Moodle 4.5 (stricter where noted).

    Moodle identifies the tool registration by its type id, which is also the deployment id
    it sends; services live under the course id. Both are fixed here: `type_id` "1" and
    `course_id` "2", as on a fresh Moodle site.
    """

    type_id = "1"
    course_id = "2"

    def __init__(
        self,
        *,
        client_id: str = "evaluaitor-client",
        deployment_id: str = "1",
        name: str = "moodle",
    ) -> None:
        self.client_id = client_id
        self.deployment_id = deployment_id
        self.name = name
        self.tool_jwks_url: str | None = None
        self.tool_redirect_uris: list[str] = []
        self.gradebook = Gradebook()
        self.tokens = TokenService(client_id)
        self.request_log: list[dict[str, Any]] = []
        self._keys = [SigningKey.generate()]
        self._stranger_key: SigningKey | None = None
        self._launches: dict[str, PendingLaunch] = {}
        self._launch_settings: dict[str, dict[str, Any]] = {}
        self._faults = Faults()
        self._services = Services(self)
        self.deep_linking = DeepLinking(self)
        self.processors = Processors(self)
        self.registration = registration.Registration(self)
        self.asset_processor = AssetProcessor(self)
        self._lock = threading.RLock()
        self._stopping = threading.Event()
        self._http = BackgroundServer(self._wsgi, f"fake-{name}")

    # --- lifecycle -------------------------------------------------------------------------

    def start(self) -> FakePlatform:
        self._stopping.clear()
        self._http.start()
        return self

    def stop(self) -> None:
        if not self._http.is_running:
            return
        self._stopping.set()  # wakes injected delays
        self._http.stop()
        self.tokens.close()

    def __enter__(self) -> FakePlatform:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # --- addresses -------------------------------------------------------------------------

    @property
    def url(self) -> str:
        if not self._http.is_running:
            raise RuntimeError("FakePlatform is not started")
        return f"http://127.0.0.1:{self._http.port}"

    @property
    def issuer(self) -> str:
        return self.url

    @property
    def auth_login_url(self) -> str:
        return self.url + "/mod/lti/auth.php"

    @property
    def auth_token_url(self) -> str:
        return self.url + "/mod/lti/token.php"

    @property
    def key_set_url(self) -> str:
        return self.url + "/mod/lti/certs.php"

    @property
    def lineitems_url(self) -> str:
        return f"{self.url}{_SERVICES}/{self.course_id}/lineitems?type_id={self.type_id}"

    def lineitem_url(self, n: int) -> str:
        return (
            f"{self.url}{_SERVICES}/{self.course_id}/lineitems/{n}/lineitem?type_id={self.type_id}"
        )

    def scores_url(self, n: int) -> str:
        """Moodle's form: "/scores" goes before the query string of the line item URL."""
        return self.lineitem_url(n).replace("/lineitem?", "/lineitem/scores?")

    def results_url(self, n: int) -> str:
        return self.lineitem_url(n).replace("/lineitem?", "/lineitem/results?")

    @property
    def memberships_url(self) -> str:
        return (
            f"{self.url}{_SERVICES}/CourseSection/{self.course_id}/bindings/{self.type_id}"
            "/memberships"
        )

    # --- gradebook views -------------------------------------------------------------------

    @property
    def scores(self) -> list[dict[str, Any]]:
        return self.gradebook.scores

    @property
    def grades(self) -> dict[tuple[int, str], dict[str, Any]]:
        return self.gradebook.grades

    @property
    def token_requests(self) -> int:
        """Requests to the token endpoint, failed and injected ones included."""
        return sum(1 for entry in self.request_log if entry["kind"] == "token")

    def grade_for(self, user: str, lineitem_n: int | None = None) -> dict[str, Any] | None:
        """The grade held for `user`; without `lineitem_n` the user must have only one."""
        with self._lock:
            held = [
                grade
                for (n, uid), grade in self.grades.items()
                if uid == user and lineitem_n in (None, n)
            ]
        if len(held) > 1:
            raise ValueError(f"user {user} has grades on several line items; pass lineitem_n")
        return dict(held[0]) if held else None

    def lineitem_for_link(self, resource_link_id: str = "rl-1") -> int | None:
        """The first existing line item of a resource link: its own, or one the tool made."""
        with self._lock:
            items = self.gradebook.lineitems.values()
            return min((i.n for i in items if i.resource_link_id == resource_link_id), default=None)

    def enrol(self, user: str, roles: list[str] | None = None, **names: str) -> None:
        """Enrol a user who never launched (a student by default), e.g. to receive scores."""
        with self._lock:
            self.gradebook.enrol(user, STUDENT if roles is None else roles, **names)

    def delete_lineitem(self, n: int) -> None:
        """A teacher deletes the column in the gradebook."""
        with self._lock:
            self.gradebook.delete_item(n)

    # --- keys and tokens -------------------------------------------------------------------

    def rotate_key(self, *, keep_old: bool = False) -> None:
        """Sign with a new key; the JWKS keeps the old one only if `keep_old`."""
        self._keys = [SigningKey.generate(), *(self._keys if keep_old else [])]

    def expire_tokens(self) -> None:
        self.tokens.expire_all()

    def fail_next(
        self,
        kind: str,
        status: int | None,
        times: int = 1,
        body: Any = None,
        delay: float = 0,
        headers: dict[str, str] | None = None,
    ) -> None:
        """Answer the next `times` requests of `kind` with `status` (and `body`) after `delay`.

        kind: token, scores, lineitems, lineitem, results, memberships, auth or jwks.
        status 0 hangs for `delay` and then closes the connection without an answer;
        status None only delays, then answers normally.
        """
        self._faults.add(kind, Fault(status, body, delay, headers or {}), times)

    def recover(self) -> None:
        """Drop every injected failure and slowness: the platform is well again."""
        self._faults.clear()

    def slow_down(self, kind: str, seconds: float) -> None:
        """Answer every request of `kind` (see `fail_next`) `seconds` late, until changed
        (0 restores): a slow LMS, with several requests in flight at once. An injected
        failure is not slowed down (an overloaded LMS refuses at once)."""
        self._faults.slow_down(kind, seconds)

    # --- launches --------------------------------------------------------------------------

    def login_params(
        self, *, target_link_uri: str, user: str = "2", message_hint: dict[str, Any] | None = None
    ) -> dict[str, str]:
        """What Moodle posts to the tool's login initiation URL when `user` opens the activity."""
        launch_id = f"ltilaunch1_{secrets.randbelow(2**31)}"
        with self._lock:
            self._launches[launch_id] = PendingLaunch(user, target_link_uri)
        return {
            "iss": self.issuer,
            "target_link_uri": target_link_uri,
            "login_hint": user,
            "lti_message_hint": json.dumps(
                {"cmid": 5, "launchid": launch_id, **(message_hint or {})}
            ),
            "client_id": self.client_id,
            "lti_deployment_id": self.deployment_id,
        }

    def set_launch(self, user: str, **settings: Any) -> None:
        """Choose the `make_id_token` arguments used when `user` authenticates (default student)."""
        inspect.signature(self.make_id_token).bind(nonce="", user=user, **settings)
        self._launch_settings[user] = settings

    def authorize(self, params: Mapping[str, str]) -> tuple[str, dict[str, str]]:
        """The authentication endpoint's logic: (redirect_uri, form fields to post there).

        Like Moodle, the launch id in lti_message_hint is single use (InvalidRequest the second
        time) and login_hint must be the user who started that launch. Raises
        AuthorizationError.
        """
        launch_id = check_auth_request(
            params, client_id=self.client_id, redirect_uris=self.tool_redirect_uris
        )
        with self._lock:
            launch = self._launches.pop(launch_id, None)
        if launch is None:
            raise InvalidRequest(f"invalid_request: unknown or used launch id {launch_id!r}")
        if params["login_hint"] != launch.user:
            raise AuthorizationError("access_denied: login_hint is not the user of this launch")
        settings = {"target_link_uri": launch.target_link_uri}
        settings |= self._launch_settings.get(launch.user, {})
        id_token = self.make_id_token(nonce=params["nonce"], user=launch.user, **settings)
        return params["redirect_uri"], {"id_token": id_token, "state": params["state"]}

    def make_id_token(
        self,
        *,
        nonce: str,
        user: str = "2",
        roles: list[str] | None = None,
        resource_link_id: str = "rl-1",
        context_id: str = "course-1",
        title: str = "Essay 1",
        description: str = "Write an essay on a topic of your choice.",
        lineitem: bool = True,
        lineitems: bool = True,
        score_maximum: float = 10,
        message_type: str = "LtiResourceLinkRequest",
        iat_offset: int = 0,
        lifetime: int = 60,
        aud: str | list[str] | None = None,
        kid: str | None = None,
        sign_with_other_key: bool = False,
        deployment_id: str | None = None,
        target_link_uri: str | None = None,
        extra_claims: dict[str, Any] | None = None,
        drop_claims: tuple[str, ...] | list[str] = (),
    ) -> str:
        """An RS256 id_token with the claims Moodle sends; the user is enrolled with `roles`.

        With `lineitem` the activity is graded: its line item is made on the first such launch,
        with `score_maximum`; once deleted, launches carry no `lineitem`. Without, the activity
        has no grade item (the tool may create one through `lineitems`).
        `drop_claims` takes full claim names or the short names of LTI claims ("roles");
        `target_link_uri` defaults to the first redirect URI.
        """
        roles = list(STUDENT if roles is None else roles)
        with self._lock:
            person = self.gradebook.enrol(user, roles)
            ags = self._ags_claim(resource_link_id, title, score_maximum, lineitem, lineitems)
        iat = int(time.time()) + iat_offset
        claims: dict[str, Any] = {
            "nonce": nonce,
            "iat": iat,
            "exp": iat + lifetime,
            "iss": self.issuer,
            "aud": self.client_id if aud is None else aud,
            "azp": self.client_id,
            "sub": user,
            "given_name": person.given_name,
            "family_name": person.family_name,
            "name": person.name,
            "email": person.email,
            LTI_CLAIM + "deployment_id": deployment_id or self.deployment_id,
            LTI_CLAIM + "target_link_uri": target_link_uri or self._default_target(),
            LTI_CLAIM + "message_type": message_type,
            LTI_CLAIM + "version": "1.3.0",
            LTI_CLAIM + "roles": roles,
            LTI_CLAIM + "resource_link": {
                "id": resource_link_id,
                "title": title,
                "description": description,
            },
            LTI_CLAIM + "context": {
                "id": context_id,
                "label": "ESSAY101",
                "title": "Essays",
                "type": ["http://purl.imsglobal.org/vocab/lis/v2/course#CourseSection"],
            },
            LTI_CLAIM + "tool_platform": {
                "product_family_code": "moodle",
                "version": "2024100700",
                "guid": "127.0.0.1",
                "name": self.name,
                "description": "Evaluaitor fake Moodle",
            },
            LTI_CLAIM + "launch_presentation": {
                "locale": "en",
                "document_target": "iframe",
                "return_url": f"{self.url}/mod/lti/return.php?course={self.course_id}"
                "&launch_container=3&instanceid=1&sesskey=fakesesskey",
            },
            LTI_CLAIM + "ext": {"user_username": f"user{user}", "lms": "moodle-2"},
            NRPS_CLAIM: {
                "context_memberships_url": self.memberships_url,
                "service_versions": ["1.0", "2.0"],
            },
        }
        if ags:
            claims[AGS_CLAIM] = ags
        claims |= extra_claims or {}
        for name in drop_claims:
            full = name if name in claims else LTI_CLAIM + name
            if full not in claims:
                raise ValueError(f"no claim {name!r} to drop")
            del claims[full]
        signer = self._stranger() if sign_with_other_key else self._keys[0]
        return signer.sign(claims, kid=kid or self._keys[0].kid)

    def _ags_claim(
        self, link_id: str, title: str, score_maximum: float, lineitem: bool, lineitems: bool
    ) -> dict[str, Any] | None:
        claim: dict[str, Any] = {"scope": list(AGS_SCOPES)}
        if lineitems:
            claim["lineitems"] = self.lineitems_url
        item = self.gradebook.launch_link(
            link_id, graded=lineitem, label=title, score_maximum=score_maximum
        )
        if item is not None:
            claim["lineitem"] = self.lineitem_url(item.n)
        return claim if len(claim) > 1 else None

    def _default_target(self) -> str:
        return self.tool_redirect_uris[0] if self.tool_redirect_uris else self.url + "/tool"

    def _stranger(self) -> SigningKey:
        """A key the platform never published, for signature-failure tests."""
        if self._stranger_key is None:
            self._stranger_key = SigningKey.generate()
        return self._stranger_key

    # --- HTTP ------------------------------------------------------------------------------

    def _wsgi(self, environ: dict[str, Any], start_response: Any) -> Any:
        request = Request(environ)
        entry: dict[str, Any] = {
            "method": request.method,
            "path": request.full_path.rstrip("?"),
            "kind": None,
            "status": 0,  # stays 0 if the connection is dropped
        }
        self.request_log.append(entry)
        try:
            entry["kind"], args = _ROUTES.bind_to_environ(environ).match()
        except HTTPException as exc:
            entry["status"] = exc.code
            return exc(environ, start_response)
        response = self._respond(entry["kind"], request, args, environ)
        entry["status"] = response.status_code
        return response(environ, start_response)

    def _respond(
        self, kind: str, request: Request, args: dict[str, Any], environ: dict[str, Any]
    ) -> Response:
        fault = self._faults.take(kind)
        if fault is not None:
            self._stopping.wait(fault.delay)
            if fault.status is not None:
                return fault_response(kind, fault, environ)
        self._stopping.wait(self._faults.delay(kind))
        if kind == "auth":
            return self._serve_auth(request)
        if kind == "token":
            return self.tokens.handle(
                request, audience=self.auth_token_url, jwks_url=self.tool_jwks_url
            )
        if kind == "jwks":
            return Response(json.dumps(jwks(*self._keys)), content_type="application/json")
        if kind in ("openid_configuration", "registration"):
            return self.registration.handle(kind, request)
        if kind == "deep_linking":
            return self.deep_linking.handle(request)
        if kind == "notice_handlers":
            with self._lock:
                return self.processors.handle(request, args["deployment_id"])
        if kind in ("asset", "report"):
            return self.asset_processor.handle(kind, request, args)
        if kind == "file":
            return self.asset_processor.serve_file(args["asset_id"])
        if kind == "return":
            return Response("Back in the course.", content_type="text/plain")
        with self._lock:
            return self._services.handle(kind, request, args)

    def _serve_auth(self, request: Request) -> Response:
        """GET or POST, as Moodle reads its parameters from either."""
        try:
            action, fields = self.authorize(request.values.to_dict())
        except InvalidRequest:  # Moodle's own error page, as a second login with a hint gets
            return Response(invalid_request_page(), status=404, content_type="text/html")
        except AuthorizationError as exc:
            return Response(str(exc), status=400, content_type="text/plain")
        return Response(auto_submit_form(action, fields), content_type="text/html")
