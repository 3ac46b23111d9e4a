"""Seeded bugs in real packages: one-definition mutants of a package's source, kept when its own tests catch them.

:func:`definition_mutants` changes one expression inside one function's exact span, through the AST: an
operator, a comparison, an integer constant by one, a boolean constant, a condition negated or one operand
of it dropped, two arguments of a call swapped, a return value replaced by ``None``. Only that span's bytes
change, so the file reads as it did everywhere else. :func:`keep` runs the package's own test suite in the
sandbox (:meth:`labkit.repoedit.workspace.Workspace.run_tests`) and keeps a mutant only if tests that pass on
the original fail on it, at least one and at most ``bound``. A kept mutant becomes a task that shows what a
bug report shows (:func:`bug_report`: the failing tests' output and a one-line symptom), never the mutation.
"""

from __future__ import annotations

import ast
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from labkit.repoedit.workspace import TestRun, Workspace

OPERATORS = ("operator", "comparison", "constant", "boolean", "condition_negated", "condition_dropped",
             "arguments_swapped", "return_value")
_BINOPS = {ast.Add: ("+", "-"), ast.Sub: ("-", "+"), ast.Mult: ("*", "//"), ast.FloorDiv: ("//", "*"),
           ast.Div: ("/", "*"), ast.Mod: ("%", "//"), ast.BitAnd: ("&", "|"), ast.BitOr: ("|", "&")}
_COMPARES = {ast.Lt: ("<", "<="), ast.LtE: ("<=", "<"), ast.Gt: (">", ">="), ast.GtE: (">=", ">"),
             ast.Eq: ("==", "!="), ast.NotEq: ("!=", "==")}
FAILING_BOUND = 10
"""A mutant that fails more of the package's tests than this breaks the package, not one behaviour."""


@dataclass(frozen=True)
class Mutant:
    """One seeded bug: the file, the definition it sits in, the operator, the line, the mutated file text,
    and the original and mutated spans (the known fix is the mutated span turned back)."""

    file: str
    definition: str
    operator: str
    line: int
    text: str
    original: str
    mutated: str


class _Span:
    """Byte offsets of AST positions in one source text (AST columns count UTF-8 bytes)."""

    def __init__(self, text: str) -> None:
        self.data = text.encode()
        self.starts = [0]
        for line in self.data.splitlines(keepends=True):
            self.starts.append(self.starts[-1] + len(line))

    def at(self, line: int, col: int) -> int:
        return self.starts[line - 1] + col

    def of(self, node: ast.AST) -> tuple[int, int]:
        return (self.at(node.lineno, node.col_offset),  # type: ignore[attr-defined]
                self.at(node.end_lineno, node.end_col_offset))  # type: ignore[attr-defined]

    def segment(self, start: int, end: int) -> str:
        return self.data[start:end].decode()


def _definitions(tree: ast.AST) -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """Every function and method with its qualified name (``Class.method``)."""
    def walk(node: ast.AST, prefix: str) -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                yield prefix + child.name, child
                yield from walk(child, prefix + child.name + ".")
            elif isinstance(child, ast.ClassDef):
                yield from walk(child, prefix + child.name + ".")
    yield from walk(tree, "")


def _own_nodes(definition: ast.AST) -> Iterator[ast.AST]:
    """The nodes of a definition's body, not those of the definitions nested in it (they are their own)."""
    def own(nodes: Iterator[ast.AST]) -> list[ast.AST]:
        return [n for n in nodes if not isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef
                                                    | ast.Lambda)]
    stack = own(iter(getattr(definition, "body", [])))
    while stack:
        node = stack.pop(0)
        yield node
        stack.extend(own(ast.iter_child_nodes(node)))


def _edits(node: ast.AST, span: _Span) -> Iterator[tuple[str, int, int, str]]:
    """(operator, start, end, replacement) for each mutation of ``node``, each one contiguous span."""
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        start, end = span.of(node.left)[1], span.of(node.right)[0]
        old, new = _BINOPS[type(node.op)]
        between = span.segment(start, end)
        if between.count(old) == 1 and (old != "*" or "**" not in between) and (old != "/" or "//" not in between):
            yield "operator", start, end, between.replace(old, new)
    elif isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _COMPARES:
        start, end = span.of(node.left)[1], span.of(node.comparators[0])[0]
        old, new = _COMPARES[type(node.ops[0])]
        between = span.segment(start, end)
        if between.count(old) == 1 and between.strip() == old:
            yield "comparison", start, end, between.replace(old, new)
    elif isinstance(node, ast.Constant) and isinstance(node.value, bool):
        yield "boolean", *span.of(node), str(not node.value)
    elif isinstance(node, ast.Constant) and type(node.value) is int:
        start, end = span.of(node)
        if span.segment(start, end).isdigit():
            yield "constant", start, end, str(node.value + 1)
            if node.value > 0:
                yield "constant", start, end, str(node.value - 1)
    elif isinstance(node, ast.If | ast.While):
        test = node.test
        start, end = span.of(test)
        text = span.segment(start, end)
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            yield "condition_negated", start, end, span.segment(*span.of(test.operand))
        elif "\n" not in text:
            yield "condition_negated", start, end, f"not ({text})"
        if isinstance(test, ast.BoolOp) and len(test.values) == 2 and "\n" not in text:
            for kept in test.values:
                yield "condition_dropped", start, end, span.segment(*span.of(kept))
    elif isinstance(node, ast.Call) and len(node.args) >= 2 and not node.keywords \
            and not any(isinstance(a, ast.Starred) for a in node.args[:2]):
        (a0, a1), (b0, b1) = span.of(node.args[0]), span.of(node.args[1])
        first, second = span.segment(a0, a1), span.segment(b0, b1)
        if first != second:
            yield "arguments_swapped", a0, b1, second + span.segment(a1, b0) + first
    elif isinstance(node, ast.Return) and node.value is not None \
            and not (isinstance(node.value, ast.Constant) and node.value.value is None):
        yield "return_value", *span.of(node.value), "None"


