"""The practice platform: a small LTI 1.3 Advantage platform for trying Evaluaitor without an LMS.

It is a separate Flask app on its own port and host name (``localhost`` while the tool is on
``127.0.0.1``), so the tool runs in a genuinely cross-site iframe, as inside a real LMS. It
registers itself with the tool (:func:`register`), launches through the real OIDC flow,
offers platform storage (the LTI client-side postMessages) to the tool's frame, and answers
the services the tool calls back: JWKS, OAuth2 client credentials, AGS, NRPS and the deep
linking return. Its native assignment (:mod:`app.practice.assignment`) shows the LTI Asset
Processor: the platform collects the essays and the tool attached to it reports on them.
Off by default (``EVALUAITOR_PRACTICE``): production never exposes it.
"""

from __future__ import annotations

import secrets
import threading
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from flask import Flask, jsonify, render_template, request
from sqlalchemy import select
from werkzeug.exceptions import HTTPException
from werkzeug.serving import BaseWSGIServer, make_server

from app import i18n, tenants
from app.extensions import BoundedJSONProvider, db
from app.lti import keys
from app.models import Deployment, Platform
from app.practice import assignment_views, exercise, processor_services, services, views
from app.practice.assignment import AssignmentState
from app.practice.errors import PracticeError
from app.practice.messages import ToolKeys
from app.practice.names import CLIENT_ID, DEPLOYMENT_ID
from app.practice.state import PracticeState


@dataclass(frozen=True)
class PracticeSettings:
    """Where the platform and the tool live, and where the platform keeps its files."""

    base_url: str  # e.g. http://localhost:5001 (also the issuer)
    tool_url: str  # e.g. http://127.0.0.1:5000
    data_dir: Path

    @property
    def issuer(self) -> str:
        return self.base_url

    @property
    def tool_origin(self) -> str:
        parts = urlsplit(self.tool_url)
        return f"{parts.scheme}://{parts.netloc}"

    @property
    def tool_login_url(self) -> str:
        return self.tool_url + "/lti/login"

    @property
    def tool_launch_url(self) -> str:
        return self.tool_url + "/lti/launch"

    @property
    def tool_jwks_url(self) -> str:
        return self.tool_url + "/lti/jwks"

    @property
    def key_dir(self) -> Path:
        return self.data_dir / "keys"


def create_practice_app(settings: PracticeSettings) -> Flask:
    """The practice platform's own Flask app (its own origin, its own keys and secret)."""
    app = Flask(__name__)
    app.json = BoundedJSONProvider(app)
    app.config["PRACTICE"] = settings
    app.config["SECRET_KEY"] = _secret(settings.data_dir)
    # The tool's catalogues (app/translations) and language choice serve these pages too.
    app.config["BABEL_TRANSLATION_DIRECTORIES"] = str(Path(app.root_path).parent / "translations")
    i18n.init_app(app)
    app.extensions["practice_state"] = PracticeState(settings.data_dir / "state.json")
    app.extensions["practice_tokens"] = services.Tokens()
    app.extensions["practice_tool_keys"] = ToolKeys()
    app.extensions["practice_assignment"] = AssignmentState(
        settings.data_dir / "assignment.json", settings.data_dir / "submitted"
    )
    keys.active_key(settings.key_dir)  # create the platform's key pair now, not mid-launch
    app.register_blueprint(views.bp)
    app.register_blueprint(services.bp)
    app.register_blueprint(processor_services.bp)
    app.register_blueprint(assignment_views.bp)
    app.register_error_handler(PracticeError, _practice_error)
    app.register_error_handler(HTTPException, _http_error)

    @app.after_request
    def security_headers(response):
        response.headers.setdefault(
            "Content-Security-Policy",
            f"default-src 'self'; frame-src 'self' {settings.tool_origin}; "
            "object-src 'none'; base-uri 'none'",
        )
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        return response

    return app


def register(settings: PracticeSettings) -> Platform:
    """Register the practice platform with the tool (call inside the tool's app context).

    Idempotent: the URLs are refreshed (the port may change between runs) and the platform
    gets its own organization, like any LMS registration. The programming exercise's activity
    is set up once (:mod:`app.practice.exercise`).
    """
    platform = db.session.scalar(
        select(Platform).where(Platform.issuer == settings.issuer, Platform.client_id == CLIENT_ID)
    )
    if platform is None:
        platform = Platform(issuer=settings.issuer, client_id=CLIENT_ID)
        db.session.add(platform)
    platform.name = "Practice platform"
    platform.auth_login_url = settings.base_url + "/auth"
    platform.auth_token_url = settings.base_url + "/token"
    platform.key_set_url = settings.base_url + "/jwks"
    platform.is_active = True
    tenants.attach_platform(platform)
    deployment = next((d for d in platform.deployments if d.deployment_id == DEPLOYMENT_ID), None)
    if deployment is None:
        deployment = Deployment(deployment_id=DEPLOYMENT_ID)
        platform.deployments.append(deployment)
    db.session.commit()
    exercise.ensure_activity(platform, deployment)
    return platform


def settings_for(tool_app: Flask, tool_url: str, port: int | None = None) -> PracticeSettings:
    """Settings beside a tool app: files in its instance folder, served on ``localhost``
    (a different site from the tool on 127.0.0.1, so the tool's frame is third-party)."""
    port = port or tool_app.config["EVALUAITOR_PRACTICE_PORT"]
    return PracticeSettings(
        base_url=f"http://localhost:{port}",
        tool_url=tool_url.rstrip("/"),
        data_dir=Path(tool_app.instance_path) / "practice",
    )


def serve_in_background(settings: PracticeSettings) -> BaseWSGIServer:
    """Serve the practice platform from a daemon thread on 127.0.0.1; ``shutdown()`` stops it."""
    port = urlsplit(settings.base_url).port or 80
    server = make_server("127.0.0.1", port, create_practice_app(settings), threaded=True)
    threading.Thread(target=server.serve_forever, name="practice", daemon=True).start()
    return server


def _secret(data_dir: Path) -> str:
    """The platform's own signing secret for login hints, kept beside its keys."""
    path = data_dir / "secret_key"
    if not path.exists():
        data_dir.mkdir(parents=True, exist_ok=True)
        path.write_text(secrets.token_hex(32))
        path.chmod(0o600)
    return path.read_text().strip()


def _practice_error(error: PracticeError):
    if error.is_api:
        return jsonify(error=error.code, message=error.message), error.status
    return render_template("practice/error.html", message=error.message), error.status


def _http_error(error: HTTPException):
    if request.path.startswith(("/ags/", "/nrps/", "/token", "/pns/", "/ap/")):
        return jsonify(error=error.name, message=error.description), error.code
    return render_template("practice/error.html", message=error.description), error.code
