"""``evaluaitor grade`` and ``evaluaitor plugins``: try a strategy on local files, no LMS,
no database; exactly the runner the worker uses."""

from __future__ import annotations

import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import click
from flask import current_app
from flask.cli import with_appcontext

from app.extract import ExtractionError, Kind, extract, sniff
from app.grading import registry, runner
from app.grading.base import Assignment, InputFile
from app.grading.cross_check import Safeguards
from app.grading.registry import PluginError
from app.grading.rubric import RubricError, load_rubric
from app.llm import LLMError, LLMNotConfiguredError
from app.llm.cache import LOCAL_SCOPE
from app.llm.session import llm_session
from app.uploads import HEAD_BYTES as SNIFF_BYTES


@click.command("plugins")
@with_appcontext
def plugins_command() -> None:
    """List the grading strategies and their parameters (JSON)."""
    described = [registry.describe(plugin) for plugin in registry.all_plugins()]
    click.echo(json.dumps(described, indent=2, ensure_ascii=False))


@click.command("grade")
@click.argument("paths", nargs=-1, required=True, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--plugin", "plugin_name", default="rubric_eval", show_default=True)
@click.option("--rubric", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--params", default=None, help="Strategy settings as a JSON object.")
@click.option("--instructions", default="", help="The assignment text.")
@click.option("--reference", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--max-score", default=10.0, show_default=True, type=float)
@click.option("--model", default=None, help="Overrides EVALUAITOR_LLM_MODEL.")
@click.option("--force", is_flag=True, help="Ignore cached model replies.")
@click.option("--jobs", default=4, show_default=True, help="Files graded at once.")
@with_appcontext
def grade_command(
    paths: tuple[Path, ...],
    plugin_name: str,
    rubric: Path | None,
    params: str | None,
    instructions: str,
    reference: Path | None,
    max_score: float,
    model: str | None,
    force: bool,
    jobs: int,
) -> None:
    """Grade local files and print one JSON object per file per line."""
    try:
        plugin = registry.get(plugin_name)
        parsed = json.loads(params) if params else None
        registry.validate_params(plugin, parsed)
        loaded_rubric = load_rubric(rubric) if rubric else None
    except (PluginError, RubricError) as exc:
        raise click.UsageError(str(exc)) from exc
    except json.JSONDecodeError as exc:
        raise click.UsageError(f"--params is not valid JSON: {exc}") from exc
    try:
        reference_text = read_document(reference) if reference else ""
    except ValueError as exc:
        raise click.UsageError(str(exc)) from exc
    config = current_app.config
    assignment = Assignment(
        max_score=max_score,
        instructions=instructions,
        rubric=loaded_rubric,
        reference=reference_text,
        model=model,
    )

    def grade_one(path: Path) -> dict[str, Any]:
        return grade_file(path, plugin_name, parsed, assignment, config, force=force)

    with ThreadPoolExecutor(max(1, jobs)) as pool:
        for line in pool.map(grade_one, paths):
            click.echo(json.dumps(line, ensure_ascii=False))
            sys.stdout.flush()


def grade_file(
    path: Path,
    plugin: str,
    params: dict[str, Any] | None,
    assignment: Assignment,
    config: Any,
    *,
    force: bool,
) -> dict[str, Any]:
    """One JSON line: never raises, so one bad file does not stop the others."""
    line: dict[str, Any] = {"file": str(path)}
    try:
        kind, text = _load(path)
    except OSError as exc:
        return line | _failed(f"Cannot read the file: {exc.strerror}")
    except ExtractionError as exc:
        return line | _failed(exc.user_message)
    document = InputFile(path.name, kind.value, text, path)
    mask = bool(config["EVALUAITOR_MASK_PII"])
    job = runner.Job(
        plugin,
        assignment,
        document,
        params,
        mask_pii=mask,
        safeguards=Safeguards.from_config(config),
    )
    model = assignment.model
    try:
        fresh_since = time.time() if force else None  # replies stored before it are not replayed
        with llm_session(
            config, model=model, fresh_since=fresh_since, cache_scope=LOCAL_SCOPE
        ) as llm:
            result = runner.grade(job, llm, lambda *_: None)
    except LLMNotConfiguredError:
        return line | _failed("No language model is configured (set EVALUAITOR_LLM_BASE_URL).")
    except LLMError as exc:
        return line | _failed(exc.user_message)
    except (PluginError, RubricError) as exc:
        return line | _failed(str(exc))
    return line | {"status": result.outcome.value, "error": result.error, **result.record()}


def _failed(message: str) -> dict[str, Any]:
    return {"status": "failed", "error": message}


def read_document(path: Path) -> str:
    """The text of a teacher's document (reference material); ValueError says why not."""
    try:
        return _load(path)[1]
    except OSError as exc:
        raise ValueError(f"Cannot read {path.name}: {exc.strerror}") from exc
    except ExtractionError as exc:
        raise ValueError(f"Cannot use {path.name}: {exc.user_message}") from exc


def _load(path: Path) -> tuple[Kind, str]:
    """A local file's kind (from its content) and text; OSError or ExtractionError."""
    with path.open("rb") as handle:
        kind = sniff(path.name, handle.read(SNIFF_BYTES))
    return kind, extract(path, kind).text
