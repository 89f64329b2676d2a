"""Syntax-aware Java analysis on a tree-sitter parse tree, shared by the Java policy packs.

Detectors look at the syntax tree, never at raw text, so comments and string contents cannot
trigger a check by accident. Besides navigation helpers this module has a small evaluator for
integer expressions and a loop simulator: given a counting loop whose bounds are constants it
runs the loop and reports which values each accumulator (``sum += …``) received. Anything the
simulator does not understand raises ``Unresolved``; callers treat that as "unsure, do not flag".
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import lru_cache

import tree_sitter_java
from tree_sitter import Language, Node, Parser, Tree

LOOP_TYPES = frozenset(
    {"for_statement", "enhanced_for_statement", "while_statement", "do_statement"}
)
PRINT_METHODS = frozenset({"print", "println", "printf", "format"})
MAX_ITERATIONS = 100_000

_PARSER = Parser(Language(tree_sitter_java.language()))


class Unresolved(Exception):
    """The analysis cannot be sure what the code does; detectors must not flag on it."""


@dataclass(frozen=True)
class JavaUnit:
    """One parsed source file, with the helpers detectors need to quote evidence."""

    filename: str
    source: bytes
    tree: Tree

    @property
    def root(self) -> Node:
        return self.tree.root_node

    def text(self, node: Node) -> str:
        return self.source[node.start_byte : node.end_byte].decode("utf-8", "replace")

    def line(self, node: Node) -> int:
        return node.start_point[0] + 1

    def snippet(self, node: Node) -> str:
        """The whole source line where ``node`` starts, trimmed: what a teacher recognises."""
        lines = self.source.decode("utf-8", "replace").splitlines()
        row = node.start_point[0]
        return lines[row].strip() if row < len(lines) else ""

    def syntax_errors(self) -> list[Node]:
        """ERROR and MISSING nodes: places where the parser is certain the code is not Java."""
        return [n for n in walk(self.root) if n.type == "ERROR" or n.is_missing]


@lru_cache(maxsize=128)
def parse(filename: str, text: str) -> JavaUnit:
    source = text.encode("utf-8")
    return JavaUnit(filename, source, _PARSER.parse(source))


def walk(node: Node) -> Iterator[Node]:
    """Every node under ``node`` (inclusive), depth first, in source order."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(current.children))


def find(node: Node, *types: str) -> list[Node]:
    return [n for n in walk(node) if n.type in types]


def ancestors(node: Node) -> Iterator[Node]:
    parent = node.parent
    while parent is not None:
        yield parent
        parent = parent.parent


def nearest_loop(node: Node) -> Node | None:
    """The innermost loop whose *body* holds ``node`` (a loop header does not count)."""
    child = node
    for parent in ancestors(node):
        if parent.type in ("method_declaration", "lambda_expression", "class_body"):
            return None
        if parent.type in LOOP_TYPES and parent.child_by_field_name("body") == child:
            return parent
        child = parent
    return None


def enclosing_method(node: Node) -> Node | None:
    for parent in ancestors(node):
        if parent.type in ("method_declaration", "constructor_declaration"):
            return parent
    return None


def is_print_call(unit: JavaUnit, node: Node) -> bool:
    if node.type != "method_invocation":
        return False
    name, obj = node.child_by_field_name("name"), node.child_by_field_name("object")
    return (
        name is not None
        and unit.text(name) in PRINT_METHODS
        and obj is not None
        and unit.text(obj).replace(" ", "") in ("System.out", "System.err")
    )


def accumulation(unit: JavaUnit, node: Node) -> tuple[str, Node] | None:
    """``(name, added expression)`` for ``name += e`` or ``name = name + e`` / ``e + name``."""
    if node.type != "assignment_expression":
        return None
    left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
    op = node.child_by_field_name("operator")
    if left is None or right is None or op is None or left.type != "identifier":
        return None
    name = unit.text(left)
    if unit.text(op) == "+=":
        return name, right
    if unit.text(op) == "=" and right.type == "binary_expression" and _op(unit, right) == "+":
        a, b = right.child_by_field_name("left"), right.child_by_field_name("right")
        if a is not None and a.type == "identifier" and unit.text(a) == name and b is not None:
            return name, b
        if b is not None and b.type == "identifier" and unit.text(b) == name and a is not None:
            return name, a
    return None


