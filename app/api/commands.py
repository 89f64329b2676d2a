"""``evaluaitor token …`` and ``evaluaitor org …``: API credentials, managed from the shell.

Tokens and callback secrets are printed once and never stored in the clear (tokens) or
never shown again (secrets); losing one means making a new one.
"""

from __future__ import annotations

from datetime import UTC, datetime

import click
from flask.cli import with_appcontext
from sqlalchemy import select

from app import spend, tenants
from app.api import auth
from app.evaluation import budget
from app.extensions import db
from app.models import ApiToken, Organization


def _organization(external_id: str) -> Organization:
    org = db.session.scalar(select(Organization).where(Organization.external_id == external_id))
    if org is None:
        raise click.ClickException(
            f"No organization {external_id!r}. Create it with 'evaluaitor org add' "
            "or POST /organizations."
        )
    return org


@click.group("token")
def token_group() -> None:
    """Bearer tokens with which an organization reaches the REST API."""


@token_group.command("create")
@click.option("--org", "external_id", required=True, help="The organization's external id.")
@click.option("--name", default="", help="A label, e.g. the client that uses it.")
@with_appcontext
def token_create(external_id: str, name: str) -> None:
    """Create a token and print it (this is the only time it is shown)."""
    _, plain = auth.create_token(_organization(external_id), name)
    db.session.commit()
    click.echo(plain)


@token_group.command("list")
@click.option("--org", "external_id", required=True)
@with_appcontext
def token_list(external_id: str) -> None:
    """One line per token: id, prefix, name, created, last used, revoked."""
    org = _organization(external_id)
    rows = db.session.scalars(
        select(ApiToken).where(ApiToken.organization_id == org.id).order_by(ApiToken.id)
    )
    for token in rows:
        used = token.last_used_at.isoformat(timespec="seconds") if token.last_used_at else "-"
        revoked = (
            "revoked " + token.revoked_at.isoformat(timespec="seconds")
            if token.revoked_at
            else "active"
        )
        created = token.created_at.isoformat(timespec="seconds")
        fields = (str(token.id), token.prefix + "…", token.name or "-", created, used, revoked)
        click.echo("\t".join(fields))


@token_group.command("revoke")
@click.argument("token_id", type=int)
@with_appcontext
def token_revoke(token_id: int) -> None:
    """Refuse this token from now on (kept for the record)."""
    token = db.session.get(ApiToken, token_id)
    if token is None:
        raise click.ClickException(f"No token with id {token_id}.")
    token.revoked_at = token.revoked_at or datetime.now(UTC)
    db.session.commit()
    click.echo(f"Token {token_id} ({token.prefix}…) is revoked.")


@click.group("org")
def org_group() -> None:
    """Organizations of the REST API."""


@org_group.command("add")
@click.argument("external_id")
@click.option("--name", default=None)
@with_appcontext
def org_add(external_id: str, name: str | None) -> None:
    """Create (or rename) an organization."""
    org, created = tenants.upsert_organization(external_id, name=name)
    db.session.commit()
    click.echo(f"Organization {org.external_id} {'created' if created else 'updated'}.")


@org_group.command("callback-secret")
@click.argument("external_id")
@with_appcontext
def org_callback_secret(external_id: str) -> None:
    """Make a new secret that signs the organization's callbacks and print it once (the
    previous one stops working)."""
    org = _organization(external_id)
    org.callback_secret = auth.new_callback_secret()
    db.session.commit()
    click.echo(org.callback_secret)


@org_group.command("limits")
@click.argument("external_id")
@click.option("--tokens", default=None, help="Model tokens per month; '' for no limit.")
@click.option("--cost", default=None, help="Spending per month (price currency); '' for none.")
@with_appcontext
def org_limits(external_id: str, tokens: str | None, cost: str | None) -> None:
    """Set the organization's monthly spend limits (UTC months; every platform of it and its
    API evaluations), those given only, and print its month so far."""
    org = _organization(external_id)
    try:
        if tokens is not None:
            org.monthly_token_limit = spend.read_limit(tokens, whole=True)
        if cost is not None:
            org.monthly_cost_limit = spend.read_limit(cost, whole=False)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None
    db.session.commit()
    if tokens is not None or cost is not None:
        budget.limits_changed(org)
    month = spend.budget(org)
    click.echo(
        f"{org.external_id}: tokens {month.used_tokens} used of {_limit(month.token_limit)}, "
        f"spending {month.used_cost:.2f} of {_limit(month.cost_limit)} this month (UTC); "
        f"{month.waiting} waiting for budget."
    )


def _limit(value: float | None) -> str:
    return "no limit" if value is None else f"{value:g}"


@org_group.command("models")
@click.argument("external_id")
@click.argument("urls", nargs=-1)
@click.option(
    "--any", "lift", is_flag=True, help="Lift the restriction: any server the site allows."
)
@with_appcontext
def org_models(external_id: str, urls: tuple[str, ...], lift: bool) -> None:
    """Show, or set, the only model servers that may receive the organization's students'
    work: their base URLs (and the paths below them), e.g. https://llm.school.edu/v1. A
    grading for it with any other server fails without sending anything."""
    org = _organization(external_id)
    if urls and lift:
        raise click.UsageError("Give base URLs or --any, not both.")
    if urls or lift:
        try:
            tenants.set_model_base_urls(org, urls)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="URLS") from exc
        db.session.commit()
    allowed = tenants.model_base_urls(org)
    click.echo(
        f"Organization {org.external_id}: model servers allowed: "
        + (", ".join(allowed) if allowed else "any the site allows")
    )
