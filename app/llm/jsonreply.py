"""Reading JSON out of a model's reply, for endpoints that have no JSON mode.

Models wrap JSON in prose, Markdown fences or both. This tries, in order: the whole reply,
each fenced block, and each balanced ``{...}`` or ``[...]`` span; the first that parses wins.
"""

from __future__ import annotations

import re
from typing import Any

from app import safe_json
from app.redaction import redact

#: Characters of an unreadable reply a log line keeps: enough to see what the model did
#: (prose instead of JSON, a cut-off object), not the student's work it may quote.
PREVIEW_CHARS = 120

# Blanks before the one line break only: \s*\n retried every break of a run of blank lines.
_FENCE = re.compile(r"```(?:json|JSON)?[^\S\n]*\n(.*?)```", re.DOTALL)


def parse_json_reply(text: str) -> Any:
    """The first JSON value found in ``text``; ValueError when there is none."""
    candidates = [text.strip(), *(m.group(1).strip() for m in _FENCE.finditer(text))]
    candidates += _balanced_spans(text)
    for candidate in candidates:
        try:
            return safe_json.loads(candidate)
        except ValueError:  # JSONTooDeep too: a hostile reply may nest ten thousand deep
            continue
    raise ValueError("no JSON object in the reply")


def _balanced_spans(text: str, limit: int = 20) -> list[str]:
    """Up to ``limit`` outermost ``{...}``/``[...]`` spans, respecting strings and escapes."""
    spans: list[str] = []
    depth, start, in_string, escaped = 0, -1, False, False
    for index, char in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
            continue
        if char == '"' and depth:
            in_string = True
        elif char in "{[":
            if depth == 0:
                start = index
            depth += 1
        elif char in "}]" and depth:
            depth -= 1
            if depth == 0:
                spans.append(text[start : index + 1])
                if len(spans) >= limit:
                    break
    return spans


def preview(reply: str, limit: int = PREVIEW_CHARS) -> str:
    """The start of ``reply`` for a log line: on one line, cut to ``limit`` characters, with
    URL-borne credentials redacted (child loggers' records pass no filter of the ``app`` logger,
    so the text is redacted here), quoted so that its end is visible."""
    text = redact(" ".join(reply.split()))
    return repr(text if len(text) <= limit else text[:limit] + "…")
