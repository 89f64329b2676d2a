"""What the admin page shows, in a handful of grouped queries, and the on/off switches."""

from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import dataclass, field

from sqlalchemy import func, select

from app import spend, tenants
from app.errors import NotFound
from app.evaluation import budget
from app.extensions import db
from app.models import (
    Activity,
    Deployment,
    Evaluation,
    GradingJob,
    Organization,
    Platform,
    Submission,
)

log = logging.getLogger(__name__)


@dataclass
class PlatformUsage:
    platform: Platform
    activities: int = 0
    submissions: int = 0
    #: LLM tokens spent grading this platform's submissions (from grade provenance).
    tokens: int = 0


@dataclass
class OrganizationUsage:
    organization: Organization | None
    platforms: list[PlatformUsage] = field(default_factory=list)
    evaluations: int = 0
    #: This month's use of its spend limits (None for the platforms of no organization).
    budget: spend.Budget | None = None


def organizations() -> list[OrganizationUsage]:
    """Every organization with its platforms and their usage; platforms of none come last."""
    per_platform = _per_platform_counts()
    evaluations = dict(
        db.session.execute(
            select(Evaluation.organization_id, func.count()).group_by(Evaluation.organization_id)
        ).all()
    )
    rows: dict[int | None, OrganizationUsage] = {
        org.id: OrganizationUsage(
            org, evaluations=evaluations.get(org.id, 0), budget=spend.budget(org)
        )
        for org in db.session.scalars(select(Organization).order_by(Organization.name))
    }
    platforms = db.session.scalars(select(Platform).order_by(Platform.name, Platform.id))
    for platform in platforms:
        row = rows.get(platform.organization_id)
        if row is None:
            row = rows.setdefault(None, OrganizationUsage(None))
        counts = per_platform[platform.id]
        row.platforms.append(PlatformUsage(platform, **counts))
    return list(rows.values())


def _per_platform_counts() -> dict[int, dict[str, int]]:
    counts: dict[int, dict[str, int]] = defaultdict(dict)
    by_platform = {
        "activities": select(Activity.platform_id, func.count(Activity.id)),
        "submissions": select(Activity.platform_id, func.count(Submission.id)).join(
            Submission, Submission.activity_id == Activity.id
        ),
        "tokens": select(
            Activity.platform_id,
            func.coalesce(func.sum(GradingJob.provenance["total_tokens"].as_integer()), 0),
        )
        .join(Submission, Submission.activity_id == Activity.id)
        .join(GradingJob, GradingJob.submission_id == Submission.id),
    }
    for name, query in by_platform.items():
        for platform_id, value in db.session.execute(query.group_by(Activity.platform_id)):
            counts[platform_id][name] = int(value or 0)
    return counts


def set_active(model: type[Platform] | type[Deployment], row_id: int, active: bool):
    """Switch a platform or a deployment on or off; raises NotFound for an unknown id."""
    row = db.session.get(model, row_id)
    if row is None:
        raise NotFound()
    row.is_active = active
    db.session.commit()
    log.info("admin switched %s %s %s", model.__tablename__, row.id, "on" if active else "off")
    return row


def set_limits(organization_id: int, cost: str, tokens: str) -> Organization:
    """Set an organization's monthly limits from the admin's form (empty: none); its
    gradings waiting for budget are checked again. Raises NotFound for an unknown id and
    ValueError for a limit that is no number from 0 up."""
    org = db.session.get(Organization, organization_id)
    if org is None:
        raise NotFound()
    org.monthly_cost_limit = spend.read_limit(cost, whole=False)
    org.monthly_token_limit = spend.read_limit(tokens, whole=True)
    db.session.commit()
    budget.limits_changed(org)
    log.info(
        "admin set the monthly limits of organization %s: cost %s, tokens %s",
        org.id,
        org.monthly_cost_limit,
        org.monthly_token_limit,
    )
    return org


def set_model_servers(organization_id: int, text: str) -> Organization:
    """Replace an organization's allowlist of model servers with the base URLs in ``text``
    (separated by commas, blanks or lines; empty lifts it); raises NotFound for an unknown
    id and ValueError naming an entry that is not a base URL."""
    org = db.session.get(Organization, organization_id)
    if org is None:
        raise NotFound()
    tenants.set_model_base_urls(org, text)
    db.session.commit()
    return org
