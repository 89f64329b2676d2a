"""The platform's gradebook: enrolments, line items and grades, with Moodle 4.5's semantics.

Only the behaviour a tool can observe is modelled, but that part follows Moodle's code
(mod/lti/service/gradebookservices and lib/grade) rather than the AGS spec where the two differ.
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass, field
from datetime import datetime
from http import HTTPStatus
from typing import Any

from .vocab import ACTIVITY_PROGRESS, GRADING_PROGRESS, LEARNER


class ServiceError(Exception):
    """A refused service request, like Moodle's `throw new \\Exception($reason, $code)`."""

    def __init__(self, status: int, reason: str = "") -> None:
        self.status = status
        self.reason = reason or HTTPStatus(status).phrase
        super().__init__(f"{status} {self.reason}")


@dataclass
class User:
    user_id: str
    roles: list[str]
    given_name: str
    family_name: str
    email: str

    @property
    def name(self) -> str:
        return f"{self.given_name} {self.family_name}"


@dataclass
class LineItem:
    n: int
    label: str
    score_maximum: float
    resource_id: str = ""
    tag: str = ""
    resource_link_id: str | None = None
    # The activity's own grade item (made when the activity was created), as opposed to a
    # column the tool created through AGS: Moodle dates their grades differently.
    coupled: bool = False

    def to_json(self, url: str) -> dict[str, Any]:
        data: dict[str, Any] = {
            "id": url,
            "label": self.label,
            "scoreMaximum": self.score_maximum,
            "resourceId": self.resource_id,
            "tag": self.tag,
        }
        if self.resource_link_id is not None:
            data["resourceLinkId"] = data["ltiLinkId"] = self.resource_link_id
        return data


