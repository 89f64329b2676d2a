"""The import graph of ``app``, read from the source: no import cycles, and a grading layer that
reaches neither Flask nor the database, the LMS, the web or the jobs.

How the graph is built (:func:`import_graph`):

- Every ``import`` and ``from … import`` in a module counts, at module level or inside a
  function: a function-level import is the same dependency, taken later.
- ``from package import name`` points at ``package.name`` when that is a module, else at
  ``package``; relative imports are resolved; ``import a.b.c`` points at ``a.b.c``. The parent
  packages Python also runs are not edges: every ``app.*`` import runs ``app/__init__.py``, so
  counting them would put every module in a cycle with the factory.
- Imports under ``if TYPE_CHECKING:`` never run. They count for the layers (naming a type is
  depending on it) but not for cycles (SQLAlchemy relationships name each other both ways).

The factory is left out of the cycle check this way: the imports made by ``app``
(``app/__init__.py``, where ``create_app`` wires everything) and by ``app.cli`` are dropped.
They are the roots that import every part in order to wire it, so a cycle through them says
nothing about the parts; a module that imports them (the worker building its app) still counts,
and so do the ``init_app`` functions of the subsystems.

The grading layer (``GRADING_LAYER``: app/grading/, app/llm/, app/extract/, app/judge/,
app/policy/) may import itself and the Flask-free ``FOUNDATION`` modules only, followed
through everything it reaches: so no ``app.models``, ``app.extensions``, ``app.lti``,
``app.api``, ``app.web``, ``app.jobs``, nor ``app.i18n`` (Flask-Babel's wiring; the grading
layer marks its texts with ``app.catalogue``), and no module on the way imports ``flask`` or
``flask_*``.

The evaluation core (``app.evaluation``) is used by the LMS and the API sides, which register
with it; it imports neither of them (``OWNERS``).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

APP = Path(__file__).resolve().parent.parent / "app"

#: The roots that wire everything (see the module docstring).
FACTORY = frozenset({"app", "app.cli"})

#: (importer, imported) → why it is still there. Empty: the cycles through app/jobs/queue.py,
#: app/api/ and app/lti/passback.py went with the issue 12 core rewrite.

#: The grading layer: plain inputs in, results out, runnable in the worker, the CLI and tests.
GRADING_LAYER = ("app.grading", "app.llm", "app.extract", "app.judge", "app.policy")
#: What the grading layer may use outside itself: Flask-free modules at the bottom of ``app``.
#: ``app.i18n`` is not one (it is Flask-Babel's wiring); its ``N_`` lives in ``app.catalogue``.
FOUNDATION = frozenset(
    {
        "app.catalogue",
        "app.safe_regex",
        "app.redaction",
        "app.safe_json",
        "app.metrics",
        # Flask-free; the model client takes its shared TLS context (app.outbound.ssl_context)
        "app.outbound",
    }
)

#: What the evaluation core must not import: the sides that use it.
OWNERS = ("app.lti", "app.api", "app.web", "app.lms", "app.admin", "app.practice")


@dataclass(frozen=True)
class Import:
    importer: str
    imported: str
    line: int
    type_only: bool

    def __str__(self) -> str:
        return f"{self.importer} -> {self.imported} (line {self.line})"


@dataclass(frozen=True)
class Graph:
    modules: frozenset[str]
    imports: tuple[Import, ...]
    #: module → the outside packages it imports (top-level names: ``flask``, ``pydantic``…)
    outside: dict[str, frozenset[str]]

    def edges(self, *, runtime_only: bool = False) -> dict[str, dict[str, Import]]:
        found: dict[str, dict[str, Import]] = {module: {} for module in self.modules}
        for imp in self.imports:
            if not (runtime_only and imp.type_only):
                found[imp.importer].setdefault(imp.imported, imp)
        return found


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


class _Collector(ast.NodeVisitor):
    """The imports of one module: (name, line, under ``if TYPE_CHECKING``)."""

    def __init__(self, module: str, is_package: bool) -> None:
        self.package = module if is_package else module.rpartition(".")[0]
        self.found: list[tuple[str, str | None, int, bool]] = []
        self._type_only = False

    def visit_If(self, node: ast.If) -> None:
        test = node.test
        name = test.id if isinstance(test, ast.Name) else getattr(test, "attr", None)
        if name != "TYPE_CHECKING":
            self.generic_visit(node)
            return
        outer, self._type_only = self._type_only, True
        for child in node.body:
            self.visit(child)
        self._type_only = outer
        for child in node.orelse:
            self.visit(child)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self.found.append((alias.name, None, node.lineno, self._type_only))

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        base = node.module or ""
        if node.level:
            package = self.package.rsplit(".", node.level - 1)[0]
            base = f"{package}.{base}" if base else package
        for alias in node.names:
            self.found.append((base, alias.name, node.lineno, self._type_only))


@cache
def import_graph(root: Path = APP) -> Graph:
    """Every import of the package at ``root``, resolved to its modules."""
    package = root.name
    paths = {module_name(path, root): path for path in sorted(root.rglob("*.py"))}
    imports: list[Import] = []
    outside: dict[str, frozenset[str]] = {}
    for module, path in paths.items():
        collector = _Collector(module, path.name == "__init__.py")
        collector.visit(ast.parse(path.read_text(encoding="utf-8"), str(path)))
        others = set()
        for base, name, line, type_only in collector.found:
            if base != package and not base.startswith(package + "."):
                others.add(base.partition(".")[0])
                continue
            target = f"{base}.{name}" if name and f"{base}.{name}" in paths else base
            while target not in paths:  # a name inside a module that is not a file of its own
                target = target.rpartition(".")[0]
            if target != module:
                imports.append(Import(module, target, line, type_only))
        outside[module] = frozenset(others)
    return Graph(frozenset(paths), tuple(imports), outside)


def strongly_connected(edges: dict[str, Iterable[str]]) -> list[list[str]]:
    """The groups of modules that import each other, directly or not (Tarjan), largest first."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(node: str) -> None:  # recursion is fine: app is ~200 modules
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in edges.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return sorted(groups, key=len, reverse=True)


