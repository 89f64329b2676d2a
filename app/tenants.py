"""Organizations: the tenants every platform, activity and API evaluation belongs to.

An LMS registration gets an organization of its own when it is added (by the CLI, by
Dynamic Registration or by the admin page); REST API clients create theirs through
``/organizations``. Queries for tenant data filter on the organization (API) or on the
platform (LTI pages, whose page token fixes the platform), never on ids from the request
alone.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from app.extensions import db
from app.models import Organization, Platform
from app.text import clean_name

#: Length of ``organization.name``.
NAME_CHARS = 200


def upsert_organization(
    external_id: str, *, name: str | None = None, config: dict[str, Any] | None = None
) -> tuple[Organization, bool]:
    """The organization with this external id, created or updated; and whether it is new.

    The name is shown on the admin page: it is stored cleaned (app.text). Uncommitted: the
    caller commits with whatever else it changes.
    """
    name = clean_name(name, NAME_CHARS) if name is not None else None
    org = db.session.scalar(select(Organization).where(Organization.external_id == external_id))
    created = org is None
    if org is None:
        org = Organization(external_id=external_id, name=name or external_id, config={})
        db.session.add(org)
    elif name is not None:
        org.name = name
    if config is not None:
        org.config = config
    db.session.flush()
    return org, created


def attach_platform(platform: Platform) -> Organization:
    """Give a new platform its own organization (``platform-<id>``), unless it has one."""
    if platform.organization is not None:
        return platform.organization
    db.session.flush()  # the platform id names the organization
    org, _ = upsert_organization(f"platform-{platform.id}", name=platform.name)
    platform.organization = org
    return org
