"""The ``evaluaitor`` command: Flask's CLI bound to the app factory, plus our own commands."""

from __future__ import annotations

import json
import os
import re
import sys
import threading
import time
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlsplit

import click
from flask import Config, current_app
from flask.cli import FlaskGroup, with_appcontext
from sqlalchemy import select
from sqlalchemy.exc import SQLAlchemyError

from app import create_app, privacy, tenants
from app.api.commands import org_group, token_group
from app.extensions import db
from app.models import Activity, Deployment, Platform
from app.offline import grade_command, plugins_command
from app.text import clean_name


@click.group(cls=FlaskGroup, create_app=create_app)
def cli() -> None:
    """Evaluaitor: AI-assisted grading for your LMS, over LTI 1.3."""


# -- run and worker -----------------------------------------------------------------------


@cli.command("run")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=5000, show_default=True, type=int)
@click.option("--worker/--no-worker", default=True, help="Also start an RQ worker.")
def run_command(host: str, port: int, worker: bool) -> None:
    """Run everything for local use: Redis (embedded if REDIS_URL is unset), migrations,
    a worker and the web server.

    SIGTERM or Ctrl+C stops it all and exits 0: the worker may finish its job for up to
    EVALUAITOR_SHUTDOWN_GRACE seconds, then the job is cut off and handed back. A worker or
    Redis that dies is started again (app/supervisor.py).
    """
    from flask_migrate import upgrade

    from app import metrics
    from app.supervisor import Supervisor

    app = current_app._get_current_object()
    # The web server here and the worker (with its work horses) add up their counters there.
    counters = Path(app.config["PROMETHEUS_MULTIPROC_DIR"] or Path(app.instance_path) / "metrics")
    metrics.use_directory(counters)
    app.config["PROMETHEUS_MULTIPROC_DIR"] = str(counters)
    if not app.config["EVALUAITOR_LLM_BASE_URL"]:
        _use_local_llm(app.config)
    with Supervisor(grace=app.config["EVALUAITOR_SHUTDOWN_GRACE"]) as supervisor:
        if not os.environ.get("REDIS_URL"):
            redis_server = supervisor.start_redis(Path(app.instance_path) / "redis")
            os.environ["REDIS_URL"] = redis_server.url
            app = create_app()
            click.echo(f"Embedded Redis at {redis_server.url}")
        with app.app_context():
            upgrade()
        if worker:
            supervisor.start_worker([sys.executable, "-m", "app.cli", "worker"])
        click.echo(f"Evaluaitor on http://{host}:{port}  (LTI login: /lti/login, keys: /lti/jwks)")
        if app.config["EVALUAITOR_PRACTICE"]:
            # A browser cannot open a wildcard address: the platform sends it to this host.
            # A comparison, not a bind: the operator chose the listening address.
            reachable = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host  # nosec B104
            practice = _start_practice(app, f"http://{reachable}:{port}")
            if practice:
                supervisor.add_server(practice)
        try:
            supervisor.serve(host, port, app)
        except OSError as exc:
            raise click.ClickException(f"Cannot listen on {host}:{port}: {exc}") from exc


