"""Evaluaitor: an LTI 1.3 Advantage tool for AI-assisted grading."""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Any

from flask import Flask, jsonify
from werkzeug.middleware.proxy_fix import ProxyFix

from app import admin, api, errors, i18n, logs, monitoring, redaction
from app import config as settings
from app.extensions import BoundedJSONProvider, db, init_db, init_redis, migrate
from app.text import clean_name, clean_text, reveal_hidden
from app.uploads import UploadRequest

__version__ = "0.1.0"


def create_app(test_config: dict[str, Any] | None = None) -> Flask:
    """The only place that wires the application: config, extensions, blueprints, plugins."""
    from app.api.version import API_VERSION

    app = Flask(__name__, instance_path=os.environ.get("EVALUAITOR_INSTANCE_DIR"))
    app.request_class = UploadRequest
    app.json = BoundedJSONProvider(app)
    Path(app.instance_path).mkdir(parents=True, exist_ok=True)
    app.config.from_mapping(settings.load(app.instance_path))
    if test_config:
        app.config.from_mapping(test_config)
    app.config["SQLALCHEMY_DATABASE_URI"] = app.config["DATABASE_URL"]
    app.config["SECRET_KEY"] = app.config["SECRET_KEY"] or _instance_secret(app.instance_path)
    app.config["REDIS_URL"] = app.config["REDIS_URL"] or "redis://127.0.0.1:6379/0"
    logs.init_app(app)
    redaction.init_app()

    proxies = app.config["EVALUAITOR_TRUSTED_PROXIES"]
    if proxies:
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=proxies, x_proto=proxies, x_host=proxies)
    init_db(app)
    migrations = Path(__file__).parent.parent / "migrations"
    migrate.init_app(app, db, directory=str(migrations), render_as_batch=True, compare_type=True)
    init_redis(app)
    errors.init_app(app)
    i18n.init_app(app)
    # Names and texts others chose (files, people, titles, tenants, instructions, comments)
    # are shown through these filters.
    app.jinja_env.filters["clean_name"] = clean_name
    app.jinja_env.filters["clean_text"] = clean_text
    app.jinja_env.filters["reveal_hidden"] = reveal_hidden

    from app.lti.views import bp as lti_bp
    from app.web.setup import bp as setup_bp
    from app.web.views import bp as web_bp

    app.register_blueprint(lti_bp)
    app.register_blueprint(web_bp)
    app.register_blueprint(setup_bp)
    api.init_app(app)
    admin.init_app(app)
    monitoring.init_app(app)
    _wire_evaluation_core()

    @app.get("/health")
    def health():
        return jsonify(
            status="ok", service="evaluaitor", version=__version__, api_version=API_VERSION
        )

    @app.after_request
    def security_headers(response):
        # Pages are meant to be framed by the LMS, so no X-Frame-Options; the rest is locked down.
        response.headers.setdefault(
            "Content-Security-Policy",
            "default-src 'self'; object-src 'none'; base-uri 'none'; img-src 'self' data:",
        )
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        response.headers.setdefault("Referrer-Policy", "same-origin")
        return response

    return app


def _wire_evaluation_core() -> None:
    """The LMS and the API sides register what they add to the evaluation core, which never
    imports them (see docs/architecture.md)."""
    from app.api.callbacks import CallbackSender
    from app.api.evaluations import ApiSide
    from app.evaluation import owners
    from app.lms.submissions import LmsSide
    from app.lti.asset_reports import ReportSender
    from app.lti.lineitem_sync import ColumnSender
    from app.lti.passback import ScoreSender
    from app.models import Callback, LineItemUpdate, ScorePush
    from app.models.assets import AssetReport

    owners.register_owner("submission", LmsSide())
    owners.register_owner("evaluation", ApiSide())
    owners.register_sender(ScorePush, ScoreSender(), "EVALUAITOR_PASSBACK_RETRY_INTERVALS")
    owners.register_sender(LineItemUpdate, ColumnSender(), "EVALUAITOR_PASSBACK_RETRY_INTERVALS")
    owners.register_sender(Callback, CallbackSender(), "EVALUAITOR_CALLBACK_RETRY_INTERVALS")
    owners.register_sender(AssetReport, ReportSender(), "EVALUAITOR_REPORT_RETRY_INTERVALS")


def _instance_secret(instance_path: str) -> str:
    """A random secret kept in the instance folder, so sessions survive restarts."""
    path = Path(instance_path) / "secret_key"
    if not path.exists():
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        except FileExistsError:
            return path.read_text().strip()
        with os.fdopen(fd, "w") as handle:
            handle.write(secrets.token_hex(32))
    return path.read_text().strip()