def cycle_edges(graph: Graph) -> dict[str, dict[str, Import]]:
    """The imports that run, without the factory's."""
    edges = graph.edges(runtime_only=True)
    for module in FACTORY & edges.keys():
        edges[module] = {}
    return edges


def shortest_cycle(edges: dict[str, dict[str, Import]], group: list[str]) -> list[str]:
    """One shortest way round the group, to read first when the group is large."""
    members = set(group)
    best: list[str] = []
    for start in group:
        paths = {start: [start]}
        frontier = [start]
        found: list[str] = []
        while frontier and not found:  # breadth first: the first way back is a shortest one
            following = []
            for module in frontier:
                for target in sorted(edges[module]):
                    if target == start and not found:
                        found = paths[module] + [start]
                    elif target in members and target not in paths:
                        paths[target] = paths[module] + [target]
                        following.append(target)
            frontier = following
        if found and (not best or len(found) < len(best)):
            best = found
    return best


def describe_cycles(edges: dict[str, dict[str, Import]]) -> Iterator[str]:
    for group in strongly_connected(edges):
        members = set(group)
        yield f"cycle among {', '.join(group)}:"
        yield f"  shortest: {' -> '.join(shortest_cycle(edges, group))}"
        for module in group:
            for target, imp in sorted(edges[module].items()):
                if target in members:
                    yield f"    {imp}"


def in_grading_layer(module: str) -> bool:
    return any(module == top or module.startswith(top + ".") for top in GRADING_LAYER)


def layer_violations(graph: Graph) -> Iterator[str]:
    """Imports by which the grading layer, or what it uses, reaches outside itself or Flask.

    Followed through the foundation modules, so that they cannot bring Flask in either."""
    edges = graph.edges()
    reached = sorted(m for m in graph.modules if in_grading_layer(m))
    seen = set(reached)
    while reached:
        module = reached.pop()
        flask = sorted(p for p in graph.outside[module] if p == "flask" or p.startswith("flask_"))
        if flask:
            yield f"{module} imports {', '.join(flask)}"
        for target, imp in sorted(edges[module].items()):
            if not (in_grading_layer(target) or target in FOUNDATION):
                yield str(imp)
            elif target not in seen:
                seen.add(target)
                reached.append(target)


def test_no_import_cycles() -> None:
    found = list(describe_cycles(cycle_edges(import_graph())))
    assert not found, "import cycles (see tests/test_architecture.py):\n" + "\n".join(found)


