"""Plugins are registered explicitly, by name; duplicates and unknown names are named errors.

Parameters are validated against the plugin's schema when an activity is configured and
again when a job starts, with messages a teacher can act on.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from app.catalogue import lazy_gettext as _l
from app.grading.base import GradingPlugin, PluginParams
from app.grading.code_judge import CodeJudge
from app.grading.criteria import Criteria
from app.grading.criteria_tree import CriteriaTree
from app.grading.ensemble import Ensemble
from app.grading.errors import DuplicatePlugin, InvalidParams, UnknownPlugin
from app.grading.errors import PluginError as PluginError  # callers catch registry.PluginError
from app.grading.pipeline import Pipeline
from app.grading.rubric import Criterion, Rubric
from app.grading.rubric_eval import RubricEval

#: A rubric for :func:`sends_to_a_model`: strategies that call a model only with one.
_ANY_RUBRIC = Rubric(criteria=[Criterion(name="Any", requirement="Any.", weight=1)])

_plugins: dict[str, GradingPlugin] = {}
_builtin_loaded = False


def register(plugin: GradingPlugin) -> None:
    if plugin.name in _plugins:
        raise DuplicatePlugin(f"a grading plugin named {plugin.name!r} is already registered")
    _plugins[plugin.name] = plugin


def get(name: str) -> GradingPlugin:
    register_builtin()
    try:
        return _plugins[name]
    except KeyError:
        known = ", ".join(sorted(_plugins))
        message = _l(
            "There is no grading strategy named %(name)s. Known: %(known)s.",
            name=repr(name),
            known=known,
        )
        raise UnknownPlugin(message) from None


def sends_to_a_model(plugin: GradingPlugin, raw: dict[str, Any] | None) -> bool:
    """Whether grading with these settings may send the work to a model, whatever rubric the
    activity gets (settings that do not validate count as may): a tree of program tests does
    not, a tree with an AI test does."""
    if not plugin.needs_llm:
        return False
    try:
        params = validate_params(plugin, raw)
    except InvalidParams:
        return True
    return any(bool(plugin.planned_calls(params, rubric)) for rubric in (None, _ANY_RUBRIC))


def all_plugins() -> list[GradingPlugin]:
    register_builtin()
    return [_plugins[name] for name in sorted(_plugins)]


def validate_params(plugin: GradingPlugin, raw: dict[str, Any] | None) -> PluginParams:
    """The plugin's parameters with defaults filled in; InvalidParams says what is wrong."""
    if raw is not None and not isinstance(raw, dict):
        raise InvalidParams(_l("The strategy settings must be a JSON object of named settings."))
    try:
        return plugin.Params.model_validate(raw or {})
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            field = ".".join(str(part) for part in error["loc"]) or "settings"
            message = (
                _l("is not a setting of this strategy")
                if error["type"] == "extra_forbidden"
                else error["msg"]
            )
            problems.append(f"{field}: {message}")
        raise InvalidParams(
            _l(
                "The settings for %(strategy)s have problems: %(problems)s",
                strategy=plugin.name,
                problems="; ".join(problems),
            )
        ) from exc


def describe(plugin: GradingPlugin) -> dict[str, Any]:
    """What ``evaluaitor plugins`` and the API show: identity, file types, parameter schema."""
    return {
        "name": plugin.name,
        "description": plugin.description,
        "version": plugin.version,
        "supported_file_types": list(plugin.file_types),
        "needs_llm": plugin.needs_llm,
        "parameters": plugin.Params.model_json_schema(),
    }


def register_builtin() -> None:
    """Register the strategies that ship with Evaluaitor; lookups call it, so every entry
    point (web, worker, CLI, tests) sees them. Safe to call again."""
    global _builtin_loaded
    if _builtin_loaded:
        return
    _builtin_loaded = True
    builtin = (RubricEval(), Criteria(), Pipeline(), CriteriaTree(), Ensemble(), CodeJudge())
    for plugin in builtin:
        if plugin.name not in _plugins:
            register(plugin)