def assigned_name(unit: JavaUnit, node: Node) -> str | None:
    """The variable an assignment or ``++``/``--`` writes, if it is a plain identifier."""
    if node.type == "assignment_expression":
        left = node.child_by_field_name("left")
        return unit.text(left) if left is not None and left.type == "identifier" else None
    if node.type == "update_expression":
        ids = [c for c in node.children if c.type == "identifier"]
        return unit.text(ids[0]) if ids else None
    return None


def constants(unit: JavaUnit) -> dict[str, int]:
    """Variables initialised with a constant integer and never written again in this file.

    Names are file-wide (shadowing is ignored); a name declared twice is dropped, to stay safe.
    """
    written = {assigned_name(unit, n) for n in find(unit.root, "assignment_expression")}
    written |= {assigned_name(unit, n) for n in find(unit.root, "update_expression")}
    seen: dict[str, int] = {}
    dropped: set[str] = set()
    for declarator in find(unit.root, "variable_declarator"):
        name_node, value = (
            declarator.child_by_field_name("name"),
            declarator.child_by_field_name("value"),
        )
        name = unit.text(name_node) if name_node is not None else ""
        if name in seen or name in dropped or name in written or value is None:
            dropped.add(name)
            seen.pop(name, None)
            continue
        try:
            seen[name] = evaluate(unit, value, seen)
        except Unresolved:
            dropped.add(name)
    return seen


def _op(unit: JavaUnit, node: Node) -> str:
    op = node.child_by_field_name("operator")
    return unit.text(op) if op is not None else ""


def int_literal(unit: JavaUnit, node: Node) -> int | None:
    if node.type == "decimal_integer_literal":
        return int(unit.text(node).rstrip("lL").replace("_", ""))
    if node.type == "hex_integer_literal":
        return int(unit.text(node).rstrip("lL").replace("_", ""), 16)
    return None


def _jdiv(a: int, b: int) -> int:
    if b == 0:
        raise Unresolved("division by zero")
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


_BINARY = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "/": _jdiv,
    "%": lambda a, b: a - b * _jdiv(a, b),
    "<": lambda a, b: int(a < b),
    "<=": lambda a, b: int(a <= b),
    ">": lambda a, b: int(a > b),
    ">=": lambda a, b: int(a >= b),
    "==": lambda a, b: int(a == b),
    "!=": lambda a, b: int(a != b),
}


def evaluate(unit: JavaUnit, node: Node, env: dict[str, int]) -> int:
    """Value of an integer/boolean expression (booleans as 0/1), Java integer semantics."""
    literal = int_literal(unit, node)
    if literal is not None:
        return literal
    kind = node.type
    if kind in ("true", "false"):
        return int(kind == "true")
    if kind == "identifier":
        name = unit.text(node)
        if name not in env:
            raise Unresolved(f"unknown value of {name}")
        return env[name]
    if kind == "parenthesized_expression" and node.named_child_count == 1:
        return evaluate(unit, node.named_children[0], env)
    if kind == "unary_expression":
        operand = node.child_by_field_name("operand")
        op = _op(unit, node)
        if operand is not None and op in ("-", "+", "!"):
            value = evaluate(unit, operand, env)
            return {"-": -value, "+": value, "!": int(not value)}[op]
    if kind == "binary_expression":
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        op = _op(unit, node)
        if left is not None and right is not None:
            if op == "&&":
                return int(bool(evaluate(unit, left, env)) and bool(evaluate(unit, right, env)))
            if op == "||":
                return int(bool(evaluate(unit, left, env)) or bool(evaluate(unit, right, env)))
            if op in _BINARY:
                return _BINARY[op](evaluate(unit, left, env), evaluate(unit, right, env))
    raise Unresolved(f"cannot evaluate {kind}")


