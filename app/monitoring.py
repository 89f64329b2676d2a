"""What a load balancer, Kubernetes and Prometheus ask the web app: ``/healthz``, ``/readyz``
and ``/metrics``.

``/healthz`` (liveness) answers 200 while the process serves requests, and asks nothing else: a
database outage must not get every web process restarted. ``/readyz`` (readiness) checks what
grading needs: the database, Redis, and a worker whose heartbeat is recent; 503 if one fails.
Both are open to anyone and say only ``ok`` or ``failing`` per check, never an address or an
error text.

``/metrics`` is off unless EVALUAITOR_METRICS_TOKEN is set, and then wants it as a bearer
token (docs/decisions.md says why a token rather than an address list or a port). It adds up
the counters every process wrote (app.metrics) and reads, at the moment of the scrape, what the
database and Redis hold: queue depths, jobs by status, this month's spend per organization.
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import Iterator
from contextlib import suppress
from datetime import UTC, datetime, timedelta

from flask import Blueprint, Flask, Response, current_app, jsonify, request
from prometheus_client import REGISTRY, CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.multiprocess import MultiProcessCollector
from redis.exceptions import RedisError
from rq import Worker
from sqlalchemy import func, select, text
from sqlalchemy.exc import SQLAlchemyError

from app import metrics, ratelimit, spend
from app.extensions import db, redis_connection
from app.jobs import queue
from app.models import GradingJob
from app.models.jobs import ModelUsage

log = logging.getLogger(__name__)
bp = Blueprint("monitoring", __name__)
#: The lockout scope of wrong /metrics tokens (app.ratelimit).
SCRAPE = "metrics-token"


def init_app(app: Flask) -> None:
    app.register_blueprint(bp)


# -- probes -------------------------------------------------------------------------------


@bp.get("/healthz")
def healthz():
    return jsonify(status="ok")


@bp.get("/readyz")
def readyz():
    checks = {
        "database": _database_answers(),
        "redis": _redis_answers(),
        "worker": _worker_heartbeat_is_recent(),
    }
    ready = all(checks.values())
    body = {
        "status": "ok" if ready else "failing",
        "checks": {name: "ok" if passed else "failing" for name, passed in checks.items()},
    }
    return jsonify(body), 200 if ready else 503


def _database_answers() -> bool:
    try:
        db.session.execute(text("SELECT 1"))
    except SQLAlchemyError as exc:
        log.warning("readiness: the database does not answer: %s", type(exc).__name__)
        db.session.rollback()
        return False
    return True


def _redis_answers() -> bool:
    try:
        return bool(redis_connection().ping())
    except RedisError as exc:
        log.warning("readiness: Redis does not answer: %s", type(exc).__name__)
        return False


def _worker_heartbeat_is_recent() -> bool:
    """A worker of this installation's queues gave a sign of life within
    EVALUAITOR_READY_HEARTBEAT_AGE seconds (RQ's heartbeat: idle workers send one every
    405 s by default, busy ones every 30 s or so)."""
    grading = queue.queue(queue.GRADING).name
    newest = datetime.now(UTC) - timedelta(
        seconds=current_app.config["EVALUAITOR_READY_HEARTBEAT_AGE"]
    )
    try:
        workers = Worker.all(connection=redis_connection())
    except RedisError:
        return False
    return any(
        grading in worker.queue_names()
        and worker.last_heartbeat is not None
        and worker.last_heartbeat.replace(tzinfo=UTC) >= newest
        for worker in workers
    )


# -- metrics ------------------------------------------------------------------------------


@bp.get("/metrics")
def scrape():
    token = current_app.config["EVALUAITOR_METRICS_TOKEN"]
    if not token:
        return Response("Not found\n", 404, mimetype="text/plain")
    _refuse_locked_out()
    offered = request.headers.get("Authorization", "")
    if not hmac.compare_digest(offered.encode(), f"Bearer {token}".encode()):
        _count_failure()
        return Response(
            "A bearer token is needed (EVALUAITOR_METRICS_TOKEN).\n",
            401,
            {"WWW-Authenticate": 'Bearer realm="metrics"'},
            mimetype="text/plain",
        )
    return Response(exposition(), mimetype=CONTENT_TYPE_LATEST)


def _refuse_locked_out() -> None:
    """The sign-in lockout (app.ratelimit), failing open without Redis: the token is still
    required, and a scrape must still say that Redis is down."""
    with suppress(RedisError):
        ratelimit.refuse_if_locked_out(redis_connection(), SCRAPE)


def _count_failure() -> None:
    with suppress(RedisError):
        ratelimit.count_failure(redis_connection(), SCRAPE)


def exposition() -> bytes:
    """Every process's counters (from the multiprocess directory when there is one, else this
    process's) and the state read now."""
    path = metrics.directory(current_app.config["PROMETHEUS_MULTIPROC_DIR"])
    registry = CollectorRegistry()
    registry.register(StateCollector())
    if path is None:
        return generate_latest(REGISTRY) + generate_latest(registry)
    with metrics.reading(path) as files:
        registry.register(_Files(files))
        return generate_latest(registry)


