"""The grading plugins' errors, below the registry and the strategies, which both raise them.

Each message is fit for a teacher: it says what to change in the activity's settings.
"""

from __future__ import annotations


class PluginError(Exception):
    """A plugin problem with a message fit for a teacher."""


class UnknownPlugin(PluginError):
    pass


class DuplicatePlugin(PluginError):
    pass


class InvalidParams(PluginError):
    pass