def _use_local_llm(config: Config) -> None:
    """Look for a model server on this machine and say what was found; when one answers,
    its URL and model go into this app's settings and into the environment, which the
    worker inherits. When none does, the web app and the worker look again every
    EVALUAITOR_LLM_PROBE_EVERY seconds, so a server started later is used (and the essays
    that waited for it are graded)."""
    from app.llm import discovery

    try:
        ports = discovery.probe_ports(config["EVALUAITOR_LLM_PROBE_PORTS"])
    except ValueError as exc:
        raise click.ClickException(str(exc)) from exc
    allowed = discovery.allowed_ports(ports, config)
    server = discovery.find_local_server(allowed)
    if server is None:
        if allowed:
            looked = (
                "no OpenAI-compatible server answered on 127.0.0.1 "
                f"(ports {', '.join(map(str, allowed))}); looking again every "
                f"{config['EVALUAITOR_LLM_PROBE_EVERY']:g} s"
            )
        elif ports:
            looked = "EVALUAITOR_LLM_ALLOWED_BASE_URLS allows none of the local ports looked at"
        else:
            looked = "looking for a local one is off (EVALUAITOR_LLM_PROBE_PORTS)"
        click.echo(
            f"No EVALUAITOR_LLM_BASE_URL, and {looked}: essays wait for a model. The practice "
            "course's programming activity is graded without one (program tests). To grade "
            "with a model, set EVALUAITOR_LLM_BASE_URL, e.g. http://127.0.0.1:11434/v1 for Ollama."
        )
        if allowed:
            os.environ[discovery.WATCH_VARIABLE] = "1"  # the worker looks too
            _watch_for_llm(config, allowed, lambda server: _say_found(config, server))
        return
    _say_found(config, server)
    model = discovery.adopt(config, server)
    os.environ["EVALUAITOR_LLM_BASE_URL"] = server.base_url
    os.environ["EVALUAITOR_LLM_MODEL"] = model


def _say_found(config: Config, server) -> None:
    model = server.choose_model(config["EVALUAITOR_LLM_MODEL"])
    offered = ", ".join(server.models[:10]) + (", ..." if len(server.models) > 10 else "")
    click.echo(f"Found an OpenAI-compatible server at {server.base_url} offering: {offered}")
    if model != config["EVALUAITOR_LLM_MODEL"]:
        click.echo(f"EVALUAITOR_LLM_MODEL ({config['EVALUAITOR_LLM_MODEL']}) is not offered there.")
    click.echo(f"Grading with model {model} at {server.base_url}")


def _watch_for_llm(config: Config, ports: tuple[int, ...], on_found) -> None:
    """Look for a model server in a daemon thread while none is configured."""
    from app.llm import discovery

    threading.Thread(
        target=discovery.watch,
        args=(config, ports, on_found),
        kwargs={"every": config["EVALUAITOR_LLM_PROBE_EVERY"]},
        daemon=True,
        name="llm-discovery",
    ).start()


def _start_practice(app, tool_url: str):
    """Register and start the practice platform beside the tool; returns its server."""
    from app import practice

    settings = practice.settings_for(app, tool_url)
    try:
        server = practice.serve_in_background(settings)
    except OSError as exc:  # the port is taken: the tool itself still runs
        click.echo(f"Practice platform not started ({settings.base_url}: {exc})", err=True)
        return None
    with app.app_context():
        practice.register(settings)
    click.echo(f"Practice platform (try it without an LMS) on {settings.base_url}/")
    return server


@cli.command("practice")
@click.option("--tool-url", default="http://127.0.0.1:5000", show_default=True)
@click.option("--port", default=None, type=int, help="Default: EVALUAITOR_PRACTICE_PORT.")
@with_appcontext
def practice_command(tool_url: str, port: int | None) -> None:
    """Run only the practice platform, for a tool already running at --tool-url."""
    from werkzeug.serving import run_simple

    from app import practice

    settings = practice.settings_for(current_app, tool_url, port)
    practice.register(settings)
    click.echo(f"Practice platform on {settings.base_url}/ for the tool at {settings.tool_url}")
    port = urlsplit(settings.base_url).port
    run_simple("127.0.0.1", port, practice.create_practice_app(settings), threaded=True)


