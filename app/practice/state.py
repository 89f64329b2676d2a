"""What the practice platform remembers: one course, its links, line items and the scores
the tool sent, kept in a small JSON file in the instance folder so a restart loses nothing.

A real LMS has a database; a practice platform for one person needs only this. Every change
goes through a method that holds the lock and writes the file, so the web threads and the
page that lists scores never see half an update.
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from flask import current_app

from app.practice import exercise

COURSE_ID = "practice-course"
COURSE_TITLE = "Practice course"


@dataclass(frozen=True)
class Person:
    sub: str
    name: str
    email: str
    role: str  # "student" or "teacher"


#: The made-up class: the NRPS roster, and the people the page can launch as.
PEOPLE = (
    Person("practice-teacher", "Tomás Teacher", "teacher@practice.invalid", "teacher"),
    Person("practice-student-1", "Ada Student", "ada@practice.invalid", "student"),
    Person("practice-student-2", "Boris Student", "boris@practice.invalid", "student"),
    Person("practice-student-3", "Chen Student", "chen@practice.invalid", "student"),
    Person("practice-student-4", "Dalia Student", "dalia@practice.invalid", "student"),
)
LAUNCHING_AS = {"student": PEOPLE[1], "teacher": PEOPLE[0]}


@dataclass
class Link:
    id: str
    title: str
    custom: dict[str, str] = field(default_factory=dict)
    lineitem_id: int | None = None


@dataclass
class LineItem:
    id: int
    label: str
    score_maximum: float
    resource_link_id: str | None = None
    resource_id: str | None = None
    tag: str | None = None

    def to_json(self, url: str) -> dict[str, Any]:
        body: dict[str, Any] = {"id": url, "label": self.label, "scoreMaximum": self.score_maximum}
        for key, value in (
            ("resourceLinkId", self.resource_link_id),
            ("resourceId", self.resource_id),
            ("tag", self.tag),
        ):
            if value:
                body[key] = value
        return body


@dataclass
class Score:
    lineitem_id: int
    user_id: str
    activity_progress: str
    grading_progress: str
    timestamp: str
    received_at: str
    score_given: float | None = None
    score_maximum: float | None = None
    comment: str | None = None


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Replace ``path`` at once (a crash mid-write leaves the previous file whole)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1))
    os.replace(tmp, path)


def current_state() -> PracticeState:
    """The state of the practice app serving this request."""
    return current_app.extensions["practice_state"]


class PracticeState:
    """The course's links, line items and received scores, persisted to ``path``."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._lock = threading.Lock()
        self.links: dict[str, Link] = {}
        self.lineitems: dict[int, LineItem] = {}
        self.scores: list[Score] = []
        if path.exists():
            self._load(json.loads(path.read_text()))
        if not self.links:
            self.add_link("Practice essay", score_maximum=10.0)
        if exercise.LINK_ID not in self.links:  # new, or a course from before it existed
            self.add_link(
                exercise.TITLE, score_maximum=exercise.MAX_SCORE, link_id=exercise.LINK_ID
            )

    # -- links and line items ----------------------------------------------------------

    def add_link(
        self,
        title: str,
        *,
        custom: dict[str, str] | None = None,
        score_maximum: float | None = None,
        label: str | None = None,
        resource_id: str | None = None,
        tag: str | None = None,
        link_id: str | None = None,
    ) -> Link:
        """A new resource link in the course, with its own gradebook column when scored;
        ``link_id`` fixes its id (otherwise the next free ``practice-link-N``)."""
        with self._lock:
            link = Link(id=link_id or self._next_link_id(), title=title, custom=custom or {})
            if score_maximum is not None:
                item = self._new_lineitem(label or title, score_maximum, link.id)
                item.resource_id, item.tag = resource_id, tag
                link.lineitem_id = item.id
            self.links[link.id] = link
            self._save()
            return link

    def _next_link_id(self) -> str:
        """Numbered among the numbered links only, so the fixed ones shift no number."""
        number = 1 + sum(link_id.startswith("practice-link-") for link_id in self.links)
        while f"practice-link-{number}" in self.links:
            number += 1
        return f"practice-link-{number}"

    def add_lineitem(self, body: dict[str, Any]) -> LineItem:
        with self._lock:
            item = self._new_lineitem(
                str(body["label"]), float(body["scoreMaximum"]), body.get("resourceLinkId")
            )
            item.resource_id, item.tag = body.get("resourceId"), body.get("tag")
            self._save()
            return item

    def update_lineitem(self, lineitem_id: int, body: dict[str, Any]) -> LineItem:
        with self._lock:
            item = self.lineitems[lineitem_id]
            item.label, item.score_maximum = str(body["label"]), float(body["scoreMaximum"])
            self._save()
            return item

    def _new_lineitem(self, label: str, maximum: float, link_id: str | None) -> LineItem:
        item = LineItem(max(self.lineitems, default=0) + 1, label, maximum, link_id)
        self.lineitems[item.id] = item
        return item

    # -- scores ------------------------------------------------------------------------

    def add_score(self, lineitem_id: int, body: dict[str, Any]) -> Score:
        score = Score(
            lineitem_id=lineitem_id,
            user_id=str(body["userId"]),
            activity_progress=str(body["activityProgress"]),
            grading_progress=str(body["gradingProgress"]),
            timestamp=str(body["timestamp"]),
            received_at=datetime.now(UTC).isoformat(timespec="seconds"),
            score_given=body.get("scoreGiven"),
            score_maximum=body.get("scoreMaximum"),
            comment=body.get("comment"),
        )
        with self._lock:
            self.scores.append(score)
            self._save()
        return score

    def latest_scores(self, lineitem_id: int) -> list[Score]:
        """The newest score per student for one line item: what a gradebook shows."""
        latest: dict[str, Score] = {}
        with self._lock:
            for score in self.scores:
                if score.lineitem_id == lineitem_id:
                    latest[score.user_id] = score
        return list(latest.values())

    # -- persistence -------------------------------------------------------------------

    def _save(self) -> None:
        data = {
            "links": [asdict(link) for link in self.links.values()],
            "lineitems": [asdict(item) for item in self.lineitems.values()],
            "scores": [asdict(score) for score in self.scores],
        }
        write_json(self._path, data)

    def _load(self, data: dict[str, Any]) -> None:
        self.links = {link["id"]: Link(**link) for link in data.get("links", [])}
        self.lineitems = {item["id"]: LineItem(**item) for item in data.get("lineitems", [])}
        self.scores = [Score(**score) for score in data.get("scores", [])]
