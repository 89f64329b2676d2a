"""What each side adds to the core, registered by that side when the app is built.

The core calls an :class:`Owner` for what only the owner knows (what the file is graded
against, whose folder it lives in, what follows a final state) and a :class:`Sender` to
deliver one message. It never imports the LMS or the API side: they import it and register
here (app.create_app), so the dependencies point one way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from app.grading.base import Assignment
from app.grading.examples import Candidate
from app.models import GradingJob
from app.models.jobs import Delivery


@dataclass(frozen=True)
class Brief:
    """What the owner asks for: a strategy with its settings and what the file is graded
    against; ``names`` are the student's and ``comment`` their note with the upload, both
    handled by app.grading.runner (the names masked wherever they appear, the comment masked
    like the text) before any model sees them. ``model_base_urls`` is the organization's
    allowlist of model servers (app.llm.endpoints): no other server receives the work."""

    plugin: str
    assignment: Assignment
    params: dict[str, Any] | None = None
    names: Sequence[str] = field(default_factory=tuple)
    comment: str = ""
    model_base_urls: Sequence[str] = field(default_factory=tuple)


class Owner(Protocol):
    def tenant(self, job: GradingJob) -> str:
        """The folder of its cached model replies, as of its files (app.tenants): the tenant's,
        or one student's inside it, so that erasing them removes exactly theirs (app.privacy)."""

    def brief(self, job: GradingJob) -> Brief:
        """How to grade it; may read the LMS first (its gradebook column's maximum)."""

    def examples(self, job: GradingJob, text: str) -> tuple[Candidate, ...]:
        """The teacher's graded examples this grading shows the model, chosen now (so a
        regrade uses the ones that exist then) by likeness to ``text``; none where there
        is no teacher (app.grading.examples)."""

    def settle(self, job: GradingJob) -> Sequence[Delivery]:
        """Called once the job reached a final state, in the transaction that stored it: the
        owner's own effects, and the deliveries to queue once that transaction commits."""


class Sender(Protocol):
    def lane(self, row: Delivery) -> str:
        """The target ``row`` changes (a student's grade in one column, one callback): one
        attempt at a time per lane, so an older message never overtakes a newer one on the
        way (app.evaluation.delivery.lane)."""

    def overtaken(self, row: Delivery) -> bool:
        """Whether a newer message made this one pointless (it would roll something back);
        asked while holding the lane, just before sending."""

    def send(self, row: Delivery) -> None:
        """One attempt; raises :class:`app.evaluation.delivery.DeliveryFailed` or anything
        else on failure (unexpected errors are retried too)."""


_owners: dict[str, Owner] = {}
_senders: dict[str, tuple[type[Delivery], Sender, str]] = {}


def register_owner(kind: str, owner: Owner) -> None:
    """``kind`` is the owner's name as :attr:`GradingJob.owner_kind` gives it."""
    _owners[kind] = owner


def register_sender(model: type[Delivery], sender: Sender, intervals_setting: str) -> None:
    """``intervals_setting`` names the configured delays between attempts."""
    _senders[model.__tablename__] = (model, sender, intervals_setting)


def owner_of(job: GradingJob) -> Owner:
    return _owners[job.owner_kind]


def sender_for(kind: str) -> tuple[type[Delivery], Sender, str]:
    return _senders[kind]


def delivery_models() -> list[type[Delivery]]:
    return [model for model, _sender, _setting in _senders.values()]
