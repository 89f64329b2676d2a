"""The cache of model replies: one JSON file per request, a folder per tenant, bounded.

Replies quote and judge students' work, so the cache holds personal data and must not keep
it for ever nor mix tenants:

- each tenant's entries live in a folder of its own, named as in the data directory
  (``p<platform id>``, ``o<organization id>``, see :mod:`app.tenants`; ``evaluaitor grade``
  uses ``local``), so removing a tenant removes its folder and nothing of anyone else's; a
  tenant's replies are not served to another one either. An LMS student's replies go one
  level deeper, as their files do (``p<platform>/a<activity>/u<user>``), so erasing one
  student, activity or course removes exactly their replies (app.privacy);
- entries older than the age bound are deleted, and the oldest first while the cache is over
  its size bound. A writer checks at most every ``prune_every`` seconds (the time of a marker
  file tells when the last check ran), so a write costs one ``stat`` besides the entry.

Age counts from when a reply was stored: reading it again does not keep it longer. Entries of
the layout before tenant folders (``<dir>/<2 hex digits>/<key>.json``) are no longer read; the
age bound removes them.
"""

from __future__ import annotations

import json
import logging
import os
import re
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from app.llm.client import Completion, Usage

log = logging.getLogger(__name__)

#: The folder of replies asked for outside any tenant (``evaluaitor grade`` on local files).
LOCAL_SCOPE = "local"
#: Marker file whose modification time is the last prune.
_PRUNED_MARKER = ".pruned"
_SCOPE = re.compile(r"[a-z0-9][a-z0-9-]*")


@dataclass(frozen=True)
class CacheLimits:
    """Bounds of the whole cache; 0 leaves that bound off."""

    max_bytes: int
    max_age_seconds: float
    #: Seconds between two checks by writers.
    prune_every: float = 600.0


def scope_path(directory: str | Path, scope: str) -> Path:
    """The folder of one tenant's entries: ``scope`` is a folder name, or a path of them below
    the tenant's (``p3/a5/u7``: one student's work at one activity, so that erasing the
    student removes exactly their replies, see app.privacy)."""
    parts = scope.split("/")
    if not all(_SCOPE.fullmatch(part) for part in parts):
        raise ValueError(f"not a cache scope: {scope!r}")
    return Path(directory).joinpath(*parts)


class ReplyCache:
    """Replies stored as one JSON file per key; safe for several processes on one host.

    With a ``scope`` the entries go to that tenant's folder under ``directory``; with
    ``limits`` every writer keeps the whole ``directory`` within them.
    """

    def __init__(
        self, directory: str | Path, *, scope: str = "", limits: CacheLimits | None = None
    ) -> None:
        self._root = Path(directory)
        self._dir = scope_path(directory, scope) if scope else self._root
        self._limits = limits

    def get(self, key: str, *, since: float | None = None) -> Completion | None:
        """The reply stored under ``key``; with ``since`` (a time.time()), only one stored
        at or after that time."""
        path = self._dir / key[:2] / f"{key}.json"
        try:
            if since is not None and path.stat().st_mtime < since:
                return None
            data = json.loads(path.read_text())
            return Completion(**{**data, "usage": Usage(**data["usage"])})
        except (OSError, ValueError, TypeError, KeyError):
            return None

    def put(self, key: str, completion: Completion) -> None:
        folder = self._dir / key[:2]
        folder.mkdir(parents=True, exist_ok=True)
        fd, temp = tempfile.mkstemp(dir=folder, prefix=".tmp-")
        with os.fdopen(fd, "w") as handle:
            json.dump(asdict(completion), handle)
        os.replace(temp, folder / f"{key}.json")
        if self._limits is not None and _prune_due(self._root, self._limits.prune_every):
            try:
                prune(self._root, self._limits)
            except OSError as exc:  # the reply is stored; a failed clean-up waits for the next
                log.warning("could not prune the LLM cache: %s", exc)


def prune(directory: str | Path, limits: CacheLimits, *, now: float | None = None) -> int:
    """Delete the entries older than the age bound, then the oldest until the cache fits its
    size bound; returns how many were deleted. Entries another process deletes meanwhile are
    skipped."""
    now = time.time() if now is None else now
    entries: list[tuple[float, int, Path]] = []
    for path in Path(directory).rglob("*.json"):
        try:
            info = path.stat()
        except FileNotFoundError:
            continue
        entries.append((info.st_mtime, info.st_size, path))
    entries.sort()
    total = sum(size for _, size, _ in entries)
    removed = 0
    for stored_at, size, path in entries:  # oldest first
        too_old = limits.max_age_seconds > 0 and now - stored_at > limits.max_age_seconds
        too_big = limits.max_bytes > 0 and total > limits.max_bytes
        if not (too_old or too_big):
            break  # every later entry is newer, and the cache fits
        path.unlink(missing_ok=True)
        total -= size
        removed += 1
    return removed


def _prune_due(directory: Path, every: float) -> bool:
    """Whether the last prune is older than ``every`` seconds; if so, mark it done now."""
    marker = directory / _PRUNED_MARKER
    try:
        if time.time() - marker.stat().st_mtime < every:
            return False
    except FileNotFoundError:
        pass
    marker.touch()
    return True
