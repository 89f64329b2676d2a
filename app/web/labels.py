"""Words a teacher reads instead of the code's names: strategies, their settings and choices,
audit actions and the activity's settings, in the reader's language.

The code keeps its names (``rubric_eval``, ``override``, ``max_chars``): they are stored,
sent to the API and written in rubric files. Pages show these labels; a name without one
(a strategy added later) is shown as it is rather than hidden. Registered as template
globals by :mod:`app.web.blueprint`.
"""

from __future__ import annotations

from typing import Any

from flask_babel import lazy_gettext as _l

from app.extract import Kind
from app.lms.activities import KIND_LABELS, STRATEGY_LABELS

#: The strategies' settings (keys of their parameter schemas), by name.
SETTINGS: dict[str, Any] = {
    "temperature": _l("Temperature"),
    "max_chars": _l("Longest text read (characters)"),
    "max_tokens": _l("Longest reply (tokens)"),
    "max_retries": _l("Questions again after an unreadable reply"),
    "mode": _l("How the model is asked"),
    "normalize": _l("Score on the activity's maximum"),
    "fallback_positive": _l("Verdict for a requirement without a readable reply"),
    "fallback_negative": _l("Verdict for a fault without a readable reply"),
    "length_penalty": _l("Penalty for long submissions"),
    "tree": _l("Criteria tree"),
    "tests": _l("Tests"),
    "language": _l("Programming language"),
    "limits": _l("Limits (time, memory, output)"),
    "entry": _l("Entry point"),
    "harness": _l("Teacher's files"),
    "models": _l("Grader models"),
    "categories": _l("Categories"),
    "reverse": _l("Ask also with the reverse framing"),
    "critique": _l("Mutual critique round"),
    "critique_in_mean": _l("Count the critique round in the average"),
    "policy": _l("Policy pack"),
    "policy_caps": _l("Score caps by rule"),
    "policy_disabled": _l("Rules switched off"),
    "agree": _l("Agreement band (points of 100)"),
    "disagree": _l("Disagreement limit (points of 100)"),
    "swing": _l("Largest direct/reverse gap"),
    "summary": _l("Summarise first"),
    "analysis": _l("Analyse before grading"),
    "retrieval_top_k": _l("Reference passages shown"),
    "chunk_words": _l("Words per passage"),
    "chunk_overlap": _l("Words shared by neighbouring passages"),
    "context_tokens": _l("Largest prompt (tokens)"),
    "reserved_tokens": _l("Tokens kept free"),
    "analysis_model": _l("Model for the summary and analysis"),
    "summary_prompt": _l("Instructions for the summary step"),
    "analysis_prompt": _l("Instructions for the analysis step"),
    "final_grade_prompt": _l("Instructions for the final step"),
}

#: The choices of the strategies' select settings.
CHOICES: dict[str, Any] = {
    "per_criterion": _l("One question per criterion (most accurate)"),
    "one_shot": _l("All criteria in one question"),
    "holistic": _l("One overall judgement"),
    "MET": _l("Met"),
    "UNMET": _l("Not met"),
}

#: What a teacher (or the LMS) did, as the audit log names it.
AUDIT_ACTIONS: dict[str, Any] = {
    "override": _l("Changed the grade"),
    "release": _l("Released the grade"),
    "regrade": _l("Graded again"),
    "reopen": _l("Allowed one more attempt"),
    "example": _l("Changed its use as a graded example"),
    "settings": _l("Changed the settings"),
    "own_column": _l("Grades go to a gradebook column Evaluaitor created"),
    "appeal": _l("Asked for a regrade"),
    "appeal_withdraw": _l("Withdrew the regrade request"),
    "appeal_answer": _l("Answered the regrade request"),
}

#: The activity's own settings (app.lms.activities.SETTINGS), for the settings history.
ACTIVITY_FIELDS: dict[str, Any] = {
    "title": _l("Title"),
    "instructions": _l("Instructions"),
    "guidelines": _l("Guidelines for the grader"),
    "plugin_name": _l("Grading strategy"),
    "plugin_params": _l("Strategy settings"),
    "rubric": _l("Rubric"),
    "reference_text": _l("Reference material"),
    "model": _l("Model"),
    "max_score": _l("Maximum score"),
    "release_policy": _l("Release"),
    "accepted_kinds": _l("Accepted files"),
    "max_upload_mb": _l("Largest file (MB)"),
    "max_attempts": _l("Maximum attempts per student"),
    "example_count": _l("Graded examples shown to the model"),
    "min_confidence": _l("Hold grades whose confidence is below"),
    "appeal_limit": _l("Regrade requests per submission"),
    "appeal_days": _l("Days to ask for a regrade"),
    "monthly_token_limit": _l("Tokens per month"),
    "monthly_cost_limit": _l("Spending per month"),
}


def _label(table: dict[str, Any], name: str | None) -> str:
    """The label of ``name`` in the reader's language; the name itself when it has none."""
    if not name:
        return "–"
    label = table.get(name)
    return str(label) if label is not None else name


def strategy_label(name: str | None) -> str:
    return _label(STRATEGY_LABELS, name)


def kind_label(kind: str) -> str:
    """A file kind in words ("Word (.docx)"), as the setup form offers it."""
    try:
        return str(KIND_LABELS[Kind(kind)])
    except (ValueError, KeyError):
        return kind


def setting_label(name: str) -> str | None:
    """The label of a strategy setting, or None (the schema's own title is then used)."""
    label = SETTINGS.get(name)
    return str(label) if label is not None else None


def choice_label(value: str) -> str:
    return _label(CHOICES, value)


def action_label(action: str) -> str:
    return _label(AUDIT_ACTIONS, action)


def field_label(name: str) -> str:
    return _label(ACTIVITY_FIELDS, name)
