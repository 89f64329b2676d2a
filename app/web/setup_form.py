"""The activity setup form: strategy settings drawn from each plugin's JSON Schema, and
reading what the teacher typed back into values for :func:`app.lms.activities.configure`.

Scalars get their own inputs (numbers keep the schema's bounds, enums become selects,
booleans checkboxes); anything nested (lists, objects, references) is edited as JSON. The
rules themselves stay in the plugin's pydantic model: this module only renders and reads.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from flask_babel import gettext as _
from werkzeug.datastructures import FileStorage, MultiDict

from app import safe_json
from app.extract import ExtractionError, Kind, check, extract, sniff
from app.grading.base import GradingPlugin
from app.i18n import localize
from app.uploads import IncomingFile, incoming_dir
from app.web.labels import setting_label

#: Reference material may be one of these kinds (not source code).
REFERENCE_KINDS = frozenset({Kind.PDF, Kind.DOCX, Kind.TEXT, Kind.MARKDOWN})
#: Strings longer than this get a text area rather than a one-line input.
_LONG_STRING = 300


@dataclass(frozen=True)
class SchemaField:
    """One strategy setting as the form shows it."""

    name: str
    label: str
    #: ``text``, ``textarea``, ``number``, ``integer``, ``checkbox``, ``select`` or ``json``.
    widget: str
    help: str = ""
    default: Any = None
    minimum: float | None = None
    maximum: float | None = None
    options: tuple[str, ...] = ()
    required: bool = False
    nullable: bool = False

    def input_name(self, plugin: str) -> str:
        return f"p.{plugin}.{self.name}"

    def shown(self, value: Any) -> Any:
        """A stored value as the input shows it (JSON text for nested settings)."""
        if self.widget == "json":
            return "" if value is None else json.dumps(value, indent=2, ensure_ascii=False)
        if self.widget == "checkbox":
            return bool(value)
        return "" if value is None else str(value)


@dataclass
class StrategyForm:
    plugin: GradingPlugin
    fields: list[SchemaField] = field(default_factory=list)


def schema_fields(plugin: GradingPlugin) -> list[SchemaField]:
    """The plugin's parameters, in schema order, as form fields."""
    schema = plugin.Params.model_json_schema()
    required = set(schema.get("required", []))
    return [
        _field(name, spec, name in required) for name, spec in schema.get("properties", {}).items()
    ]


def _field(name: str, spec: dict[str, Any], required: bool) -> SchemaField:
    label = setting_label(name) or spec.get("title") or name.replace("_", " ").capitalize()
    common = {
        "name": name,
        "label": label,
        "help": spec.get("description", ""),
        "default": spec.get("default"),
        "required": required,
    }
    shape, nullable = _scalar_shape(spec)
    if shape is None:
        return SchemaField(widget="json", **common)
    common["nullable"] = nullable
    kind = shape.get("type")
    if "enum" in shape:
        return SchemaField(widget="select", options=tuple(map(str, shape["enum"])), **common)
    if kind == "boolean":
        return SchemaField(widget="checkbox", **common)
    if kind in ("number", "integer"):
        low = shape.get("minimum", shape.get("exclusiveMinimum"))
        high = shape.get("maximum", shape.get("exclusiveMaximum"))
        return SchemaField(widget=kind, minimum=low, maximum=high, **common)
    long = shape.get("maxLength", _LONG_STRING + 1) > _LONG_STRING
    return SchemaField(widget="textarea" if long else "text", **common)


def _scalar_shape(spec: dict[str, Any]) -> tuple[dict[str, Any] | None, bool]:
    """The scalar schema of a setting (``X`` or ``X | None``), or None when it is nested."""
    nullable = False
    if "anyOf" in spec:
        branches = [b for b in spec["anyOf"] if b.get("type") != "null"]
        nullable = len(branches) < len(spec["anyOf"])
        if len(branches) != 1:
            return None, nullable
        spec = branches[0]
    if spec.get("type") in ("string", "number", "integer", "boolean"):
        return spec, nullable
    return None, nullable


def initial_values(plugin: GradingPlugin, stored: dict[str, Any]) -> dict[str, Any]:
    """What the plugin's inputs show: stored settings over the schema's defaults."""
    return {f.name: f.shown(stored.get(f.name, f.default)) for f in schema_fields(plugin)}


def typed_values(plugin: GradingPlugin, form: MultiDict) -> dict[str, Any]:
    """What the teacher typed in the plugin's inputs, as the form shows it again."""
    values: dict[str, Any] = {}
    for f in schema_fields(plugin):
        name = f.input_name(plugin.name)
        values[f.name] = name in form if f.widget == "checkbox" else form.get(name, "")
    return values


def read_params(plugin: GradingPlugin, form: MultiDict) -> tuple[dict[str, Any], dict[str, str]]:
    """The chosen plugin's settings from the form, and the inputs that could not be read.

    Empty inputs are left out (the schema's default applies); numbers stay text for the
    pydantic model to read, so its bounds and messages are the only rules.
    """
    params: dict[str, Any] = {}
    problems: dict[str, str] = {}
    for f in schema_fields(plugin):
        name = f.input_name(plugin.name)
        if f.widget == "checkbox":
            params[f.name] = name in form
            continue
        raw = form.get(name, "")
        if not raw.strip():
            continue
        if f.widget == "json":
            try:
                params[f.name] = safe_json.loads(raw)
            except ValueError as exc:
                problems[f"params.{f.name}"] = _("This is not valid JSON: %(error)s", error=exc)
            continue
        params[f.name] = raw.strip() if f.widget != "textarea" else raw
    return params, problems


def reference_text(upload: FileStorage, data_dir: str, limit_bytes: int) -> str:
    """The text of the teacher's reference document (PDF, Word, text or Markdown).

    Raises ValueError with a message for the teacher.
    """
    stream = upload.stream
    incoming = (
        stream
        if isinstance(stream, IncomingFile)
        else IncomingFile.copy_of(stream, incoming_dir(data_dir), limit_bytes)
    )
    try:
        kind = sniff(upload.filename or "", incoming.head)
        if kind not in REFERENCE_KINDS:
            raise ValueError(_("Reference material must be a PDF, Word, text or Markdown file."))
        incoming.flush()
        check(incoming.path, kind)  # bounded: extract alone would walk a 100 000-page PDF
        text = extract(incoming.path, kind).text.strip()
    except ExtractionError as exc:
        raise ValueError(localize(exc.user_message)) from exc
    finally:
        if incoming is not stream:
            incoming.close()
    if not text:
        raise ValueError(_("No text could be read from the reference material."))
    return text
