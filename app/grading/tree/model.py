"""The criteria tree a teacher configures, as validated models, and the registry of test kinds.

A tree has three branches: ``base`` (worth the whole 0..100 scale), and optional ``bonus``
and ``penalty``, each with its own ``weight`` in points of that scale. A branch holds nodes;
a node is a *group* (``children``) or a *leaf* (``test``), and always has a ``weight``
relative to its siblings. Each leaf holds exactly one test, chosen by its ``kind``.

Test kinds live in :data:`TEST_KINDS` so new ones (the code judge's program-output tests)
plug in with :func:`register_test_kind` without touching this module. A kind is either a
:class:`Check`, run locally by :meth:`Check.run`, or the ``ai`` kind, which the plugin
answers in one batched model call.
"""

from __future__ import annotations

import fnmatch
from abc import abstractmethod
from dataclasses import dataclass, field
from typing import Annotated, Any, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    GetJsonSchemaHandler,
    SerializeAsAny,
    SerializerFunctionWrapHandler,
    StringConstraints,
    ValidatorFunctionWrapHandler,
    field_validator,
    model_serializer,
    model_validator,
)
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema

from app.grading.base import GradingInput, InputFile
from app.safe_regex import Budget

BRANCHES = ("base", "bonus", "penalty")

Name = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200)]
Weight = Annotated[float, Field(gt=0, le=1_000_000, allow_inf_nan=False)]


class _Frozen(BaseModel):
    """Configuration is read, never changed; unknown keys are typos worth reporting."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class LeafTest(_Frozen):
    """The settings of one test. Every kind subclasses this with a literal ``kind``."""

    kind: str

    @model_serializer(mode="wrap")
    def _with_kind(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """Always name the kind: it is each kind's default, so ``exclude_defaults`` (how
        activity settings are stored) would drop it and the stored tree would not load."""
        return {"kind": self.kind, **handler(self)}

    @classmethod
    def __get_pydantic_json_schema__(
        cls, core_schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        """Describe a tree's ``test`` as one of the kinds registered when the schema is asked
        for, so forms built from it accept every kind's own settings."""
        if cls is not LeafTest:
            return handler(core_schema)
        choices = []
        for kind in sorted(TEST_KINDS):
            choice = handler(TEST_KINDS[kind].__pydantic_core_schema__)
            settings = handler.resolve_ref_schema(choice)
            settings["required"] = ["kind", *settings.get("required", [])]  # it picks the kind
            choices.append(choice)
        return {"oneOf": choices}


@dataclass(frozen=True)
class LeafResult:
    """What one test found. ``score`` is 0..100, or None when no trustworthy answer exists."""

    score: float | None
    verdict: str
    reason: str
    evidence: str = ""


@dataclass(frozen=True)
class CheckContext:
    """What a check may look at: the whole job, and how much text regexes may scan and for how
    long (one budget for all regexes of a grading)."""

    job: GradingInput
    max_chars: int
    regex_budget: Budget = field(default_factory=Budget)

    def files(self) -> list[InputFile]:
        """Every submitted file, the main document included even when ``job.files`` is empty."""
        files = list(self.job.files)
        if self.job.filename and all(f.name != self.job.filename for f in files):
            files.insert(0, InputFile(self.job.filename, "", self.job.text))
        return files

    def matching(self, pattern: str, *, case_sensitive: bool = False) -> list[InputFile]:
        """Files whose name, or name without folders, matches the glob ``pattern``."""

        def fold(value: str) -> str:
            return value if case_sensitive else value.casefold()

        glob = fold(pattern)
        return [
            f
            for f in self.files()
            if fnmatch.fnmatchcase(fold(f.name), glob)
            or fnmatch.fnmatchcase(fold(f.name.replace("\\", "/").rsplit("/", 1)[-1]), glob)
        ]

    def text_of(self, pattern: str | None) -> str | None:
        """The main document's text, or the joined text of the files matching ``pattern``
        (None when none does)."""
        if pattern is None:
            return self.job.text
        found = self.matching(pattern)
        return "\n\n".join(f.text for f in found) if found else None


class Check(LeafTest):
    """A test answered without the model, from the submission alone."""

    @abstractmethod
    def run(self, ctx: CheckContext) -> LeafResult:
        """Score the submission 0..100 with a pass/fail verdict and a reason a student reads."""


TEST_KINDS: dict[str, type[LeafTest]] = {}
Kind = TypeVar("Kind", bound=type[LeafTest])


