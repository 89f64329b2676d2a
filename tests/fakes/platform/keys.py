"""RSA signing keys published as a JWKS, for the platform and for stand-in tools in tests."""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm


@dataclass(frozen=True)
class SigningKey:
    """An RS256 key pair with the `kid` that verifiers use to pick it out of a key set."""

    kid: str
    private_key: rsa.RSAPrivateKey

    @classmethod
    def generate(cls) -> SigningKey:
        return cls(
            kid=secrets.token_hex(8),
            private_key=rsa.generate_private_key(public_exponent=65537, key_size=2048),
        )

    def public_jwk(self) -> dict[str, Any]:
        """The public half as Moodle's certs.php publishes it (kty, alg, use, kid, n, e)."""
        jwk = json.loads(RSAAlgorithm.to_jwk(self.private_key.public_key()))
        return {**jwk, "alg": "RS256", "use": "sig", "kid": self.kid}

    def sign(self, claims: dict[str, Any], *, kid: str | None = None) -> str:
        """Sign `claims`; `kid` overrides the header, so tests can name a key they did not use."""
        return jwt.encode(
            claims, self.private_key, algorithm="RS256", headers={"kid": kid or self.kid}
        )


def jwks(*keys: SigningKey) -> dict[str, list[dict[str, Any]]]:
    return {"keys": [key.public_jwk() for key in keys]}
