"""The built-in "sumcalc" pack for the seed task: print the sum of 1..100 (5050) in Java.

Caps are fractions of the maximum score (seed's 0..100 scale divided by 100). Definitions, all
on the syntax tree of every ``.java`` file (comments and strings never count as code):

* **CompileError** (0.25): the code judge says it did not compile; when no judge ran, javac
  compiles it in the sandbox (type errors count, not only syntax); on a server without javac or
  a sandbox, the parser's definite syntax errors, with a note that only syntax was checked.
  With a syntax error the other rules stay silent, because the tree they would read is a guess.
* **HardcodedOnly** (0.25): a print or ``return`` shows 5050 spelled out (the literal, a string
  containing the number 5050, a constant expression of literals worth it such as ``5000 + 50``,
  ``2525 * 2`` or ``"50" + "50"``, or a variable that only ever holds one of those) and the
  program computes nothing: no loop that writes a variable, no recursion, no ``IntStream`` range
  or sum, no ``*``/``/`` formula. A formula reads a variable the program changes or, written
  with literals, names the task's 100 or 101 and not 5050 itself (the seed counts
  ``n * (n + 1) / 2``, even as ``100 * 101 / 2``, as a computation); a ``+`` of 100 or more
  terms is the sum written out. Concatenation follows Java (``"Sum: " + 5000 + 50`` prints
  500050, which is not 5050). Assertions and comparisons with 5050 are not outputs.
* **EvenOnly** (0.55) and **OffByOne** (0.60): every summing loop (``s += e`` or ``s = s + e``
  in a counting loop with constant bounds) and ``IntStream.range[Closed](a, b)[.filter].sum()`` is
  simulated, giving the values each sum received. If anything could not be followed, or any sum
  or all sums together make 5050 (a compensated bound such as ``i < 100`` plus ``sum += 100``, or
  separate even and odd sums), nothing is flagged. Otherwise a sum of 40+ distinct values of one
  parity inside 1..101 is EvenOnly, and a sum of consecutive values from 1 or 2 up to 99, 100 or
  101 (zero ignored, so starting at 0 is harmless) is OffByOne.
* **PrintInLoop** (0.65): a ``System.out`` print whose innermost loop is a summing loop, reached
  through blocks only (a print under an ``if`` may run once and is not flagged). A brace-less
  body is the single statement after the header, so a println after it is outside the loop.

Program output, when given, only confirms or vetoes: it adds evidence, and it cancels
EvenOnly/OffByOne if it shows 5050, HardcodedOnly if it lacks 5050, PrintInLoop if it has fewer
than two lines.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import lru_cache, partial

from tree_sitter import Node

from app.policy import compiler, java
from app.policy.java import JavaUnit, Unresolved
from app.policy.rules import Evidence, Pack, PolicyContext, Rule

TARGET = 5050
NUMBER_TARGET = re.compile(r"(?<![\d.])5050(?![\d.])")
NUMBER = re.compile(r"-?\d+")
OUTPUT = "program output"


@dataclass(frozen=True)
class Computation:
    """The values one sum received, with the nodes to quote as evidence."""

    unit: JavaUnit
    nodes: tuple[Node, ...]
    values: tuple[int, ...]


@dataclass(frozen=True)
class Program:
    units: tuple[JavaUnit, ...]
    computations: tuple[Computation, ...]
    unresolved: bool

    @property
    def broken(self) -> bool:
        return any(unit.syntax_errors() for unit in self.units)


def _cite(unit: JavaUnit, node: Node) -> Evidence:
    return Evidence(unit.filename, unit.line(node), unit.snippet(node))


def _output_numbers(context: PolicyContext) -> list[int]:
    return [int(n) for n in NUMBER.findall(context.program_output or "")]


def _control_names(unit: JavaUnit, loop: Node) -> set[str]:
    """Loop variables: written in the for-update, or read in a while/do condition."""
    if loop.type == "for_statement":
        updates = loop.children_by_field_name("update")
        return {n for u in updates if (n := java.assigned_name(unit, u))}
    condition = loop.child_by_field_name("condition")
    return {unit.text(n) for n in java.find(condition, "identifier")} if condition else set()


def _summing_loops(unit: JavaUnit) -> dict[int, tuple[Node, list[tuple[Node, str]]]]:
    """Loops (by node id) whose own body accumulates into a non-loop variable, with the sums."""
    loops: dict[int, tuple[Node, list[tuple[Node, str]]]] = {}
    for node in java.find(unit.root, "assignment_expression"):
        acc, loop = java.accumulation(unit, node), java.nearest_loop(node)
        if acc and loop is not None and acc[0] not in _control_names(unit, loop):
            loops.setdefault(loop.id, (loop, []))[1].append((node, acc[0]))
    return loops


def _scope(unit: JavaUnit, node: Node, name: str) -> Node:
    """The method declaring ``name`` locally, else the whole file (a field)."""
    method = java.enclosing_method(node)
    if method is not None:
        for declarator in java.find(method, "variable_declarator"):
            target = declarator.child_by_field_name("name")
            if target is not None and unit.text(target) == name:
                return method
    return unit.root


def _sum_values(unit: JavaUnit, scope: Node, name: str, consts: dict[str, int]) -> list[int]:
    """Every value added to ``name`` within ``scope``; Unresolved if any write is unclear."""
    values: list[int] = []
    runs: set[int] = set()
    writes = [n for n in java.walk(scope) if java.assigned_name(unit, n) == name]
    declarators = [
        d
        for d in java.find(scope, "variable_declarator")
        if (t := d.child_by_field_name("name")) is not None and unit.text(t) == name
    ]
    if len(declarators) > 1:
        raise Unresolved(f"{name} is declared more than once")
    for declarator in declarators:
        value = declarator.child_by_field_name("value")
        if value is not None:
            values.append(java.evaluate(unit, value, consts))
    first = min((w.start_byte for w in writes), default=0)
    for write in writes:
        loop = java.nearest_loop(write)
        if loop is not None:
            if loop.id not in runs:
                runs.add(loop.id)
                values.extend(java.simulate_loop(unit, loop, consts).added.get(name) or [])
            continue
        if any(a.type not in ("expression_statement", "block") for a in _up_to_method(write)):
            raise Unresolved(f"{name} is written conditionally")
        acc = java.accumulation(unit, write)
        right = write.child_by_field_name("right")
        if acc is not None:
            values.append(java.evaluate(unit, acc[1], consts))
        elif (
            write.type == "assignment_expression"
            and right is not None
            and write.start_byte == first
        ):
            values.append(java.evaluate(unit, right, consts))
        else:
            raise Unresolved(f"{name} is written in a way not followed")
    return values


def _up_to_method(node: Node) -> Iterator[Node]:
    for parent in java.ancestors(node):
        if parent.type in ("method_declaration", "constructor_declaration"):
            return
        yield parent


def _stream_sum(unit: JavaUnit, call: Node, consts: dict[str, int]) -> list[int]:
    """Values of ``IntStream.range[Closed](a, b)`` with optional ``filter`` lambdas, summed."""
    filters: list[Node] = []
    node = call.child_by_field_name("object")
    while node is not None and node.type == "method_invocation":
        name = unit.text(node.child_by_field_name("name") or node)
        args = node.child_by_field_name("arguments")
        argv = args.named_children if args is not None else []
        if name == "filter" and len(argv) == 1 and argv[0].type == "lambda_expression":
            filters.append(argv[0])
        elif name in ("range", "rangeClosed") and len(argv) == 2:
            low, high = (java.evaluate(unit, a, consts) for a in argv)
            values = range(low, high + 1 if name == "rangeClosed" else high)
            return [v for v in values if all(_keeps(unit, f, v, consts) for f in filters)]
        else:
            break
        node = node.child_by_field_name("object")
    raise Unresolved("stream not followed")


def _keeps(unit: JavaUnit, lam: Node, value: int, consts: dict[str, int]) -> bool:
    param, body = lam.child_by_field_name("parameters"), lam.child_by_field_name("body")
    if param is None or body is None or param.type != "identifier":
        raise Unresolved("filter not followed")
    return bool(java.evaluate(unit, body, {**consts, unit.text(param): value}))


def _is_stream_sum(unit: JavaUnit, node: Node) -> bool:
    name = node.child_by_field_name("name")
    return name is not None and unit.text(name) == "sum" and "Stream" in unit.text(node)


def _analyse_unit(unit: JavaUnit) -> tuple[list[Computation], bool]:
    consts = java.constants(unit)
    computations: list[Computation] = []
    unresolved = False
    done: set[tuple[int, str]] = set()
    for loop, accs in _summing_loops(unit).values():
        for acc_node, name in accs:
            scope = _scope(unit, acc_node, name)
            if (scope.id, name) in done:
                continue
            done.add((scope.id, name))
            try:
                values = _sum_values(unit, scope, name, consts)
            except Unresolved:
                unresolved = True
                continue
            computations.append(Computation(unit, (loop, acc_node), tuple(values)))
    for call in java.find(unit.root, "method_invocation"):
        if _is_stream_sum(unit, call):
            try:
                values = _stream_sum(unit, call, consts)
            except Unresolved:
                unresolved = True
                continue
            computations.append(Computation(unit, (call,), tuple(values)))
    return computations, unresolved


@lru_cache(maxsize=64)
def _analyse(files: tuple[tuple[str, str], ...]) -> Program:
    units = tuple(java.parse(name, text) for name, text in files if name.endswith(".java"))
    computations: list[Computation] = []
    unresolved = False
    for unit in units:
        found, unclear = _analyse_unit(unit)
        computations.extend(found)
        unresolved |= unclear
    return Program(units, tuple(computations), unresolved)


def analyse(context: PolicyContext) -> Program:
    return _analyse(tuple(sorted(context.sources.items())))


# --- CompileError ---------------------------------------------------------------------------


def check_compile_error(context: PolicyContext) -> list[Evidence]:
    """The compiler's errors; without a compiler, the parser's syntax errors and a note that
    type errors could not be seen."""
    if context.compile_ok:
        return []
    program = analyse(context)
    cited = [_cite(u, n) for u in program.units for n in u.syntax_errors()[:2]]
    if context.compile_ok is False:
        return (
            compiler.evidence(context.compile_output)
            or cited
            or [Evidence("code judge", None, "the program did not compile")]
        )
    if cited and context.compile_check:
        cited.append(Evidence("syntax check", None, context.compile_check))
    return cited


# --- HardcodedOnly --------------------------------------------------------------------------


def _shows_target(unit: JavaUnit, node: Node, depth: int = 0) -> bool:
    """Whether ``node`` spells out 5050: a literal or string, a constant expression of literals
    (``5000 + 50``, ``"50" + "50"``), or a variable only ever holding one of those."""
    for part in java.walk(node):
        if part.type == "identifier" and depth < java.MAX_FOLD_DEPTH:
            holder = _only_value(unit, unit.text(part))
            if holder is not None and _shows_target(unit, holder, depth + 1):
                return True
        try:
            value = java.fold(unit, part, partial(_only_value, unit))
        except Unresolved:
            continue
        if value == TARGET or (isinstance(value, str) and NUMBER_TARGET.search(value)):
            return True
    return False


def _only_value(unit: JavaUnit, name: str) -> Node | None:
    """The initialiser of ``name`` if it is declared once and never written again."""
    declared = [
        d
        for d in java.find(unit.root, "variable_declarator")
        if (t := d.child_by_field_name("name")) is not None and unit.text(t) == name
    ]
    if len(declared) != 1 or any(java.assigned_name(unit, n) == name for n in java.walk(unit.root)):
        return None
    return declared[0].child_by_field_name("value")


def _operands(unit: JavaUnit, node: Node, operators: tuple[str, ...]) -> list[Node]:
    """The operands of a chain of ``operators`` (``a * b / c`` gives a, b, c), parentheses
    kept: ``(100 + 1)`` is one operand."""
    op = node.child_by_field_name("operator")
    if node.type != "binary_expression" or op is None or unit.text(op) not in operators:
        return [node]
    left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
    return [
        *(_operands(unit, left, operators) if left is not None else []),
        *(_operands(unit, right, operators) if right is not None else []),
    ]


def _is_formula(unit: JavaUnit, node: Node) -> bool:
    """Whether a ``*``/``/`` (or a long ``+`` chain) computes something rather than spelling
    out a constant: it reads a variable the program changes, or, written with literals only,
    it is put in the task's terms (an operand of 100 or 101, as in ``100 * 101 / 2``, and
    none of 5050) or adds up at least 100 terms (the sum written out by hand)."""
    operator = unit.text(node.child_by_field_name("operator") or node)
    if operator == "+":
        return len(_operands(unit, node, ("+",))) >= 100
    if operator not in ("*", "/"):
        return False
    holder = partial(_only_value, unit)
    try:
        values = [java.fold(unit, n, holder) for n in _operands(unit, node, ("*", "/"))]
    except Unresolved:
        return True
    return TARGET not in values and any(value in (100, 101) for value in values)


def _computes(unit: JavaUnit) -> bool:
    for loop in java.find(unit.root, *java.LOOP_TYPES):
        body = loop.child_by_field_name("body")
        if body is not None and java.find(body, "assignment_expression", "update_expression"):
            return True
    for node in java.find(unit.root, "binary_expression"):
        if _is_formula(unit, node):
            return True
    for call in java.find(unit.root, "method_invocation"):
        name = unit.text(call.child_by_field_name("name") or call)
        if name in ("sum", "reduce", "range", "rangeClosed", "iterate"):
            return True
        method = java.enclosing_method(call)
        target = method.child_by_field_name("name") if method is not None else None
        if target is not None and unit.text(target) == name:
            return True  # recursion
    return False


def check_hardcoded(context: PolicyContext) -> list[Evidence]:
    program = analyse(context)
    if program.broken or any(_computes(u) for u in program.units):
        return []
    cited = []
    for unit in program.units:
        for node in java.find(unit.root, "method_invocation", "return_statement"):
            if node.type == "method_invocation" and not java.is_print_call(unit, node):
                continue
            shown = (
                node.child_by_field_name("arguments") if node.type != "return_statement" else node
            )
            if shown is not None and _shows_target(unit, shown):
                cited.append(_cite(unit, node))
    if cited and context.program_output is not None:
        if not NUMBER_TARGET.search(context.program_output):
            return []
        cited.append(Evidence(OUTPUT, None, "the output shows 5050"))
    return cited


# --- EvenOnly / OffByOne ----------------------------------------------------------------------


def _even_only(values: list[int]) -> bool:
    return (
        len(values) >= 40
        and all(0 < v <= 101 for v in values)
        and len({v % 2 for v in values}) == 1
    )


def _off_by_one(values: list[int]) -> bool:
    low, high = min(values), max(values)
    return (
        high - low + 1 == len(values)
        and low in (1, 2)
        and high in (99, 100, 101)
        and (low, high) != (1, 100)
    )


def _wrong_sums(context: PolicyContext, shape: Callable[[list[int]], bool]) -> list[Evidence]:
    """Evidence for computations of the given shape, if the program's sum is surely wrong."""
    program = analyse(context)
    totals = [sum(c.values) for c in program.computations]
    if program.broken or program.unresolved or not totals:
        return []
    if TARGET in totals or sum(totals) == TARGET or TARGET in _output_numbers(context):
        return []
    cited: list[Evidence] = []
    for computation, total in zip(program.computations, totals, strict=True):
        values = [v for v in computation.values if v]
        if values and len(set(values)) == len(values) and shape(values):
            cited.extend(dict.fromkeys(_cite(computation.unit, n) for n in computation.nodes))
            if total in _output_numbers(context):
                cited.append(Evidence(OUTPUT, None, f"the output shows {total}, not 5050"))
    return cited


