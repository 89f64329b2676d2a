"""Rubrics: weighted criteria, loaded from YAML or JSON and validated with teacher-readable errors.

A positive weight rewards a trait when it is met; a negative weight penalises an error when
it is present ("MET"). Scores are weighted sums over the total positive weight.
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from app.catalogue import gettext as _


class RubricError(ValueError):
    """The rubric cannot be used; the message says what to fix."""


class Criterion(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1, max_length=200)
    requirement: str = Field(min_length=1, max_length=4000)
    weight: float

    @field_validator("weight")
    @classmethod
    def _not_zero(cls, weight: float) -> float:
        if weight == 0:
            raise ValueError("a weight of 0 does nothing; use a positive or a negative weight")
        return weight


class Rubric(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    title: str = ""
    criteria: tuple[Criterion, ...] = Field(min_length=1, max_length=100)

    @field_validator("criteria")
    @classmethod
    def _usable(cls, criteria: tuple[Criterion, ...]) -> tuple[Criterion, ...]:
        names = [c.name for c in criteria]
        if len(set(names)) != len(names):
            raise ValueError("criterion names must be unique")
        if not any(c.weight > 0 for c in criteria):
            raise ValueError("at least one criterion needs a positive weight")
        return criteria

    @property
    def total_positive_weight(self) -> float:
        return sum(c.weight for c in self.criteria if c.weight > 0)


def parse_rubric(data: object) -> Rubric:
    """A rubric from already-decoded data: ``{"criteria": [...]}`` or a bare list of criteria."""
    if isinstance(data, list):
        data = {"criteria": data}
    try:
        return Rubric.model_validate(data)
    except ValidationError as exc:
        raise RubricError(_explain(exc)) from exc


def load_rubric(source: str | Path) -> Rubric:
    """A rubric from a ``.yaml``/``.yml``/``.json`` file."""
    path = Path(source)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise RubricError(f"Cannot read the rubric file {path.name}: {exc}") from exc
    try:
        data = json.loads(text) if path.suffix.lower() == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        kind = "JSON" if path.suffix.lower() == ".json" else "YAML"
        raise RubricError(f"The rubric file {path.name} is not valid {kind}: {exc}") from exc
    return parse_rubric(data)


def _explain(exc: ValidationError) -> str:
    """One line per problem, naming the criterion by its position as a teacher counts."""
    lines = []
    for error in exc.errors():
        where = []
        for part in error["loc"]:
            where.append(_("criterion %(n)s", n=part + 1) if isinstance(part, int) else str(part))
        lines.append(f"{' → '.join(where) or _('rubric')}: {error['msg']}")
    return _("The rubric has problems:\n%(problems)s", problems="\n".join(lines))