Constant = int | str
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "0": "\0"}
MAX_FOLD_DEPTH = 3


def string_value(unit: JavaUnit, node: Node) -> str:
    """The text a string literal stands for (simple escapes decoded, others kept as written)."""
    parts = []
    for child in node.named_children:
        text = unit.text(child)
        if child.type == "escape_sequence" and len(text) == 2:
            text = _ESCAPES.get(text[1], text[1])
        parts.append(text)
    return "".join(parts)


def fold(
    unit: JavaUnit,
    node: Node,
    holder: Callable[[str], Node | None],
    depth: int = 0,
) -> Constant:
    """Value of an expression made only of literals, with Java's ``+`` on strings.

    Numbers, strings, parentheses, ``+ - * / %`` and names whose only value (``holder``: the
    initialiser of a variable never written again) is such an expression, up to
    ``MAX_FOLD_DEPTH`` names deep. Anything else (a call, a cast, a variable the program
    changes) raises Unresolved: the expression is computed at run time.
    """
    literal = int_literal(unit, node)
    if literal is not None:
        return literal
    kind = node.type
    if kind == "string_literal":
        return string_value(unit, node)
    if kind == "parenthesized_expression" and node.named_child_count == 1:
        return fold(unit, node.named_children[0], holder, depth)
    if kind == "identifier" and depth < MAX_FOLD_DEPTH:
        value = holder(unit.text(node))
        if value is not None:
            return fold(unit, value, holder, depth + 1)
    if kind == "unary_expression" and _op(unit, node) in ("-", "+"):
        operand = node.child_by_field_name("operand")
        value = fold(unit, operand, holder, depth) if operand is not None else None
        if isinstance(value, int):
            return -value if _op(unit, node) == "-" else value
    if kind == "binary_expression" and _op(unit, node) in ("+", "-", "*", "/", "%"):
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        if left is not None and right is not None:
            a, b = fold(unit, left, holder, depth), fold(unit, right, holder, depth)
            if _op(unit, node) == "+" and (isinstance(a, str) or isinstance(b, str)):
                return f"{a}{b}"
            if isinstance(a, int) and isinstance(b, int):
                return _BINARY[_op(unit, node)](a, b)
    raise Unresolved(f"{kind} is not a constant expression")


@dataclass
class LoopRun:
    """What one simulated loop added to each accumulator, in order."""

    added: dict[str, list[int]]
    iterations: int


def _statements(node: Node) -> list[Node]:
    return node.named_children if node.type == "block" else [node]


def _loop_value_before(unit: JavaUnit, loop: Node, name: str, env: dict[str, int]) -> int:
    """The value ``name`` holds when a while/do loop starts: its last write before the loop."""
    sibling = loop.prev_named_sibling
    while sibling is not None:
        if sibling.type == "local_variable_declaration":
            for declarator in sibling.children_by_field_name("declarator"):
                target = declarator.child_by_field_name("name")
                value = declarator.child_by_field_name("value")
                if target is not None and unit.text(target) == name:
                    if value is None:
                        raise Unresolved(f"{name} has no initial value")
                    return evaluate(unit, value, env)
        if any(assigned_name(unit, n) == name for n in walk(sibling) if n.type != "identifier"):
            expr = sibling.named_children[0] if sibling.type == "expression_statement" else None
            if expr is not None and expr.type == "assignment_expression" and _op(unit, expr) == "=":
                right = expr.child_by_field_name("right")
                if right is not None:
                    return evaluate(unit, right, env)
            raise Unresolved(f"{name} is changed before the loop in a way not followed")
        sibling = sibling.prev_named_sibling
    raise Unresolved(f"no initial value for {name}")


