"""Changing how an activity is graded. Every path that configures an activity (the CLI now,
the deep-linking form later) goes through :func:`configure`, so settings are validated
against the strategy's schema before they are stored, with messages a teacher can act on."""

from __future__ import annotations

from typing import Any

from app.extensions import db
from app.grading import registry
from app.grading.rubric import Rubric
from app.models import Activity

#: When grades reach students and the gradebook (see app.grading.service).
RELEASE_POLICIES = ("auto", "hold_flagged", "hold_all")


def configure(
    activity: Activity,
    *,
    plugin: str | None = None,
    params: dict[str, Any] | None = None,
    rubric: Rubric | None = None,
    instructions: str | None = None,
    reference_text: str | None = None,
    model: str | None = None,
    release_policy: str | None = None,
) -> Activity:
    """Validate and store new settings; nothing is stored if anything is invalid.

    Raises registry.PluginError (unknown strategy, bad parameters) or ValueError (unknown
    release policy) with the reason.
    """
    if release_policy is not None and release_policy not in RELEASE_POLICIES:
        raise ValueError(f"release policy must be one of: {', '.join(RELEASE_POLICIES)}")
    strategy = registry.get(plugin or activity.plugin_name)
    chosen = params if params is not None else activity.plugin_params
    validated = registry.validate_params(strategy, chosen)
    activity.plugin_name = strategy.name
    activity.plugin_params = validated.model_dump(mode="json", exclude_defaults=True)
    if rubric is not None:
        activity.rubric = rubric.model_dump(mode="json")
    if instructions is not None:
        activity.instructions = instructions
    if reference_text is not None:
        activity.reference_text = reference_text
    if model is not None:
        activity.model = model or None
    if release_policy is not None:
        activity.release_policy = release_policy
    db.session.commit()
    return activity
