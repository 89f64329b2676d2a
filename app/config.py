"""Settings, read from the environment in one place.

Order of precedence: the defaults below, then environment variables, then the
``test_config`` mapping handed to :func:`app.create_app`. Services receive the
values they need as arguments; only this module reads ``os.environ``.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

from app import outbound
from app.llm import endpoints

#: Environment variables that are read as-is (strings), with their defaults.
_STRING_SETTINGS: dict[str, str | None] = {
    "SECRET_KEY": None,
    "DATABASE_URL": None,
    "REDIS_URL": None,
    "EVALUAITOR_DATA_DIR": None,
    "EVALUAITOR_KEY_DIR": None,
    "EVALUAITOR_LLM_CACHE_DIR": None,
    "EVALUAITOR_LLM_BASE_URL": None,
    "EVALUAITOR_LLM_API_KEY": None,
    "EVALUAITOR_LLM_MODEL": "gpt-4o-mini",
    # Ports of 127.0.0.1 where `evaluaitor run`, with no EVALUAITOR_LLM_BASE_URL, looks for an
    # OpenAI-compatible server (comma-separated; "off": none). Unset: Ollama's, LM Studio's,
    # vLLM's and llama.cpp's defaults (app/llm/discovery.py).
    "EVALUAITOR_LLM_PROBE_PORTS": None,
    # Base URLs of the model servers that may receive students' work, comma-separated; unset:
    # any. An organization's own list (organization.model_base_urls) can only narrow it; a
    # call to another server is refused before anything is sent (app/llm/endpoints.py).
    "EVALUAITOR_LLM_ALLOWED_BASE_URLS": None,
    "EVALUAITOR_QUEUE_PREFIX": "evaluaitor",
    # Bearer token for the REST API's admin endpoints (organizations, database status);
    # unset, those endpoints refuse every request.
    "EVALUAITOR_ADMIN_TOKEN": None,
    # Private hosts and networks that URLs others chose (an LMS's keys and services, Dynamic
    # Registration, callbacks) may reach, comma-separated: host names
    # (``moodle.school.lan``, at any private address but loopback and link-local) and
    # networks or addresses (``10.2.0.0/16``, ``127.0.0.1``). Unset: public addresses only
    # (with EVALUAITOR_PRACTICE on, loopback too: the practice platform lives on localhost).
    "EVALUAITOR_ALLOWED_PRIVATE_HOSTS": None,
    # "on": every grading with a model also asks it, in one small extra call, whether the work
    # tries to instruct or steer the grader; a yes holds the grade for review, never changes
    # the score (app.grading.cross_check). Off by default: it adds a call to every grading, a weak
    # model is no judge of it, and a yes on an essay that only discusses instructions holds its
    # grade for nothing.
    "EVALUAITOR_STEERING_CHECK": "off",
    # Bearer token that /metrics (Prometheus's format) wants; unset, /metrics answers 404.
    "EVALUAITOR_METRICS_TOKEN": None,
    # host:port where `evaluaitor worker` serves its own /metrics (the same token), for a
    # worker whose counters the web's /metrics cannot read (another container or machine).
    # Unset: none.
    "EVALUAITOR_WORKER_METRICS_ADDRESS": None,
    # Prometheus's multiprocess directory, where every process (gunicorn's, the worker's, its
    # work horses') writes its counters for /metrics to add up; read by the client library
    # itself too. `evaluaitor run` and the image's gunicorn set one and empty it at start.
    "PROMETHEUS_MULTIPROC_DIR": None,
    # "text" (the default) or "json": one JSON object per log line, with the request's id
    # (X-Request-ID) or the RQ job's id (app.logs).
    "EVALUAITOR_LOG_FORMAT": "text",
}

#: Numeric settings with their defaults (type taken from the default).
_NUMERIC_SETTINGS: dict[str, int | float] = {
    "EVALUAITOR_MAX_UPLOAD_MB": 20,
    "EVALUAITOR_DEFAULT_MAX_SCORE": 10.0,
    "EVALUAITOR_LLM_TIMEOUT": 120.0,
    "EVALUAITOR_LLM_MAX_RETRIES": 4,
    "EVALUAITOR_LLM_BACKOFF_BASE": 1.0,
    "EVALUAITOR_LLM_CONCURRENCY": 10,
    # Tokens a model reply may run to. 0: each call's own cap, sized to its answer (a verdict,
    # a rubric's feedback); a number replaces them all (a reasoning model thinks before it
    # answers and needs more). An activity's own "longest reply" setting wins over both.
    "EVALUAITOR_LLM_MAX_TOKENS": 0,
    # Calls in flight to the model server at once, counted across all workers (app.llm.slots);
    # a call waits for a free slot up to EVALUAITOR_LLM_SLOT_WAIT seconds, then the grading
    # waits and is tried again later. 0: 1 for a server on this machine or a private network
    # (llama.cpp and Ollama compute one reply at a time), 8 for a hosted service.
    "EVALUAITOR_LLM_MAX_IN_FLIGHT": 0,
    "EVALUAITOR_LLM_SLOT_WAIT": 300.0,
    # Seconds between two looks for a model server on this machine, while `evaluaitor run`
    # has none (see EVALUAITOR_LLM_PROBE_PORTS).
    "EVALUAITOR_LLM_PROBE_EVERY": 30.0,
    # Bounds of the model-reply cache (EVALUAITOR_LLM_CACHE_DIR), whose replies quote students'
    # work: its size in MB (the oldest replies go first) and the days a reply is kept; 0 = none.
    "EVALUAITOR_LLM_CACHE_MAX_MB": 200,
    "EVALUAITOR_LLM_CACHE_MAX_DAYS": 30,
    # Retention (app.privacy), applied by the workers' sweeper at most once every
    # EVALUAITOR_RETENTION_EVERY seconds; 0 keeps for ever. Submissions (with their files,
    # grades, appeals and cached replies) go this many days after the last activity in their
    # course (an upload, a grading, a teacher's change); API evaluations this many days after
    # their last change. Work in progress is never removed.
    "EVALUAITOR_RETAIN_SUBMISSIONS_DAYS": 0,
    # The prompts sent and the model's raw replies of a finished grading, and cached replies,
    # go this many days after it finished (the score and feedback stay).
    "EVALUAITOR_RETAIN_PROMPTS_DAYS": 0,
    "EVALUAITOR_RETENTION_EVERY": 3600.0,
    # 1: mask e-mails, phone numbers, student ids and the student's name before any model
    # sees the text (prose only; source code is sent as written).
    "EVALUAITOR_MASK_PII": 1,
    # A work flagged for steering the grader is graded again without the flagged passages;
    # when the two grades differ by more than this share of the scale (0..1), the grade
    # without them is proposed and the reason gives both (app.grading.cross_check).
    "EVALUAITOR_ABLATION_THRESHOLD": 0.1,
    "EVALUAITOR_LAUNCH_TTL": 8 * 3600,
    "EVALUAITOR_CLOCK_SKEW": 60,
    "EVALUAITOR_AGS_TIMEOUT": 20.0,
    "EVALUAITOR_COMMENT_MAX_CHARS": 3000,
    # The sweeper (in each worker) runs every EVALUAITOR_SWEEP_EVERY seconds: it queues work
    # that is due (retries) and work Redis lost or a worker dropped, once it is
    # EVALUAITOR_REQUEUE_AFTER seconds old (app.evaluation.sweeper).
    "EVALUAITOR_SWEEP_EVERY": 5.0,
    # A grading job may run this long (several model calls with retries) before RQ stops it.
    "EVALUAITOR_GRADING_TIMEOUT": 900,
    "EVALUAITOR_REQUEUE_AFTER": 30,
    # An LMS's submission notice (LTI Asset Processor): its assets are downloaded in this
    # many seconds at most, each request with the EVALUAITOR_AGS_TIMEOUT deadline.
    "EVALUAITOR_NOTICE_TIMEOUT": 600,
    # Seconds `evaluaitor run`, asked to stop (SIGTERM, Ctrl+C), lets the worker finish the job
    # it is running; a job still running then is cut off and handed back to the queue.
    "EVALUAITOR_SHUTDOWN_GRACE": 30.0,
    # How many reverse proxies (TLS terminators) to trust for X-Forwarded-* headers. Behind
    # one, set 1: launches must know they arrived over HTTPS to set iframe-proof cookies.
    "EVALUAITOR_TRUSTED_PROXIES": 0,
    # 1: `evaluaitor run` also starts the practice platform (a small LMS for trying the tool,
    # app/practice/) on this port of localhost. Off by default: production never exposes it.
    "EVALUAITOR_PRACTICE": 0,
    "EVALUAITOR_PRACTICE_PORT": 5001,
    # The teacher page's course roster (NRPS): seconds per request, members asked per page,
    # and seconds the roster is cached in Redis.
    "EVALUAITOR_NRPS_TIMEOUT": 5.0,
    "EVALUAITOR_NRPS_PAGE_SIZE": 100,
    "EVALUAITOR_ROSTER_CACHE_SECONDS": 300,
    # Prices per 1,000 input (prompt) and output (completion) tokens, in your currency, of every
    # model not priced in EVALUAITOR_LLM_PRICES (app.spend); both 0: no price, tokens only.
    "EVALUAITOR_LLM_PRICE_INPUT_PER_1K": 0.0,
    "EVALUAITOR_LLM_PRICE_OUTPUT_PER_1K": 0.0,
    # 1: platforms added by LTI Dynamic Registration may launch at once; 0: they wait,
    # switched off, until an admin activates them on /admin.
    "EVALUAITOR_REGISTRATION_AUTO_ACTIVATE": 0,
    # Hours an /admin sign-in lasts.
    "EVALUAITOR_ADMIN_SESSION_HOURS": 8,
    # Failed sign-ins (the /admin token, REST API bearer tokens) per client address and window
    # (seconds, from the first failure); past them the address is refused, the right token
    # included, until the window ends.
    "EVALUAITOR_SIGN_IN_MAX_FAILURES": 5,
    "EVALUAITOR_SIGN_IN_FAILURE_WINDOW": 900,
    # REST API callbacks: seconds per delivery attempt.
    "EVALUAITOR_CALLBACK_TIMEOUT": 10.0,
    # Discouraged (use EVALUAITOR_ALLOWED_PRIVATE_HOSTS): 1 lets requests to URLs that others
    # chose go to every private, loopback, link-local and other non-public address, so an API
    # client's callback or an LMS's endpoint could reach any internal service. For a lab or
    # tests on one machine. Read from EVALUAITOR_CALLBACK_ALLOW_PRIVATE too (its old name).
    "EVALUAITOR_ALLOW_PRIVATE_URLS": 0,
    # Hours an admin's Dynamic Registration link (/admin, `evaluaitor registration-link`)
    # stays usable; it is used up by the registration it starts.
    "EVALUAITOR_REGISTRATION_LINK_HOURS": 24,
    # Seconds a launch waits for the platform's public keys (the whole request).
    "EVALUAITOR_JWKS_TIMEOUT": 5.0,
    # /lti/register calls per client address and window (seconds): it makes us call the URL
    # it is given, so one address may not use it as a scanner.
    "EVALUAITOR_REGISTER_RATE_LIMIT": 10,
    "EVALUAITOR_REGISTER_RATE_WINDOW": 600,
    # /readyz fails unless a worker's heartbeat is this recent (seconds). RQ's idle workers
    # send one every 405 s, and their record expires after 480 s.
    "EVALUAITOR_READY_HEARTBEAT_AGE": 480,
}

#: What the practice platform (on localhost) needs to reach: loopback, and nothing else.
PRACTICE_NETWORKS = ("127.0.0.0/8", "::1")

#: Former names of settings (deprecated), still read when the current name is not set.
_FORMER_NAMES = {"EVALUAITOR_ALLOW_PRIVATE_URLS": ("EVALUAITOR_CALLBACK_ALLOW_PRIVATE",)}

#: Delays in seconds (comma-separated in the environment); one retry per delay, then the work
#: is recorded as failed for a person to see.
_LIST_SETTINGS: dict[str, list[float]] = {
    # Between attempts of a score push or a gradebook column update.
    "EVALUAITOR_PASSBACK_RETRY_INTERVALS": [5, 30, 120, 600, 1800],
    # Between attempts of an asset report (LTI Asset Processor) to the LMS.
    "EVALUAITOR_REPORT_RETRY_INTERVALS": [5, 30, 120, 600, 1800],
    # Between attempts of an API callback.
    "EVALUAITOR_CALLBACK_RETRY_INTERVALS": [10, 60, 300, 1800],
    # Before grading again after the grading service failed for a moment (429, 5xx, timeout,
    # refused connection): from a minute to hours, about 7 h in all.
    "EVALUAITOR_LLM_RETRY_SCHEDULE": [60, 120, 300, 600, 1200, 1800, *[3600] * 6],
}


def load(instance_path: str) -> dict[str, Any]:
    """Build the configuration mapping from the defaults and the environment."""
    env = os.environ
    config: dict[str, Any] = {
        key: env.get(key, default) or default for key, default in _STRING_SETTINGS.items()
    }
    for key, default in _NUMERIC_SETTINGS.items():
        names = (key, *_FORMER_NAMES.get(key, ()))
        raw = next((env[name] for name in names if env.get(name) not in (None, "")), None)
        config[key] = default if raw is None else type(default)(raw)
    if config["EVALUAITOR_PRACTICE"]:  # the practice platform lives on localhost
        allowed = config["EVALUAITOR_ALLOWED_PRIVATE_HOSTS"]
        config["EVALUAITOR_ALLOWED_PRIVATE_HOSTS"] = ",".join(
            filter(None, [allowed, *PRACTICE_NETWORKS])
        )
    try:
        outbound.private_access(config)
    except ValueError as exc:
        raise ValueError(f"EVALUAITOR_ALLOWED_PRIVATE_HOSTS: {exc}") from exc

    instance = Path(instance_path)
    config["DATABASE_URL"] = config["DATABASE_URL"] or f"sqlite:///{instance / 'evaluaitor.db'}"
    config["EVALUAITOR_DATA_DIR"] = config["EVALUAITOR_DATA_DIR"] or str(instance / "data")
    config["EVALUAITOR_KEY_DIR"] = config["EVALUAITOR_KEY_DIR"] or str(instance / "keys")
    config["EVALUAITOR_LLM_CACHE_DIR"] = config["EVALUAITOR_LLM_CACHE_DIR"] or str(
        instance / "llm-cache"
    )
    config["SQLALCHEMY_DATABASE_URI"] = config["DATABASE_URL"]
    config["MAX_CONTENT_LENGTH"] = _request_limit(config["EVALUAITOR_MAX_UPLOAD_MB"])
    for key, default in _LIST_SETTINGS.items():
        config[key] = _seconds(key, env[key]) if env.get(key) else list(default)
    config["EVALUAITOR_LLM_PRICES"] = _prices(env.get("EVALUAITOR_LLM_PRICES") or "{}")
    _check_steering(config)
    try:
        endpoints.parse(config["EVALUAITOR_LLM_ALLOWED_BASE_URLS"])
    except ValueError as exc:
        raise ValueError(f"EVALUAITOR_LLM_ALLOWED_BASE_URLS: {exc}") from exc
    if config["EVALUAITOR_LOG_FORMAT"] not in ("text", "json"):
        raise ValueError("EVALUAITOR_LOG_FORMAT must be text or json")
    return config


def _check_steering(config: dict[str, Any]) -> None:
    """The steering settings' values, checked at start: a mistake names the setting."""
    if not 0 <= config["EVALUAITOR_ABLATION_THRESHOLD"] <= 1:
        raise ValueError("EVALUAITOR_ABLATION_THRESHOLD must be a share of the scale, 0 to 1")
    check = str(config["EVALUAITOR_STEERING_CHECK"]).strip().lower()
    if check not in ("on", "off"):
        raise ValueError("EVALUAITOR_STEERING_CHECK must be on or off")
    config["EVALUAITOR_STEERING_CHECK"] = check