@cli.command("worker")
@click.option("--burst", is_flag=True, help="Stop when the queues are empty.")
@with_appcontext
def worker_command(burst: bool) -> None:
    """Run an RQ worker for the grading and passback queues, with the sweeper (which, not
    RQ's scheduler, queues retries when due: they are kept in the database)."""
    from app import metrics
    from app.extensions import redis_connection
    from app.jobs import queue, tasks
    from app.jobs.worker import preload, serve_metrics, sweep_forever, work
    from app.llm import discovery

    app = current_app._get_current_object()
    counters = metrics.directory(app.config["PROMETHEUS_MULTIPROC_DIR"])
    if counters is not None:  # not emptied: the web processes may share it
        counters.mkdir(parents=True, exist_ok=True)
    tasks.use_app(app)
    preload()
    if not burst:
        threading.Thread(target=sweep_forever, args=(app,), daemon=True).start()
        if app.config["EVALUAITOR_WORKER_METRICS_ADDRESS"]:
            serve_metrics(app, app.config["EVALUAITOR_WORKER_METRICS_ADDRESS"])
    if os.environ.get(discovery.WATCH_VARIABLE) and not app.config["EVALUAITOR_LLM_BASE_URL"]:
        ports = discovery.probe_ports(app.config["EVALUAITOR_LLM_PROBE_PORTS"])
        ports = discovery.allowed_ports(ports, app.config)
        wanted = app.config["EVALUAITOR_LLM_MODEL"]
        _watch_for_llm(app.config, ports, lambda _server: _grade_what_waited(app, wanted))
    work(
        lambda: [queue.queue(queue.GRADING), queue.queue(queue.PASSBACK)],
        redis_connection,
        burst=burst,
        metrics_dir=counters,
    )


def _grade_what_waited(app, wanted: str) -> None:
    """A model server was found (and adopted into ``app.config``): grade the essays that failed
    for want of one; those that named ``wanted``, the model configured before, with the one
    chosen there when it does not offer ``wanted``."""
    from app.evaluation.pipeline import grade_what_waited_for_a_model

    model = app.config["EVALUAITOR_LLM_MODEL"]
    with app.app_context():
        count = grade_what_waited_for_a_model(wanted if wanted != model else None, model)
    click.echo(f"A model server was found: {count} submission(s) that waited for it are in line.")


@cli.command("requeue")
@click.option("--older-than", default=0, show_default=True, help="Seconds.")
@with_appcontext
def requeue_command(older_than: int) -> None:
    """Queue work that is due or that Redis lost: one round of the workers' sweeper."""
    from app.evaluation import sweeper

    count = sweeper.sweep(timedelta(seconds=older_than))
    click.echo(f"Queued {count} item(s).")


# -- platforms ----------------------------------------------------------------------------


@cli.group("platform")
def platform_group() -> None:
    """Register the LMS platforms (tenants) that may launch Evaluaitor."""


@platform_group.command("add")
@click.option(
    "--issuer", required=True, help="The platform's issuer (iss), e.g. https://moodle.example.edu"
)
@click.option("--client-id", required=True)
@click.option("--auth-login-url", required=True, help="OIDC authorization endpoint.")
@click.option("--auth-token-url", required=True, help="OAuth2 token endpoint.")
@click.option("--key-set-url", required=True, help="The platform's public keys (JWKS).")
@click.option("--deployment-id", "deployment_ids", multiple=True, required=True)
@click.option("--name", default=None)
@click.option("--auth-audience", default=None, help="Token audience, if not the token URL.")
@with_appcontext
def platform_add(
    issuer: str,
    client_id: str,
    auth_login_url: str,
    auth_token_url: str,
    key_set_url: str,
    deployment_ids: tuple[str, ...],
    name: str | None,
    auth_audience: str | None,
) -> None:
    """Register a platform, or update it and add deployments if it exists."""
    for label, url in (
        ("--issuer", issuer),
        ("--auth-login-url", auth_login_url),
        ("--auth-token-url", auth_token_url),
        ("--key-set-url", key_set_url),
    ):
        if not url.startswith(("https://", "http://")):
            raise click.BadParameter(f"must be an http(s) URL, got {url!r}", param_hint=label)
    platform = db.session.scalar(
        select(Platform).where(Platform.issuer == issuer, Platform.client_id == client_id)
    )
    if platform is None:
        platform = Platform(issuer=issuer, client_id=client_id)
        db.session.add(platform)
    platform.name = clean_name(name or platform.name or issuer, tenants.NAME_CHARS)
    platform.auth_login_url = auth_login_url
    platform.auth_token_url = auth_token_url
    platform.key_set_url = key_set_url
    platform.auth_audience = auth_audience
    tenants.attach_platform(platform)
    known = {d.deployment_id for d in platform.deployments}
    for deployment_id in deployment_ids:
        if deployment_id not in known:
            platform.deployments.append(Deployment(deployment_id=deployment_id))
    db.session.commit()
    click.echo(
        f"Platform {platform.id} ({platform.name}) with deployments "
        f"{', '.join(sorted(d.deployment_id for d in platform.deployments))}"
    )