class _Files:
    """Prometheus's multiprocess collector, over files listed under app.metrics's lock."""

    def __init__(self, files: list[str]) -> None:
        self.files = files

    def collect(self) -> Iterator[Metric]:
        return iter(MultiProcessCollector.merge(self.files, accumulate=True))


class StateCollector:
    """What the database and Redis hold now. A source that fails leaves its metrics out and
    says so in ``evaluaitor_scrape_source_up``: the counters are still worth reading."""

    def collect(self) -> Iterator[Metric]:
        up = GaugeMetricFamily(
            "evaluaitor_scrape_source_up",
            "Whether the scrape could read a source (database, redis).",
            labels=["source"],
        )
        try:
            found = list(_from_redis())
        except RedisError:
            found = []
        up.add_metric(["redis"], 1 if found else 0)
        try:
            found += _from_database()
            up.add_metric(["database"], 1)
        except SQLAlchemyError:
            db.session.rollback()
            up.add_metric(["database"], 0)
        yield from found
        yield up


def _from_redis() -> Iterator[Metric]:
    depth = GaugeMetricFamily(
        "evaluaitor_queue_depth", "Jobs waiting in each RQ queue.", labels=["queue"]
    )
    for name in (queue.GRADING, queue.PASSBACK):
        depth.add_metric([name], queue.queue(name).count)
    yield depth


def _from_database() -> list[Metric]:
    jobs = GaugeMetricFamily(
        "evaluaitor_grading_jobs", "Grading jobs by status.", labels=["status"]
    )
    for status, count in db.session.execute(
        select(GradingJob.status, func.count()).group_by(GradingJob.status)
    ):
        jobs.add_metric([str(status)], count)
    return [jobs, *_month_spend(), *_budgets()]


def _month_spend() -> list[Metric]:
    """This month's (UTC) model spend per organization, from the ledger (app.spend), whose
    rows name the organization of LMS gradings too (its platform's). Organizations are named
    by their number (``evaluaitor org list`` maps them), not their name; ``none``: no
    organization."""
    organization = ModelUsage.organization_id  # every row names it (app.spend.record_run)
    rows = db.session.execute(
        select(organization, func.sum(ModelUsage.calls), func.sum(ModelUsage.cost))
        .where(ModelUsage.created_at >= spend.month_start())
        .group_by(organization)
    ).all()
    calls = GaugeMetricFamily(
        "evaluaitor_month_model_calls",
        "Model calls this month (UTC) per organization.",
        labels=["organization"],
    )
    cost = GaugeMetricFamily(
        "evaluaitor_month_model_cost",
        "Model spend this month (UTC) per organization, priced calls only.",
        labels=["organization"],
    )
    for org, n, spent in rows:
        label = "none" if org is None else str(org)
        calls.add_metric([label], n or 0)
        cost.add_metric([label], spent or 0.0)
    return [calls, cost]


def _budgets() -> list[Metric]:
    """Every monthly spend limit (app.spend.budget_use): the limit, what is used (the ledger
    and what running gradings reserved) and how many gradings wait for it, per scope
    (``organization`` or ``activity``) and number. Only limited scopes appear, so the series
    stay few."""
    labels = ["scope", "id", "unit"]
    limit = GaugeMetricFamily("evaluaitor_budget_limit", "Monthly spend limit.", labels=labels)
    used = GaugeMetricFamily(
        "evaluaitor_budget_used", "Spent or reserved this month (UTC) against it.", labels=labels
    )
    waiting = GaugeMetricFamily(
        "evaluaitor_budget_waiting", "Gradings waiting for budget.", labels=["scope", "id"]
    )
    for scope in spend.budget_use():
        key = [scope["scope"], str(scope["id"])]
        for unit, cap, spent in (
            ("tokens", scope["token_limit"], scope["tokens_used"]),
            ("cost", scope["cost_limit"], scope["cost_used"]),
        ):
            if cap is not None:
                limit.add_metric([*key, unit], cap)
                used.add_metric([*key, unit], spent)
        waiting.add_metric(key, scope["waiting"])
    return [limit, used, waiting]