def _prices(raw: str) -> dict[str, tuple[float, float]]:
    """EVALUAITOR_LLM_PRICES: JSON ``{"model": [input_per_1k, output_per_1k]}``, prices per
    1,000 tokens of each model (app.spend); a mistake stops the start with the setting's name."""
    try:
        data = json.loads(raw)
    except ValueError:
        data = None
    if not isinstance(data, dict) or not all(map(_is_price_pair, data.values())):
        raise ValueError(
            'EVALUAITOR_LLM_PRICES must be JSON like {"gpt-4o-mini": [0.00015, 0.0006]}: '
            "per model, the price of 1,000 input and of 1,000 output tokens"
        )
    return {str(model): (float(pair[0]), float(pair[1])) for model, pair in data.items()}


def _is_price_pair(pair: object) -> bool:
    return (
        isinstance(pair, list)
        and len(pair) == 2
        and all(type(value) in (int, float) and 0 <= value < math.inf for value in pair)
    )


def _seconds(key: str, raw: str) -> list[float]:
    """A comma-separated list of delays; a mistake stops the start with the setting's name."""
    try:
        delays = [float(part) for part in raw.split(",") if part.strip()]
    except ValueError:
        delays = [-1.0]
    if any(delay < 0 for delay in delays):
        raise ValueError(f"{key} must be seconds separated by commas, e.g. 5,30,120")
    return delays


def _request_limit(upload_mb: float) -> int:
    """Werkzeug's hard request cap: the upload limit plus room for the other form fields."""
    return int(upload_mb * 1024 * 1024) + 64 * 1024