class _Simulator:
    def __init__(self, unit: JavaUnit, env: dict[str, int], control: set[str]) -> None:
        self.unit, self.env, self.control = unit, env, control
        self.added: dict[str, list[int]] = {}

    def expression(self, node: Node) -> None:
        unit = self.unit
        name = assigned_name(unit, node)
        if node.type == "update_expression" and name is not None:
            if name in self.control:
                self.env[name] += 1 if "++" in unit.text(node) else -1
            return  # a counter such as ``count++`` does not change the sum
        if node.type == "assignment_expression" and name is not None:
            if name in self.control:
                op = _op(unit, node)
                right = node.child_by_field_name("right")
                if right is None or op not in ("=", "+=", "-="):
                    raise Unresolved("unsupported update of the loop variable")
                value = evaluate(unit, right, self.env)
                old = self.env[name]
                self.env[name] = {"=": value, "+=": old + value, "-=": old - value}[op]
                return
            acc = accumulation(unit, node)
            if acc is None:
                raise Unresolved(f"{name} is written in a way not followed")
            self.added.setdefault(acc[0], []).append(evaluate(unit, acc[1], self.env))
            return
        if node.type == "method_invocation" and is_print_call(unit, node):
            if find(node, "assignment_expression", "update_expression"):
                raise Unresolved("side effect inside a print call")
            return
        raise Unresolved(f"cannot follow {node.type}")

    def statement(self, node: Node) -> None:
        if node.type == "block":
            for child in node.named_children:
                self.statement(child)
        elif node.type == "expression_statement" and node.named_child_count == 1:
            self.expression(node.named_children[0])
        elif node.type == "if_statement":
            condition = node.child_by_field_name("condition")
            branch = node.child_by_field_name("consequence")
            if condition is None or branch is None:
                raise Unresolved("incomplete if")
            if not evaluate(self.unit, condition, self.env):
                branch = node.child_by_field_name("alternative")
            if branch is not None:
                self.statement(branch)
        elif node.type in ("line_comment", "block_comment", ";"):
            return
        else:
            raise Unresolved(f"cannot follow {node.type}")


def simulate_loop(unit: JavaUnit, loop: Node, env: dict[str, int]) -> LoopRun:
    """Run a counting loop with constant bounds; ``env`` holds the known constants."""
    if loop.type not in ("for_statement", "while_statement", "do_statement"):
        raise Unresolved(f"{loop.type} is not a counting loop")
    if nearest_loop(loop) is not None:
        raise Unresolved("nested loop")
    condition, body = loop.child_by_field_name("condition"), loop.child_by_field_name("body")
    if condition is None or body is None:
        raise Unresolved("loop without condition")
    local = dict(env)
    updates = loop.children_by_field_name("update") if loop.type == "for_statement" else []
    if loop.type == "for_statement":
        for init in loop.children_by_field_name("init"):
            if init.type == "local_variable_declaration":
                for declarator in init.children_by_field_name("declarator"):
                    target = declarator.child_by_field_name("name")
                    value = declarator.child_by_field_name("value")
                    if target is None or value is None:
                        raise Unresolved("loop variable without start value")
                    local[unit.text(target)] = evaluate(unit, value, local)
            elif init.type == "assignment_expression" and _op(unit, init) == "=":
                target, value = init.child_by_field_name("left"), init.child_by_field_name("right")
                if target is None or value is None:
                    raise Unresolved("odd loop start")
                local[unit.text(target)] = evaluate(unit, value, local)
            else:
                raise Unresolved("odd loop start")
        control = {name for u in updates if (name := assigned_name(unit, u))}
    else:
        control = {unit.text(n) for n in find(condition, "identifier")} - set(env)
        for name in control:
            local[name] = _loop_value_before(unit, loop, name, local)
    if not control:
        raise Unresolved("no loop variable")
    sim = _Simulator(unit, local, control)
    iterations = 0
    if loop.type == "do_statement":
        sim.statement(body)
        iterations += 1
    while evaluate(unit, condition, sim.env):
        sim.statement(body)
        for update in updates:
            sim.expression(update)
        iterations += 1
        if iterations > MAX_ITERATIONS:
            raise Unresolved("loop does not finish quickly")
    return LoopRun(sim.added, iterations)