@platform_group.command("list")
@with_appcontext
def platform_list() -> None:
    platforms = db.session.scalars(select(Platform).order_by(Platform.id)).all()
    if not platforms:
        click.echo("No platforms registered. Add one with: evaluaitor platform add --help")
    for p in platforms:
        deployments = ", ".join(d.deployment_id for d in p.deployments) or "-"
        state = "active" if p.is_active else "inactive"
        click.echo(
            f"{p.id}\t{p.name}\t{p.issuer}\tclient_id={p.client_id}\t"
            f"deployments={deployments}\t{state}"
        )


@platform_group.command("remove")
@click.argument("platform_id", type=int)
@click.confirmation_option(
    prompt="This deletes the platform, all its courses and submissions, their files and their "
    "cached model replies. Continue?"
)
@with_appcontext
def platform_remove(platform_id: int) -> None:
    platform = db.session.get(Platform, platform_id)
    if platform is None:
        raise click.ClickException(f"No platform with id {platform_id}.")
    try:
        tenants.remove_platform(
            platform,
            data_dir=current_app.config["EVALUAITOR_DATA_DIR"],
            cache_dir=current_app.config["EVALUAITOR_LLM_CACHE_DIR"],
        )
    except SQLAlchemyError as exc:
        raise click.ClickException(
            f"Platform {platform_id} was not removed, and its files are kept: the database "
            f"refused ({getattr(exc, 'orig', exc)})."
        ) from exc
    click.echo(f"Removed platform {platform_id}, its files and its cached model replies.")


@cli.command("registration-link")
@click.argument("lms")
@click.option(
    "--tool-url",
    required=True,
    help="This tool's public address as the LMS reaches it, e.g. https://evaluaitor.school.edu",
)
@click.option("--hours", type=float, default=None, help="Valid for (default: the setting).")
@with_appcontext
def registration_link_command(lms: str, tool_url: str, hours: float | None) -> None:
    """Make a one-time LTI Dynamic Registration link for the LMS at LMS (its address, e.g.
    https://moodle.school.edu); paste it into the LMS's tool registration page."""
    from app.lti import registration_links

    if not tool_url.startswith(("https://", "http://")):
        raise click.BadParameter(
            f"must be an http(s) URL, got {tool_url!r}", param_hint="--tool-url"
        )
    hours = current_app.config["EVALUAITOR_REGISTRATION_LINK_HOURS"] if hours is None else hours
    try:
        made = registration_links.create(lms, hours=hours)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="LMS") from exc
    click.echo(
        f"Registration link for {made.link.lms_origin}, usable once within {hours:g} h:",
        err=True,
    )
    click.echo(f"{tool_url.rstrip('/')}/lti/register/{made.token}")


@cli.group("activity")
def activity_group() -> None:
    """See and change how activities are graded."""


@activity_group.command("list")
@with_appcontext
def activity_list() -> None:
    activities = db.session.scalars(select(Activity).order_by(Activity.id)).all()
    if not activities:
        click.echo("No activities yet: they appear when the LMS first launches one.")
    for a in activities:
        click.echo(
            f"{a.id}\tplatform={a.platform_id}\t{a.title or a.resource_link_id}\t"
            f"{a.plugin_name}\tmax={a.max_score if a.max_score is not None else '?'}"
        )