def test_grading_layer_uses_neither_flask_nor_the_layers_above() -> None:
    found = list(layer_violations(import_graph()))
    assert not found, "the grading layer reaches outside itself:\n" + "\n".join(found)


def test_the_evaluation_core_imports_none_of_its_owners() -> None:
    edges = import_graph().edges()
    found = [
        str(imp)
        for module, targets in edges.items()
        if module == "app.evaluation" or module.startswith("app.evaluation.")
        for target, imp in targets.items()
        if any(target == owner or target.startswith(owner + ".") for owner in OWNERS)
    ]
    assert not found, "the evaluation core imports a side that uses it:\n" + "\n".join(found)


def test_the_graph_reads_every_kind_of_import(tmp_path: Path) -> None:
    """The checks above are only as good as this reading of the source."""
    root = tmp_path / "pkg"
    files = {
        "__init__.py": "from pkg.sub import helper\n",
        "sub/__init__.py": "",
        "sub/helper.py": "import os\nfrom .. import top\n",
        "top.py": (
            "from typing import TYPE_CHECKING\n"
            "import flask\n"
            "from pkg.sub import helper, VALUE\n"
            "if TYPE_CHECKING:\n"
            "    from pkg.typed import Thing\n"
            "def later():\n"
            "    from . import typed\n"
        ),
        "typed.py": "import pkg.sub.helper as h\n",
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)

    graph = import_graph(root)

    found = {(i.importer, i.imported, i.type_only) for i in graph.imports}
    assert found == {
        ("pkg", "pkg.sub.helper", False),
        ("pkg.sub.helper", "pkg.top", False),
        ("pkg.top", "pkg.sub.helper", False),
        ("pkg.top", "pkg.sub", False),  # VALUE is a name in the package, not a module
        ("pkg.top", "pkg.typed", True),
        ("pkg.top", "pkg.typed", False),  # the function-level import
        ("pkg.typed", "pkg.sub.helper", False),
    }
    assert graph.outside["pkg.top"] == {"typing", "flask"}
    assert graph.outside["pkg.sub.helper"] == {"os"}
    cycles = strongly_connected(graph.edges(runtime_only=True))
    assert cycles == [["pkg.sub.helper", "pkg.top", "pkg.typed"]]


#: The only modules loose at the top of ``app``: the roots, what the CLI starts, and what sits
#: below the evaluation core (docs/architecture.md draws them). A side's module goes in its
#: package (``app.lms``, ``app.api``…), so the layout shows the layers.
TOP_LEVEL = {
    "roots": {"__init__", "cli", "offline", "supervisor"},
    # Flask-Babel's wiring: the locale comes from the launch (app.lti), so it sits with the edges;
    # the log format and request ids, and the probes and /metrics, which read every layer
    "edge wiring": {"i18n", "logs", "monitoring"},
    "below the core": {"spend", "tenants", "uploads", "extensions"},
    "foundation": {
        "catalogue",
        "config",
        "errors",
        "metrics",
        "outbound",
        "ratelimit",
        "redaction",
        "safe_json",
        "safe_regex",
        "text",
    },
}


def test_only_roots_and_the_layers_below_the_core_sit_at_the_top_of_app() -> None:
    known = set().union(*TOP_LEVEL.values())
    loose = {path.stem for path in APP.glob("*.py")}
    assert loose - known == set(), "put a side's module in its package (docs/architecture.md)"
    assert known - loose == set(), "TOP_LEVEL names a module that is gone"


#: Packages below the evaluation core: data protection (the sweeper applies retention, and
#: the admin page, the API and the CLI erase and export through it).
BELOW_THE_CORE_PACKAGES = ("app.privacy",)


def test_no_module_below_the_core_imports_a_side() -> None:
    """What sits below the core (spend is used by the grading runner's callers) must not
    reach up into the LMS or API side."""
    edges = import_graph().edges()
    below = {f"app.{name}" for name in TOP_LEVEL["below the core"] | TOP_LEVEL["foundation"]}
    below |= {
        module
        for module in edges
        if any(module == p or module.startswith(p + ".") for p in BELOW_THE_CORE_PACKAGES)
    }
    assert below > {"app.privacy"}
    found = [
        str(imp)
        for module in below
        for target, imp in edges.get(module, {}).items()
        if any(target == owner or target.startswith(owner + ".") for owner in OWNERS)
    ]
    assert not found, "a module below the core imports a side:\n" + "\n".join(found)
