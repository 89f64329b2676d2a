"""Static policy checks that cap a submission's score; see ``rules`` for the framework."""

from app.policy.registry import get_pack, pack_names, register_pack, run_pack
from app.policy.rules import (
    DuplicatePack,
    Evidence,
    Finding,
    InvalidRuleConfig,
    Pack,
    PolicyContext,
    PolicyError,
    Rule,
    UnknownPack,
    strictest_cap,
)

__all__ = [
    "DuplicatePack",
    "Evidence",
    "Finding",
    "InvalidRuleConfig",
    "Pack",
    "PolicyContext",
    "PolicyError",
    "Rule",
    "UnknownPack",
    "get_pack",
    "pack_names",
    "register_pack",
    "run_pack",
    "strictest_cap",
]