@activity_group.command("configure")
@click.argument("activity_id", type=int)
@click.option("--plugin", default=None, help="Grading strategy (see `evaluaitor plugins`).")
@click.option("--params", default=None, help="Strategy settings as a JSON object.")
@click.option("--rubric", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--instructions", default=None)
@click.option(
    "--guidelines", default=None, help="Guidelines for the grader, never shown to students."
)
@click.option("--reference", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--model", default=None, help="Model for this activity ('' for the default).")
@click.option(
    "--release",
    "release_policy",
    type=click.Choice(["auto", "hold_flagged", "hold_all"]),
    default=None,
    help="Release grades at once, hold flagged ones, or hold all for a teacher.",
)
@click.option("--title", default=None)
@click.option("--max-score", default=None, help="Maximum score (until the LMS has a column).")
@click.option("--kinds", default=None, help="Accepted file kinds, e.g. pdf,docx ('' for all).")
@click.option("--max-upload-mb", default=None, help="Upload limit ('' for the site's).")
@click.option("--max-attempts", default=None, help="Attempts per student ('' for unlimited).")
@click.option(
    "--min-confidence",
    default=None,
    help="Hold grades whose confidence is below this, 0-1 or a percentage ('' for none).",
)
@click.option("--monthly-tokens", default=None, help="Model tokens per UTC month ('' for none).")
@click.option("--monthly-cost", default=None, help="Spending per UTC month ('' for none).")
@with_appcontext
def activity_configure(
    activity_id: int,
    plugin: str | None,
    params: str | None,
    rubric: Path | None,
    instructions: str | None,
    guidelines: str | None,
    reference: Path | None,
    model: str | None,
    release_policy: str | None,
    title: str | None,
    max_score: str | None,
    kinds: str | None,
    max_upload_mb: str | None,
    max_attempts: str | None,
    min_confidence: str | None,
    monthly_tokens: str | None,
    monthly_cost: str | None,
) -> None:
    """Validate and store an activity's grading settings."""
    from app.grading.registry import PluginError
    from app.grading.rubric import RubricError, load_rubric
    from app.lms.activities import configure
    from app.offline import read_document

    activity = db.session.get(Activity, activity_id)
    if activity is None:
        raise click.ClickException(f"No activity with id {activity_id}.")
    try:
        configure(
            activity,
            plugin=plugin,
            params=json.loads(params) if params else None,
            rubric=load_rubric(rubric) if rubric else None,
            instructions=instructions,
            guidelines=guidelines,
            reference_text=read_document(reference) if reference else None,
            model=model,
            release_policy=release_policy,
            title=title,
            max_score=max_score,
            accepted_kinds=None if kinds is None else re.findall(r"[^,\s]+", kinds),
            max_upload_mb=max_upload_mb,
            max_attempts=max_attempts,
            min_confidence=min_confidence,
            monthly_token_limit=monthly_tokens,
            monthly_cost_limit=monthly_cost,
        )
    except json.JSONDecodeError as exc:
        raise click.UsageError(f"--params is not valid JSON: {exc}") from exc
    except (PluginError, RubricError, ValueError) as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(f"Activity {activity.id} grades with {activity.plugin_name}.")


@cli.group("keys")
def keys_group() -> None:
    """The tool's signing keys (published at /lti/jwks)."""


@keys_group.command("list")
@with_appcontext
def keys_list() -> None:
    from app.lti import keys

    found = keys.all_keys(current_app.config["EVALUAITOR_KEY_DIR"])
    for key in found:
        created = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(key.created))
        role = "signing" if key is found[-1] else "published"
        click.echo(f"{key.kid}\t{created} UTC\t{role}")


@keys_group.command("rotate")
@click.option(
    "--grace-hours",
    default=48.0,
    show_default=True,
    help="Keys replaced longer ago than this are removed.",
)
@with_appcontext
def keys_rotate(grace_hours: float) -> None:
    """Sign with a new key; keep the previous one published for the grace period."""
    from app.lti import keys

    key_dir = current_app.config["EVALUAITOR_KEY_DIR"]
    removed = keys.prune(key_dir, grace_hours * 3600)
    new = keys.rotate(key_dir)
    click.echo(
        f"New signing key {new.kid}." + (f" Removed: {', '.join(removed)}." if removed else "")
    )


cli.add_command(plugins_command)
cli.add_command(grade_command)
cli.add_command(token_group)
cli.add_command(org_group)


if __name__ == "__main__":
    cli()


# --- data protection (app.privacy) -----------------------------------------------------------

_SCOPE_ARGUMENTS = (
    click.argument("scope", type=click.Choice(["student", "course", "activity", "organization"])),
    click.argument("key"),
    click.option(
        "--platform",
        "platform_id",
        type=int,
        default=None,
        help="The platform of a student or a course (see `evaluaitor platform list`).",
    ),
)


def _scope_options(command):
    for decorate in reversed(_SCOPE_ARGUMENTS):
        command = decorate(command)
    return command


def _scope(scope: str, key: str, platform_id: int | None) -> privacy.Scope:
    """KEY: the student's LMS user id, the course's LMS context id, the activity's id, or the
    organization's external id."""
    try:
        found = privacy.Scope(scope, key, platform_id)  # type: ignore[arg-type]
        privacy.select_scope(found)
    except ValueError as exc:
        raise click.ClickException(f"{exc} (give --platform).") from exc
    except privacy.NotFound as exc:
        raise click.ClickException(f"There is no such {scope}.") from exc
    return found


@cli.group("privacy")
def privacy_group() -> None:
    """Erase or export a student, course, activity or organization; apply retention."""


@privacy_group.command("erase")
@_scope_options
@click.confirmation_option(
    prompt="This deletes everything of it for good: submissions, files, grades, appeals, "
    "prompts, model replies and cached replies. Continue?"
)
@with_appcontext
def privacy_erase(scope: str, key: str, platform_id: int | None) -> None:
    """Erase a SCOPE named by KEY (a student's LMS user id, a course's LMS context id, an
    activity's id, an organization's external id) with everything of theirs."""
    try:
        erased = privacy.erase_scope(_scope(scope, key, platform_id), actor="cli")
    except privacy.InProgress as exc:
        raise click.ClickException(f"Nothing was erased: {exc}. Try again later.") from exc
    counts = ", ".join(f"{name} {count}" for name, count in erased.counts.items() if count)
    click.echo(f"Erased {erased.label}: {counts or 'nothing held'}.")


@privacy_group.command("export")
@_scope_options
@click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path), required=True)
@with_appcontext
def privacy_export(scope: str, key: str, platform_id: int | None, output: Path) -> None:
    """Write everything held about a SCOPE named by KEY to a zip (data.json and files/)."""
    archive = privacy.export_scope(_scope(scope, key, platform_id), actor="cli")
    output.write_bytes(archive)
    click.echo(f"Wrote {output} ({len(archive)} bytes).")


@privacy_group.command("retention")
@click.option("--dry-run", is_flag=True, help="List what would go, remove nothing.")
@with_appcontext
def privacy_retention(dry_run: bool) -> None:
    """Apply EVALUAITOR_RETAIN_SUBMISSIONS_DAYS and EVALUAITOR_RETAIN_PROMPTS_DAYS now (the
    workers do it about once an hour)."""
    if dry_run:
        for line in privacy.retention_plan().lines():
            click.echo(line)
        return
    counts = privacy.apply_retention(actor="cli")
    done = ", ".join(f"{name} {count}" for name, count in counts.items() if count)
    click.echo(f"Retention applied: {done or 'nothing was due'}.")
