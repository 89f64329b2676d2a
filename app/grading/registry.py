"""Plugins are registered explicitly, by name; duplicates and unknown names are named errors."""

from __future__ import annotations

from app.grading.base import GradingPlugin


class PluginError(Exception):
    pass


class UnknownPlugin(PluginError):
    pass


class DuplicatePlugin(PluginError):
    pass


_plugins: dict[str, GradingPlugin] = {}


def register(plugin: GradingPlugin) -> None:
    if plugin.name in _plugins:
        raise DuplicatePlugin(plugin.name)
    _plugins[plugin.name] = plugin


def get(name: str) -> GradingPlugin:
    try:
        return _plugins[name]
    except KeyError:
        raise UnknownPlugin(f"no grading plugin named {name!r}") from None


def names() -> list[str]:
    return sorted(_plugins)


def register_builtin() -> None:
    """Called once by ``create_app``; safe to call again."""
    from app.grading.rubric_eval import RubricEval

    for plugin in (RubricEval(),):
        if plugin.name not in _plugins:
            register(plugin)