def register_test_kind(cls: Kind) -> Kind:
    """Make a test kind available to trees (use as a class decorator)."""
    kind = cls.model_fields["kind"].default
    if not isinstance(kind, str) or not kind:
        raise TypeError(f"{cls.__name__} needs a default string for its 'kind' field")
    if TEST_KINDS.get(kind, cls) is not cls:
        raise ValueError(f"a test kind named {kind!r} is already registered")
    TEST_KINDS[kind] = cls
    return cls


class Node(_Frozen):
    """A group of weighted children, or a leaf holding one test."""

    name: Name
    weight: Weight = 1.0
    children: list[Node] | None = None
    test: SerializeAsAny[LeafTest] | None = None

    @field_validator("name")
    @classmethod
    def _no_separator(cls, name: str) -> str:
        if "/" in name:
            raise ValueError("names cannot contain '/', which separates levels in results")
        return name

    @field_validator("test", mode="wrap")
    @classmethod
    def _test_of_its_kind(cls, value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        """Validate the test against the schema of its own kind, looked up when validating,
        so kinds registered later are accepted too."""
        if value is None or isinstance(value, LeafTest):
            return handler(value)
        if not isinstance(value, dict):
            raise ValueError("a test must be an object with a 'kind'")
        kind = value.get("kind")
        if kind not in TEST_KINDS:
            known = ", ".join(sorted(TEST_KINDS))
            raise ValueError(f"unknown test kind {kind!r}; known kinds: {known}")
        return TEST_KINDS[kind].model_validate(value)

    @field_validator("children")
    @classmethod
    def _children(cls, children: list[Node] | None) -> list[Node] | None:
        return None if children is None else _check_siblings(children)

    @model_validator(mode="after")
    def _group_or_leaf(self) -> Node:
        if (self.children is None) == (self.test is None):
            raise ValueError(
                f"{self.name!r} must have either 'children' (a group) or 'test' (a leaf)"
            )
        return self


def _check_siblings(children: list[Node]) -> list[Node]:
    if not children:
        raise ValueError("a group needs at least one child")
    seen: set[str] = set()
    for child in children:
        if child.name.casefold() in seen:
            raise ValueError(f"two siblings are named {child.name!r}; names must differ")
        seen.add(child.name.casefold())
    return children


class _Branch(_Frozen):
    children: list[Node]

    @field_validator("children")
    @classmethod
    def _children(cls, children: list[Node]) -> list[Node]:
        return _check_siblings(children)


class BaseBranch(_Branch):
    """The required criteria; together they make the whole 0..100 scale."""


class ExtraBranch(_Branch):
    """Bonus or penalty criteria, worth up to ``weight`` points of the 0..100 scale."""

    weight: float = Field(ge=0, le=100, allow_inf_nan=False)


@dataclass(frozen=True)
class Leaf:
    """One test in place: its branch, path name, and share of its branch (0..1)."""

    branch: str
    path: str
    test: LeafTest
    share: float

    @property
    def label(self) -> str:
        """The path without the branch, as a teacher reads it."""
        return self.path.split("/", 1)[1].replace("/", " › ")


class Tree(_Frozen):
    """A teacher's criteria: the required ``base``, and optional ``bonus`` and ``penalty``."""

    base: BaseBranch
    bonus: ExtraBranch | None = None
    penalty: ExtraBranch | None = None

    def branch_weight(self, branch: str) -> float:
        """Points of the 0..100 scale the branch is worth (0 for an absent branch)."""
        if branch == "base":
            return 100.0
        extra: ExtraBranch | None = getattr(self, branch)
        return extra.weight if extra else 0.0

    def leaves(self) -> list[Leaf]:
        """Every leaf in reading order, each with its share: the product of its own and its
        ancestors' weights, each divided by the total weight of its siblings."""
        found: list[Leaf] = []

        def walk(branch: str, prefix: str, nodes: list[Node], share: float) -> None:
            total = sum(node.weight for node in nodes)
            for node in nodes:
                path, part = f"{prefix}/{node.name}", share * node.weight / total
                if node.test is not None:
                    found.append(Leaf(branch, path, node.test, part))
                else:
                    walk(branch, path, node.children or [], part)

        for branch in BRANCHES:
            holder: _Branch | None = getattr(self, branch)
            if holder is not None:
                walk(branch, branch, holder.children, 1.0)
        return found
