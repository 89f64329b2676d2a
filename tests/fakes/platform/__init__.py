"""A fake Moodle 4.5 LMS for tests and benchmarks: LTI 1.3 launches, OAuth2 tokens, AGS, NRPS.

with FakePlatform() as platform:
    platform.tool_jwks_url = tool_url + "/lti/jwks"
    platform.tool_redirect_uris = [tool_url + "/lti/launch"]
    response = browser_launch(client, platform, tool_url, roles=TEACHER)
"""

from .browser import BrowserFlowError, browser_launch
from .keys import SigningKey
from .launch import AuthorizationError
from .server import FakePlatform
from .vocab import ADMIN, AGS_CLAIM, LTI_CLAIM, NRPS_CLAIM, STUDENT, TEACHER

__all__ = [
    "ADMIN",
    "AGS_CLAIM",
    "LTI_CLAIM",
    "NRPS_CLAIM",
    "STUDENT",
    "TEACHER",
    "AuthorizationError",
    "BrowserFlowError",
    "FakePlatform",
    "SigningKey",
    "browser_launch",
]
