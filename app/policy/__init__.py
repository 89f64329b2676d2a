"""Static policy checks that cap a submission's score; see ``rules`` for the framework."""

from app.policy.registry import check_pack, get_pack, pack_names, register_pack
from app.policy.rules import (
    DuplicatePack,
    Evidence,
    Finding,
    InvalidRuleConfig,
    Pack,
    PolicyContext,
    PolicyError,
    PolicyRun,
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
    "PolicyRun",
    "Rule",
    "UnknownPack",
    "check_pack",
    "get_pack",
    "pack_names",
    "register_pack",
    "strictest_cap",
]
