"""The tool's signing keys: generated on first use, kept outside git, published as a JWKS.

Keys live as ``<kid>.pem`` files (mode 0600) in ``EVALUAITOR_KEY_DIR``. The newest file
signs; every file is published, so a rotated-out key still verifies until it is removed.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm


@dataclass(frozen=True)
class ToolKey:
    kid: str
    private_pem: str
    public_jwk: dict
    created: float  # the key file's modification time (seconds since the epoch)


def active_key(key_dir: str | Path) -> ToolKey:
    """The key that signs, creating the first one if the directory is empty."""
    keys = _load_keys(Path(key_dir), _dir_stamp(Path(key_dir)))
    return keys[-1] if keys else _create_key(Path(key_dir))


def all_keys(key_dir: str | Path) -> list[ToolKey]:
    """Every published key, oldest first; the last one signs."""
    keys = _load_keys(Path(key_dir), _dir_stamp(Path(key_dir)))
    return keys or [_create_key(Path(key_dir))]


def rotate(key_dir: str | Path) -> ToolKey:
    """A new key signs from now on; older keys stay published so that platforms holding a
    cached JWKS, and tokens already signed, keep verifying until they are pruned."""
    active_key(key_dir)
    return _create_key(Path(key_dir))


def prune(key_dir: str | Path, grace_seconds: float) -> list[str]:
    """Remove keys replaced more than ``grace_seconds`` ago; returns their kids."""
    keys = all_keys(key_dir)
    now = time.time()
    removed = []
    for old, successor in zip(keys, keys[1:], strict=False):
        if now - successor.created > grace_seconds:
            (Path(key_dir) / f"{old.kid}.pem").unlink(missing_ok=True)
            removed.append(old.kid)
    return removed


def jwks(key_dir: str | Path) -> dict:
    return {"keys": [k.public_jwk for k in all_keys(key_dir)]}


def _dir_stamp(key_dir: Path) -> tuple:
    """Cache key that changes when a key file is added or removed."""
    try:
        return tuple(sorted((p.name, p.stat().st_mtime_ns) for p in key_dir.glob("*.pem")))
    except FileNotFoundError:
        return ()


@lru_cache(maxsize=8)
def _load_keys(key_dir: Path, stamp: tuple) -> list[ToolKey]:
    """Parse the key files once per directory state; ``stamp`` is only the cache key."""
    paths = sorted(key_dir.glob("*.pem"), key=lambda p: (p.stat().st_mtime_ns, p.name))
    return [_read_key(p) for p in paths]


def _read_key(path: Path) -> ToolKey:
    pem = path.read_text()
    private = serialization.load_pem_private_key(pem.encode(), password=None)
    jwk = json.loads(RSAAlgorithm.to_jwk(private.public_key()))
    kid = path.stem
    jwk.update(kid=kid, alg="RS256", use="sig")
    return ToolKey(kid=kid, private_pem=pem, public_jwk=jwk, created=path.stat().st_mtime)


def _create_key(key_dir: Path) -> ToolKey:
    """Write a new key; concurrent first requests race safely through an exclusive lock file."""
    key_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    lock = key_dir / ".create.lock"
    try:
        fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except FileExistsError:
        return _wait_for_key(key_dir, lock)
    try:
        private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        pem = private.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
        kid = f"{time.strftime('%Y%m%d')}-{uuid.uuid4().hex[:12]}"
        tmp = key_dir / f".{kid}.tmp"
        tmp_fd = os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        with os.fdopen(tmp_fd, "wb") as handle:
            handle.write(pem)
        tmp.rename(key_dir / f"{kid}.pem")
    finally:
        os.close(fd)
        lock.unlink(missing_ok=True)
    return _load_keys(key_dir, _dir_stamp(key_dir))[-1]


def _wait_for_key(key_dir: Path, lock: Path, timeout: float = 10.0) -> ToolKey:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        keys = _load_keys(key_dir, _dir_stamp(key_dir))
        if keys:
            return keys[-1]
        time.sleep(0.05)
    raise TimeoutError(f"no tool key appeared while {lock.name} was held")