@dataclass
class Gradebook:
    users: dict[str, User] = field(default_factory=dict)
    lineitems: dict[int, LineItem] = field(default_factory=dict)
    # Launched resource link id -> its coupled line item (None while the activity is ungraded);
    # kept after the item is deleted, so that it is not made again.
    links: dict[str, int | None] = field(default_factory=dict)
    # (line item n, user id) -> the grade Moodle holds; see `record_score` for the keys.
    grades: dict[tuple[int, str], dict[str, Any]] = field(default_factory=dict)
    # Every accepted score as posted, plus "lineitem_n".
    scores: list[dict[str, Any]] = field(default_factory=list)
    _numbers: itertools.count = field(
        default_factory=lambda: itertools.count(1), init=False, repr=False
    )

    def enrol(
        self,
        user_id: str,
        roles: list[str],
        *,
        given_name: str | None = None,
        family_name: str | None = None,
        email: str | None = None,
    ) -> User:
        """Enrol (or re-enrol with new roles) a user; only Learners can receive scores."""
        known = self.users.get(user_id)
        user = User(
            user_id=user_id,
            roles=list(roles),
            given_name=given_name or (known.given_name if known else "Test"),
            family_name=family_name or (known.family_name if known else f"User {user_id}"),
            email=email or (known.email if known else f"user{user_id}@example.com"),
        )
        self.users[user_id] = user
        return user

    def launch_link(
        self, resource_link_id: str, *, graded: bool, label: str, score_maximum: float
    ) -> LineItem | None:
        """Record a launched activity; return its grade item, made on its first graded launch.

        None for an ungraded activity, or once its grade item has been deleted.
        """
        if graded and self.links.get(resource_link_id) is None:
            item = self.add_item(
                label=label,
                score_maximum=score_maximum,
                resource_link_id=resource_link_id,
                coupled=True,
            )
            self.links[resource_link_id] = item.n
        n = self.links.setdefault(resource_link_id, None)
        return None if n is None else self.lineitems.get(n)

    def add_item(self, *, label: str, score_maximum: float, **fields: Any) -> LineItem:
        item = LineItem(
            n=next(self._numbers), label=label, score_maximum=float(score_maximum), **fields
        )
        self.lineitems[item.n] = item
        return item

    def item(self, n: int) -> LineItem:
        try:
            return self.lineitems[n]
        except KeyError:
            raise ServiceError(404, f"Not Found: Grade item {n} doesn't exist") from None

    def create_item(self, data: Any) -> LineItem:
        """POST lineitems: a new column owned by the tool."""
        label, maximum, link = self._item_fields(data)
        return self.add_item(
            label=label,
            score_maximum=maximum,
            resource_id=str(data.get("resourceId", "")),
            tag=str(data.get("tag", "")),
            resource_link_id=link,
        )

    def update_item(self, n: int, data: Any) -> LineItem:
        """PUT lineitem; a new maximum rescales existing grades, keeping their percentage.

        Moodle's rescale (grade_item::rescale_grades_keep_percentage) saves each grade again,
        which stamps it with the current second: a score sent in that second is then refused.
        """
        item = self.item(n)
        label, maximum, link = self._item_fields(data)
        if maximum != item.score_maximum:
            now = int(time.time())
            for (item_n, _), grade in self.grades.items():
                if item_n != n or (grade["grade"] is None and grade["comment"] is None):
                    continue
                if grade["grade"] is not None:
                    grade["grade"] = round(grade["grade"] * maximum / item.score_maximum, 5)
                grade["timemodified"] = now
        item.label, item.score_maximum = label, maximum
        item.resource_id, item.tag = str(data.get("resourceId", "")), str(data.get("tag", ""))
        if link is not None:
            item.resource_link_id = link
        return item

    def delete_item(self, n: int) -> None:
        """A deleted column takes its grades with it; later requests to it get 404."""
        self.item(n)
        del self.lineitems[n]
        for key in [key for key in self.grades if key[0] == n]:
            del self.grades[key]

    def _item_fields(self, data: Any) -> tuple[str, float, str | None]:
        if not isinstance(data, dict):
            raise ServiceError(400, "No label or Score Maximum")
        label, maximum = data.get("label"), data.get("scoreMaximum")
        if not isinstance(label, str) or not label.strip():
            raise ServiceError(400, "No label or Score Maximum: label must be a non-empty string")
        if not _is_number(maximum) or maximum <= 0:
            raise ServiceError(400, "No label or Score Maximum: scoreMaximum must be a number > 0")
        link = data.get("resourceLinkId", data.get("ltiLinkId"))
        if link is not None and str(link) not in self.links:
            raise ServiceError(403, f"Invalid LTI id supplied: no resource link {link!r}")
        return label, float(maximum), None if link is None else str(link)

    def record_score(self, n: int, score: Any) -> None:
        """Apply a posted score the way Moodle's scores resource and gradebook do.

        * 409 unless the score's timestamp is strictly later, in whole seconds, than the
          `timemodified` Moodle holds for the grade (none is held once a grade is cleared).
        * Any gradingProgress other than FullyGraded discards scoreGiven, so it CLEARS the grade.
        * scoreGiven is rescaled to the line item's maximum; comment replaces the feedback.
        * The held `timemodified` is the gradebook's own clock for the activity's grade item but
          the score's timestamp for tool-created columns; an unchanged grade keeps the old one.
        """
        item = self.item(n)
        user_id, stamp = self._check_score(score)
        key = (n, user_id)
        held = self.grades.get(key)
        if held and held["timemodified"] is not None and held["timemodified"] >= stamp:
            raise ServiceError(
                409, f"Refusing score with an earlier timestamp for item {n} and user {user_id}"
            )
        given = score.get("scoreGiven") if score["gradingProgress"] == "FullyGraded" else None
        maximum = float(score.get("scoreMaximum") or 1)
        grade = None if given is None else round(given * item.score_maximum / maximum, 5)
        comment = score.get("comment") or None
        unchanged = held is not None and (held["grade"], held["comment"]) == (grade, comment)
        if item.coupled and grade is None and comment is None:
            held_stamp = None
        elif unchanged:
            held_stamp = held["timemodified"]
        elif item.coupled or given is None:
            held_stamp = int(time.time())
        else:
            held_stamp = stamp
        self.grades[key] = {
            "userId": user_id,
            "lineitem_n": n,
            "scoreGiven": given,
            "scoreMaximum": maximum,
            "grade": grade,
            "comment": comment,
            "activityProgress": score["activityProgress"],
            "gradingProgress": score["gradingProgress"],
            "timestamp": score["timestamp"],
            "timemodified": held_stamp,
        }
        self.scores.append({"lineitem_n": n, **score})

    def _check_score(self, score: Any) -> tuple[str, int]:
        """Validate a score body; return its user id and its timestamp in whole seconds."""
        if not isinstance(score, dict):
            raise ServiceError(400, "Incorrect score received: not a JSON object")
        problems = []
        user_id = score.get("userId")
        if not isinstance(user_id, str | int) or isinstance(user_id, bool) or user_id == "":
            problems.append("userId missing")
        elif not self._gradable(str(user_id)):
            problems.append(f"user {user_id} is not a gradable (Learner) user of the course")
        if score.get("activityProgress") not in ACTIVITY_PROGRESS:
            problems.append(f"activityProgress must be one of {sorted(ACTIVITY_PROGRESS)}")
        if score.get("gradingProgress") not in GRADING_PROGRESS:
            problems.append(f"gradingProgress must be one of {sorted(GRADING_PROGRESS)}")
        stamp = _parse_timestamp(score.get("timestamp"))
        if stamp is None:
            problems.append("timestamp must be ISO 8601 with a timezone")
        given, maximum = score.get("scoreGiven"), score.get("scoreMaximum")
        if maximum is not None and (not _is_number(maximum) or maximum <= 0):
            problems.append("scoreMaximum must be a number > 0")
        if given is not None:
            if not _is_number(given) or given < 0:
                problems.append("scoreGiven must be a number >= 0")
            elif maximum is None:
                problems.append("scoreGiven requires scoreMaximum")
            elif _is_number(maximum) and given > maximum:
                problems.append("scoreGiven exceeds scoreMaximum")
        if problems or stamp is None:
            raise ServiceError(400, "Incorrect score received: " + "; ".join(problems))
        return str(user_id), stamp

    def _gradable(self, user_id: str) -> bool:
        user = self.users.get(user_id)
        return user is not None and LEARNER in user.roles


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _parse_timestamp(value: Any) -> int | None:
    """Whole seconds since the epoch, as PHP's strtotime() gives Moodle; None if unusable."""
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    return None if moment.tzinfo is None else math.floor(moment.timestamp())