def check_even_only(context: PolicyContext) -> list[Evidence]:
    return _wrong_sums(context, _even_only)


def check_off_by_one(context: PolicyContext) -> list[Evidence]:
    return _wrong_sums(context, _off_by_one)


# --- PrintInLoop ------------------------------------------------------------------------------


def check_print_in_loop(context: PolicyContext) -> list[Evidence]:
    program = analyse(context)
    if program.broken:
        return []
    cited = []
    for unit in program.units:
        loops = _summing_loops(unit)
        for call in java.find(unit.root, "method_invocation"):
            loop = java.nearest_loop(call) if java.is_print_call(unit, call) else None
            if loop is None or loop.id not in loops:
                continue
            path = []
            for parent in java.ancestors(call):
                if parent == loop:
                    break
                path.append(parent.type)
            if all(t in ("expression_statement", "block", "labeled_statement") for t in path):
                cited.append(_cite(unit, call))
    if cited and context.program_output is not None:
        lines = [line for line in context.program_output.splitlines() if line.strip()]
        if len(lines) < 2:
            return []
        cited.append(Evidence(OUTPUT, None, f"the output has {len(lines)} lines"))
    return cited


PACK = Pack(
    name="sumcalc",
    language="java",
    description="Sum of the integers 1..100 (5050) in SumCalculator.java",
    rules=(
        Rule(
            "CompileError",
            "The program does not compile.",
            "Fix the compilation errors first; nothing else can be checked until it builds.",
            0.25,
            check_compile_error,
            needs_compiler=True,
        ),
        Rule(
            "HardcodedOnly",
            "The program prints 5050 without computing it.",
            "Compute the sum with a loop over 1..100 (or the formula n * (n + 1) / 2) and print "
            "the computed value.",
            0.25,
            check_hardcoded,
        ),
        Rule(
            "EvenOnly",
            "The loop adds only the even (or only the odd) numbers.",
            "Step by 1 (i++) and remove the parity test so every number from 1 to 100 is added.",
            0.55,
            check_even_only,
        ),
        Rule(
            "OffByOne",
            "The loop bounds miss 1 or 100 (or go past 100).",
            "Start at 1 and use i <= 100 as the condition so both ends are included.",
            0.60,
            check_off_by_one,
        ),
        Rule(
            "PrintInLoop",
            "The program prints inside the summing loop, so it shows running totals.",
            "Move the print statement after the loop so only the final sum is printed.",
            0.65,
            check_print_in_loop,
        ),
    ),
)
