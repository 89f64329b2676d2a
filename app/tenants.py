"""Organizations: the tenants every platform, activity and API evaluation belongs to.

An LMS registration gets an organization of its own when it is added (by the CLI, by
Dynamic Registration or by the admin page); REST API clients create theirs through
``/organizations``. Queries for tenant data filter on the organization (API) or on the
platform (LTI pages, whose page token fixes the platform), never on ids from the request
alone.

Files follow the same split: a platform's uploads live in the folder ``p<id>`` of the data
directory, an organization's API uploads in ``o<id>``, and the model replies cached while
grading them in a folder of the same name in the LLM cache directory. Removing a tenant
removes those folders, once its rows are gone.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from sqlalchemy import select

from app.extensions import db
from app.llm import endpoints
from app.llm.cache import scope_path
from app.llm.errors import LLMForbiddenError
from app.models import Organization, Platform
from app.text import clean_name

log = logging.getLogger(__name__)

#: Length of a tenant's name (``organization.name``, ``platform.name``).
NAME_CHARS = 200


def platform_folder(platform_id: int) -> str:
    """The folder of a platform's files, in the data and in the LLM cache directory."""
    return f"p{platform_id}"


def student_folder(platform_id: int, activity_id: int, user_id: int) -> str:
    """The folder of one student's uploads to one activity, in the data and in the LLM cache
    directory: below the platform's, so removing the platform removes it too."""
    return f"{platform_folder(platform_id)}/{activity_folder(activity_id)}/u{user_id}"


def activity_folder(activity_id: int) -> str:
    """An activity's folder inside its platform's."""
    return f"a{activity_id}"


def organization_folder(organization_id: int) -> str:
    """The folder of an organization's API uploads and their cached model replies."""
    return f"o{organization_id}"


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


def model_base_urls(org: Organization | None) -> tuple[str, ...]:
    """The organization's allowlist of model servers (app.llm.endpoints); empty allows any."""
    return tuple(org.model_base_urls or ()) if org is not None else ()


def set_model_base_urls(org: Organization, urls: Iterable[str] | str) -> tuple[str, ...]:
    """Replace the organization's allowlist (normalized; empty lifts it); returns it. Raises
    ValueError naming an entry that is not a base URL. Uncommitted; logged (organization
    changes have no audit table)."""
    org.model_base_urls = list(endpoints.parse(urls))
    log.info(
        "organization %s: model servers allowed: %s",
        org.external_id,
        ", ".join(org.model_base_urls) or "any the site allows",
    )
    return tuple(org.model_base_urls)


def forbidden_model(org: Organization | None, config: Mapping[str, Any]) -> str | None:
    """Why the configured model server may not grade this organization's work (the message
    the grading would fail with), or None when it may or when none is configured yet (a
    server found later is checked at each call). Setting up an activity or sending an API
    evaluation asks first, so a teacher learns it then, not from a failed grading."""
    base_url = str(config.get("EVALUAITOR_LLM_BASE_URL") or "").strip()
    if not base_url:
        return None
    try:
        endpoints.Allowlists.of(config, model_base_urls(org)).check(base_url)
    except LLMForbiddenError as exc:
        return exc.user_message
    return None


def attach_platform(platform: Platform) -> Organization:
    """Give a new platform its own organization (``platform-<id>``), unless it has one."""
    if platform.organization is not None:
        return platform.organization
    db.session.flush()  # the platform id names the organization
    org, _ = upsert_organization(f"platform-{platform.id}", name=platform.name)
    platform.organization = org
    return org


def remove_platform(platform: Platform, *, data_dir: str, cache_dir: str | None) -> None:
    """Delete a platform with everything under it (the database cascades to its courses,
    activities, submissions and grades), then its uploaded files and cached model replies.

    The files go only after the commit succeeded, so no remaining row points to a deleted
    file; files already missing are fine. The platform's organization stays (it may hold
    other platforms or API evaluations).
    """
    folder = platform_folder(platform.id)
    db.session.delete(platform)
    try:
        db.session.commit()
    except Exception:
        db.session.rollback()
        raise
    _remove_tree(Path(data_dir) / folder)
    if cache_dir:
        _remove_tree(scope_path(cache_dir, folder))


def _remove_tree(path: Path) -> None:
    """Delete a folder and what it holds; what is already gone is not an error."""

    def missing_is_fine(function: Any, name: str, excinfo: Any) -> None:
        if not isinstance(excinfo[1], FileNotFoundError):
            raise excinfo[1]

    shutil.rmtree(path, onerror=missing_is_fine)