def definition_mutants(text: str, file: str) -> list[Mutant]:
    """Every mutation of one expression inside one definition of ``text`` that still parses, in source order."""
    tree = ast.parse(text)
    span = _Span(text)
    found = []
    for name, definition in _definitions(tree):
        for node in _own_nodes(definition):
            for operator, start, end, new in _edits(node, span):
                data = span.data[:start] + new.encode() + span.data[end:]
                mutated = data.decode()
                try:
                    ast.parse(mutated)
                except SyntaxError:
                    continue
                line = text.encode()[:start].count(b"\n") + 1
                found.append(Mutant(file, name, operator, line, mutated, *_whole_lines(span.data, data, start,
                                                                                       end, len(new.encode()))))
    return found


def _whole_lines(before: bytes, after: bytes, start: int, end: int, new_length: int) -> tuple[str, str]:
    """The lines the mutation touched, before and after: the search/replace of the known fix, turned back."""
    first = before.rfind(b"\n", 0, start) + 1
    last = before.find(b"\n", end)
    last = len(before) if last < 0 else last
    shift = new_length - (end - start)
    return before[first:last].decode(), after[first:last + shift].decode()


def sample(mutants: list[Mutant], n: int, seed: int) -> list[Mutant]:
    """``n`` mutants drawn with ``seed``, spread over definitions (at most one per definition first)."""
    order = mutants[:]
    random.Random(seed).shuffle(order)
    first: dict[tuple[str, str], Mutant] = {}
    for m in order:
        first.setdefault((m.file, m.definition), m)
    chosen = list(first.values())
    return (chosen + [m for m in order if m not in chosen])[:n]


@dataclass(frozen=True)
class Verdict:
    """Whether a mutant is kept, and why: the tests it broke (that pass on the original) and its run."""

    kept: bool
    why: str
    broken: tuple[str, ...]
    run: TestRun


def keep(mutant: Mutant, source: Path, original: TestRun, *, bound: int = FAILING_BOUND,
         timeout: float = 120.0) -> Verdict:
    """Run the package's tests on ``mutant`` applied to a copy of ``source``; keep it if 1 to ``bound``
    tests that pass on the original (``original``) fail, and the run neither timed out nor errored."""
    with Workspace(source) as ws:
        (ws.root / mutant.file).write_text(mutant.text, encoding="utf-8")
        run = ws.run_tests(timeout=timeout)
    broken = tuple(sorted(set(original.passed) & set(run.failed)))
    if run.outcome in ("timeout", "error", "no_tests"):
        return Verdict(False, f"the run ended in {run.outcome}", broken, run)
    if not broken:
        return Verdict(False, "no test catches it", broken, run)
    if len(broken) > bound:
        return Verdict(False, f"{len(broken)} tests fail (more than {bound})", broken, run)
    return Verdict(True, f"{len(broken)} test(s) fail", broken, run)


# Text a test's message holds that differs from machine to machine, and what a report shows instead, so that a
# build is the same everywhere: an object's memory address in its default repr, pytest's numbered temporary folder.
MACHINE_TEXT = ((re.compile(r"\bat 0x[0-9a-fA-F]+"), "at 0x..."),
                (re.compile(r"[^\s'\"(]*/pytest-of-[^/\s]+/pytest-\d+"), "<tmp>"))


def machine_independent(message: str) -> str:
    """``message`` with every :data:`MACHINE_TEXT` pattern replaced."""
    for pattern, shown in MACHINE_TEXT:
        message = pattern.sub(shown, message)
    return message


def bug_report(verdict: Verdict, package: str) -> str:
    """What a user's bug report shows: a one-line symptom and the failing tests' messages (without
    :data:`MACHINE_TEXT`), never the mutation."""
    names = ", ".join(verdict.broken[:3]) + (" and more" if len(verdict.broken) > 3 else "")
    lines = [f"Since the last change, {package}'s test suite fails: {names}. Find the bug in the package's source "
             "(not in the tests) and fix it so that the whole suite passes."]
    for test in verdict.broken[:3]:
        message = machine_independent(verdict.run.details.get(test, "").strip())
        if message:
            lines.append(f"{test}: {message}")
    return "\n".join(lines)
