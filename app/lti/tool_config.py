"""pylti1p3's tool configuration, read from the database instead of a JSON file."""

from __future__ import annotations

from flask_babel import lazy_gettext as _l
from pylti1p3.deployment import Deployment as LtiDeployment
from pylti1p3.registration import Registration
from pylti1p3.tool_config.abstract import ToolConfAbstract
from sqlalchemy import select

from app.errors import UnknownDeployment, UnknownPlatform
from app.extensions import db
from app.lti import keys
from app.models import Deployment, Platform

#: Said instead of "not registered" when the registration exists but an admin switched it off.
_SWITCHED_OFF = _l(
    "Evaluaitor's administrator has switched off this registration. Ask them to activate it "
    "on Evaluaitor's admin page."
)


def find_platform(issuer: str, client_id: str | None) -> Platform:
    """The active platform for an issuer and client_id.

    ``client_id`` may be missing from a login initiation; that is only unambiguous when
    the issuer has a single registration.
    """
    query = select(Platform).where(Platform.issuer == issuer)
    if client_id:
        query = query.where(Platform.client_id == client_id)
    platforms = db.session.scalars(query.where(Platform.is_active.is_(True)).limit(2)).all()
    if len(platforms) != 1:
        switched_off = not platforms and db.session.scalar(query.limit(1)) is not None
        raise UnknownPlatform(
            _SWITCHED_OFF if switched_off else None,
            detail=f"no single active platform for issuer={issuer!r}",
        )
    return platforms[0]


def find_deployment(platform: Platform, deployment_id: str) -> Deployment:
    deployment = db.session.scalar(
        select(Deployment).where(
            Deployment.platform_id == platform.id, Deployment.deployment_id == deployment_id
        )
    )
    if deployment is None or not deployment.is_active:
        raise UnknownDeployment(
            _SWITCHED_OFF if deployment else None,
            detail=f"deployment {deployment_id!r} of platform {platform.id}",
        )
    return deployment


class DatabaseToolConf(ToolConfAbstract):
    """Every issuer may have many client_ids (Canvas), so lookups always use both.

    pylti1p3 asks for the registration and deployment several times per request; rows the
    view already loaded are passed in and reused instead of being queried again.
    """

    def __init__(
        self, key_dir: str, platform: Platform, deployment: Deployment | None = None
    ) -> None:
        super().__init__()
        self._key_dir = key_dir
        self._platform = platform
        self._deployment = deployment

    def check_iss_has_one_client(self, iss: str) -> bool:
        return False

    def check_iss_has_many_clients(self, iss: str) -> bool:
        return True

    def find_registration_by_issuer(self, iss: str, *args, **kwargs) -> Registration:
        return self.find_registration_by_params(iss, None)

    def find_registration_by_params(
        self, iss: str, client_id: str | None, *args, **kwargs
    ) -> Registration:
        return self.registration_for(self._find_platform(iss, client_id))

    def find_deployment(self, iss: str, deployment_id: str) -> LtiDeployment | None:
        return self.find_deployment_by_params(iss, deployment_id, None)

    def find_deployment_by_params(
        self, iss: str, deployment_id: str, client_id: str | None, *args, **kwargs
    ) -> LtiDeployment | None:
        platform = self._find_platform(iss, client_id)
        known = self._deployment
        if not known or (known.platform_id, known.deployment_id) != (platform.id, deployment_id):
            find_deployment(platform, deployment_id)
        return LtiDeployment().set_deployment_id(deployment_id)

    def _find_platform(self, iss: str, client_id: str | None) -> Platform:
        known = self._platform
        if known.issuer == iss and (client_id is None or known.client_id == client_id):
            return known
        return find_platform(iss, client_id)

    def registration_for(self, platform: Platform) -> Registration:
        key = keys.active_key(self._key_dir)
        registration = (
            Registration()
            .set_issuer(platform.issuer)
            .set_client_id(platform.client_id)
            .set_auth_login_url(platform.auth_login_url)
            .set_auth_token_url(platform.auth_token_url)
            .set_key_set_url(platform.key_set_url)
            .set_tool_private_key(key.private_pem)
        )
        if platform.auth_audience:
            registration.set_auth_audience(platform.auth_audience)
        return registration
