"""JSON that someone else wrote, read so its shape cannot crash the reader.

Python's decoder recurses once per ``[`` or ``{``: a 130 kB id_token of nothing but brackets
raises ``RecursionError``, which no ``except ValueError`` handler catches, and the request ends
in HTTP 500 (in a worker, the job dies instead of failing cleanly). Every parser of JSON from
outside, an LMS's token, key set, registration, AGS or NRPS answer, an API client's body, a
model's reply, a form field, goes through :func:`loads`, which counts the nesting first (no
recursion, linear in the text) and refuses more than :data:`MAX_DEPTH` levels with
:class:`JSONTooDeep`, a ``ValueError``, so each caller's existing "not valid JSON" answer (a
4xx, the invalid-launch page, a clear outbound error) covers it too.

Flask's ``request.get_json`` reads through ``app.extensions.BoundedJSONProvider``, and JWTs are read
through :func:`jwt_parts` before PyJWT or pylti1p3 decode them again, so neither library ever
sees a document past the bound.
"""

from __future__ import annotations

import base64
import json
import re
from typing import Any

#: Deepest nesting accepted. LTI claims, key sets and API bodies nest four or five levels; a
#: model's grading reply two or three.
MAX_DEPTH = 64

#: A JSON string, escapes included; unrolled so it never backtracks.
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_BRACKET = re.compile(r"[\[\]{}]")
#: A JWS segment: base64url without padding.
_SEGMENT = re.compile(r"[A-Za-z0-9_-]+")


class JSONTooDeep(ValueError):
    """The document nests deeper than the bound: refused before it is parsed."""


def depth_exceeds(text: str, max_depth: int = MAX_DEPTH) -> bool:
    """Whether ``text`` opens more than ``max_depth`` arrays or objects inside each other,
    outside strings. Exact for valid JSON; for broken JSON it is at least as deep as any
    point the decoder could reach before it fails."""
    if text.count("[") + text.count("{") <= max_depth:
        return False
    level = 0
    for match in _BRACKET.finditer(_STRING.sub("", text)):
        if match.group() in "[{":
            level += 1
            if level > max_depth:
                return True
        else:
            level -= 1
    return False


def loads(data: str | bytes | bytearray, *, max_depth: int = MAX_DEPTH, **kwargs: Any) -> Any:
    """``json.loads`` that refuses more than ``max_depth`` levels of nesting with
    :class:`JSONTooDeep`; bytes are decoded as ``json.loads`` would (UTF-8, -16 or -32)."""
    if isinstance(data, bytes | bytearray):
        data = data.decode(json.detect_encoding(data), "surrogatepass")
    if depth_exceeds(data, max_depth):
        raise JSONTooDeep(f"JSON nested deeper than {max_depth} levels")
    return json.loads(data, **kwargs)


def jwt_parts(token: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The header and claims of a compact JWS, read without checking its signature, each
    through :func:`loads`. Raises ValueError for anything that is not such a token."""
    segments = token.split(".")
    if len(segments) != 3 or not all(_SEGMENT.fullmatch(part) for part in segments[:2]):
        raise ValueError("not three base64url segments")
    # binascii.Error and UnicodeDecodeError are ValueErrors too
    header, claims = (
        loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))) for part in segments[:2]
    )
    if not isinstance(header, dict) or not isinstance(claims, dict):
        raise ValueError("its header or payload is not an object")
    return header, claims
