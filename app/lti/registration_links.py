"""Links that let one LMS start one LTI Dynamic Registration.

A registration makes the tool fetch the ``openid_configuration`` URL it is handed, then post
to an endpoint that document names. Open to anyone, that is a way to make the server call
any address the outbound policy allows (with ``EVALUAITOR_ALLOWED_PRIVATE_HOSTS``, the
school's internal hosts too). So a registration starts only from a link an admin made, on
/admin or with ``evaluaitor registration-link``:

- it holds a random token (only its SHA-256 is stored);
- it names the LMS's origin (``https://moodle.school.edu``): a configuration URL of another
  scheme, host or port is refused before anything is fetched;
- it expires (``EVALUAITOR_REGISTRATION_LINK_HOURS``) and is used up by the registration it
  starts. It is taken atomically while the exchange runs, so two uses cannot race; an
  exchange that fails gives it back, so the admin can try again while it is valid.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import timedelta
from urllib.parse import urlsplit

from flask_babel import lazy_gettext as _l
from sqlalchemy import select, update

from app.errors import EvaluaitorError
from app.extensions import db
from app.models import Platform, RegistrationLink
from app.models.base import as_utc, utcnow

#: Characters of a link's token (``secrets.token_urlsafe(32)``: 256 bits).
TOKEN_BYTES = 32


class LinkRefused(EvaluaitorError):
    """The registration link is unknown, expired, used, or for another LMS."""

    status_code = 403
    code = "registration_link_refused"
    user_message = _l(
        "This registration link is not valid: it is unknown, expired, already used or made "
        "for another LMS address. Ask the Evaluaitor administrator for a new link."
    )


@dataclass(frozen=True)
class NewLink:
    link: RegistrationLink
    #: The secret part of the link's address; shown once, never stored.
    token: str


def lms_origin(address: str) -> str:
    """``scheme://host[:port]`` of an LMS's address, lower-case; ValueError if it is not an
    http(s) address (a path is dropped: the configuration lives at the LMS's own path)."""
    try:
        parts = urlsplit(address.strip())
        port = parts.port
    except ValueError as exc:
        raise ValueError(f"{address!r} is not a valid address") from exc
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{address!r} is not an http(s) address with a host")
    host = parts.hostname if ":" not in parts.hostname else f"[{parts.hostname}]"
    default = {"http": 80, "https": 443}[parts.scheme]
    return f"{parts.scheme}://{host}" + (f":{port}" if port and port != default else "")


def create(address: str, *, hours: float) -> NewLink:
    """A new link for the LMS at ``address``, valid for ``hours``; ValueError for a bad
    address. The caller builds the URL (``/lti/register/<token>``) from ``token``."""
    token = secrets.token_urlsafe(TOKEN_BYTES)
    link = RegistrationLink(
        token_hash=_digest(token),
        lms_origin=lms_origin(address),
        expires_at=utcnow() + timedelta(hours=hours),
    )
    db.session.add(link)
    db.session.commit()
    return NewLink(link, token)


def take(token: str, openid_configuration_url: str) -> RegistrationLink:
    """The link, taken for one registration from that configuration URL; raises LinkRefused
    (with the reason for the log) before anything is fetched."""
    if not token:
        raise LinkRefused(
            _l(
                "Dynamic Registration starts from a registration link that the Evaluaitor "
                "administrator makes for your LMS's address (on the admin page, or with "
                '"evaluaitor registration-link"). Paste that link into your LMS instead.'
            ),
            detail="registration without a link",
        )
    link = db.session.scalar(
        select(RegistrationLink).where(RegistrationLink.token_hash == _digest(token))
    )
    if link is None:
        raise LinkRefused(detail="unknown registration link")
    if as_utc(link.expires_at) <= utcnow():
        raise LinkRefused(detail=f"registration link {link.id} expired")
    try:
        origin = lms_origin(openid_configuration_url)
    except ValueError:
        origin = None
    if origin != link.lms_origin:
        raise LinkRefused(
            detail=f"registration link {link.id} is for {link.lms_origin}, not "
            f"{openid_configuration_url[:200]!r}"
        )
    taken = db.session.execute(
        update(RegistrationLink)
        .where(RegistrationLink.id == link.id, RegistrationLink.used_at.is_(None))
        .values(used_at=utcnow())
    )
    db.session.commit()
    if taken.rowcount != 1:
        raise LinkRefused(detail=f"registration link {link.id} already used")
    return link


def give_back(link: RegistrationLink) -> None:
    """A registration from ``link`` failed: the link may be used again until it expires."""
    db.session.rollback()
    link.used_at = None
    db.session.commit()


def record(link: RegistrationLink, platform: Platform) -> None:
    """The registration from ``link`` succeeded: it stays used, naming what it registered."""
    link.platform_id = platform.id
    db.session.commit()


def recent(limit: int = 20) -> list[RegistrationLink]:
    """The newest links, for the admin page."""
    return list(
        db.session.scalars(
            select(RegistrationLink).order_by(RegistrationLink.id.desc()).limit(limit)
        )
    )


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()
