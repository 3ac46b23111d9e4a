"""Where a failure lives in a project too big to show whole: read from the failing output and the index.

Both steps go by evidence in the output, never by a guess. The file: the deepest traceback frame in a
source file; else the source files that define names the output uses (most names first); else the
sources the failing test modules import. The definitions, in a file too long to show: the ones the
failure points at (:func:`~labkit.repoedit.definitions.blamed`) and the ones of the same file they call,
shown as an excerpt with the lines left out marked.
"""

from __future__ import annotations

import ast
import re
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from labkit.core.python_source import parse
from labkit.repoedit.definitions import ELIDED, IMPORTS, Definition, blamed, definitions, framed
from labkit.repoedit.index import RepoIndex, is_test_path
from labkit.repoedit.routing import trace_files

_IDENT = re.compile(r"[A-Za-z_]\w*")
_FRAME = re.compile(r'^(?:\s*File "([\w./-]+\.py)", line (\d+)|([\w./-]+\.py):(\d+): in )', re.MULTILINE)


def short_name(symbol: str) -> str:
    """``Class.method()`` -> ``method``; ``add()`` -> ``add``."""
    return symbol.rstrip("()").rsplit(".", 1)[-1]


def candidate_files(output: str, failed: Sequence[str], index: RepoIndex) -> list[tuple[str, str]]:
    """The source files a failure may live in, best first, each with the evidence for it."""
    found: dict[str, str] = {}
    for path in reversed(trace_files(output)):  # the deepest frame is printed last
        if path in index.source_files:
            found.setdefault(path, "the failing traceback passes through it")
    used = set(_IDENT.findall(output))
    scored = []
    for path in index.source_files:
        entry = index.entry(path)
        names = sorted({short_name(s) for s in (entry.symbols if entry else ()) if short_name(s) in used})
        if names:
            scored.append((-len(names), path, names))
    for _, path, names in sorted(scored):
        found.setdefault(path, f"it defines {', '.join(names[:4])}, named in the failing output")
    for node in failed:
        entry = index.entry(node.split("::", 1)[0])
        for module in entry.imports if entry else ():
            path = index.module_file(module)
            if path in index.source_files:
                found.setdefault(path, "a failing test module imports it")
    return list(found.items())


def failing_statements(root: Path, output: str, max_chars: int = 1500, test_lines: int = 40) -> str:
    """The whole statements at the traceback's lines, read from the project's files; in a test file, the
    whole test function (up to ``test_lines`` lines).

    A short traceback prints only the last line of a statement that spans several (``).as_bin()``), and the
    call that went wrong is often on an earlier one, or earlier in the test; the names there are evidence
    of where the bug is."""
    found: list[str] = []
    for match in _FRAME.finditer(output):
        file, line = (match.group(1), match.group(2)) if match.group(1) else (match.group(3), match.group(4))
        source = root / file
        if not source.is_file() or not source.resolve().is_relative_to(root.resolve()):
            continue
        text = source.read_text(encoding="utf-8", errors="replace")
        try:
            tree = parse(text)
        except SyntaxError:
            continue
        at = int(line)
        spans = [(n.lineno, n.end_lineno or n.lineno) for n in ast.walk(tree)
                 if isinstance(n, ast.stmt) and n.lineno <= at <= (n.end_lineno or n.lineno)]
        tests = [(n.lineno, n.end_lineno or n.lineno) for n in ast.walk(tree)
                 if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name.startswith("test")
                 and n.lineno <= at <= (n.end_lineno or n.lineno) < n.lineno + test_lines]
        if is_test_path(file) and tests:
            spans = tests  # the whole test
        if spans:
            first, last = max(spans)  # the innermost starts last
            statement = textwrap.dedent("\n".join(text.splitlines()[first - 1:last]))
            if statement not in found:
                found.append(statement)
    return "\n".join(found)[:max_chars]


def _calls(text: str, definition: Definition) -> set[str]:
    lines = text.splitlines()[definition.first - 1:definition.last]
    return set(_IDENT.findall("\n".join(lines)))


def _header_end(lines: list[str], first: int) -> int:
    """The last line of a class statement's header (decorators and the ``class ...:`` line), 1-based."""
    at = first
    while at <= len(lines) and not lines[at - 1].rstrip().endswith(":"):
        at += 1
    return at


def long_docstrings(text: str) -> dict[int, tuple[int, int]]:
    """The docstrings of ``text``'s functions and classes that span more than one line: first line -> (last
    line, indent), for those that start and end a line of their own."""
    lines, found = text.splitlines(), {}
    for node in ast.walk(parse(text)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and node.body:
            doc = node.body[0]
            if (isinstance(doc, ast.Expr) and isinstance(doc.value, ast.Constant) and isinstance(doc.value.value, str)
                    and (doc.end_lineno or doc.lineno) > doc.lineno
                    and not lines[doc.lineno - 1][:doc.col_offset].strip()
                    and lines[(doc.end_lineno or doc.lineno) - 1].rstrip().endswith(('"""', "'''"))):
                found[doc.lineno] = (doc.end_lineno or doc.lineno, doc.col_offset)
    return found


_OPERATORS: dict[type, tuple[str, ...]] = {
    ast.Eq: ("__eq__",), ast.NotEq: ("__ne__", "__eq__"), ast.Lt: ("__lt__",), ast.LtE: ("__le__",),
    ast.Gt: ("__gt__",), ast.GtE: ("__ge__",), ast.In: ("__contains__", "__iter__"),
    ast.NotIn: ("__contains__", "__iter__"), ast.Add: ("__add__", "__radd__"), ast.Sub: ("__sub__", "__rsub__"),
    ast.Mult: ("__mul__", "__rmul__"), ast.Div: ("__truediv__",), ast.FloorDiv: ("__floordiv__",),
    ast.Mod: ("__mod__",), ast.Pow: ("__pow__",), ast.LShift: ("__lshift__",), ast.RShift: ("__rshift__",),
    ast.BitOr: ("__or__", "__ror__"), ast.BitAnd: ("__and__", "__rand__"), ast.BitXor: ("__xor__",),
    ast.MatMult: ("__matmul__",), ast.Invert: ("__invert__",), ast.USub: ("__neg__",), ast.Not: ("__bool__",),
    ast.Load: ("__getitem__",), ast.Store: ("__setitem__",), ast.Del: ("__delitem__",)}
_BUILTINS: dict[str, tuple[str, ...]] = {
    "len": ("__len__",), "str": ("__str__",), "repr": ("__repr__",), "hash": ("__hash__",), "bool": ("__bool__",),
    "int": ("__int__", "__index__"), "float": ("__float__",), "format": ("__format__", "__str__"),
    "iter": ("__iter__",), "next": ("__next__",), "reversed": ("__reversed__",), "list": ("__iter__",),
    "tuple": ("__iter__",), "set": ("__iter__", "__hash__"), "sorted": ("__iter__", "__lt__"),
    "dict": ("__iter__",), "print": ("__str__",), "dumps": ("__reduce__", "__getstate__"),
    "loads": ("__setstate__", "__reduce__"), "copy": ("__copy__", "__reduce__"),
    "deepcopy": ("__deepcopy__", "__reduce__")}


def special_calls(statements: str) -> tuple[str, ...]:
    """The special methods the syntax of ``statements`` calls without naming them (``a == b`` calls ``__eq__``,
    ``x[i]`` calls ``__getitem__``, ``len(x)`` calls ``__len__``, a loop ``__iter__``, ...): the data model's
    map from syntax to methods, so evidence that never names the method still points at it."""
    found: list[str] = ["__init__", "__new__"]
    trees = []
    for block in re.split(r"\n(?=\S)", textwrap.dedent(statements)):  # each statement; a cut-off one is skipped
        try:
            trees.append(ast.parse(block))
        except SyntaxError:
            continue
    for node in (n for tree in trees for n in ast.walk(tree)):
        kinds: list[type] = []
        if isinstance(node, ast.Compare):
            kinds = [type(op) for op in node.ops]
        elif isinstance(node, ast.BinOp | ast.AugAssign | ast.UnaryOp):
            kinds = [type(node.op)]
        elif isinstance(node, ast.Subscript):
            kinds = [type(node.ctx)]
        for kind in kinds:
            found += _OPERATORS.get(kind, ())
        if isinstance(node, ast.Call):
            func = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
            found += _BUILTINS.get(func, ())
        elif isinstance(node, ast.For | ast.comprehension):
            found.append("__iter__")
        elif isinstance(node, ast.With):
            found += ["__enter__", "__exit__"]
        elif isinstance(node, ast.JoinedStr):
            found += ["__format__", "__str__"]
    return tuple(dict.fromkeys(found))


def excerpt(text: str, focus: Sequence[str], max_lines: int, *, short_docstrings: bool = False
            ) -> tuple[str, tuple[str, ...]]:
    """The part of ``text`` to show: the ``focus`` definitions, then the ones they call, as many as fit in
    ``max_lines`` (the first always), with the header line of a shown method's class; returns the excerpt
    and the definitions it holds. A class whose methods are in focus is shown as those methods. With
    ``short_docstrings``, a docstring of more than one line is shown as
    :data:`~labkit.repoedit.definitions.ELIDED` (and counts as one line): a fix is in the code, and copying the
    docstring back costs the model most of its answer."""
    defs = {d.name: d for d in definitions(text) if d.name != IMPORTS}
    methods_of = {name.rsplit(".", 1)[0] for name in focus if "." in name}
    chosen = [defs[name] for name in focus if name in defs and name not in methods_of]
    if chosen:
        called = set().union(*(_calls(text, d) for d in chosen))
        chosen += [d for d in defs.values() if d not in chosen and d.name.rsplit(".", 1)[-1] in called]
    docs = long_docstrings(text) if short_docstrings else {}

    def size(d: Definition) -> int:
        return d.last - d.first + 1 - sum(end - at for at, (end, _) in docs.items() if d.first <= at <= d.last)

    kept: list[Definition] = []
    for d in chosen:
        inside = any(k.first <= d.first and d.last <= k.last for k in kept)
        if not inside and (not kept or sum(size(k) for k in kept) + size(d) <= max_lines):
            kept.append(d)
    classes = {d.name: d for d in defs.values() if d.indent == 0}
    headers = [classes[d.name.rsplit(".", 1)[0]] for d in kept if "." in d.name and d.name.rsplit(".", 1)[0] in classes]
    lines = text.splitlines()
    parts, at = [], 1
    for first, last in sorted({(c.first, _header_end(lines, c.first)) for c in headers if c not in kept}
                              | {(d.first, d.last) for d in kept}):
        if first < at:
            continue
        if first > at:
            parts.append(f"# ... lines {at}-{first - 1} not shown")
        line = first
        while line <= last:
            if line in docs:
                end, indent = docs[line]
                parts.append(" " * indent + ELIDED)
                line = end + 1
            else:
                parts.append(lines[line - 1])
                line += 1
        at = last + 1
    if at <= len(lines):
        parts.append(f"# ... lines {at}-{len(lines)} not shown")
    return "\n".join(parts), tuple(d.name for d in kept)


@dataclass(frozen=True)
class FileView:
    """What an edit prompt shows of one file: the text, the definitions it may rewrite (the blamed ones first),
    the blamed ones, and whether the text is an excerpt of the file."""

    shown: str
    names: tuple[str, ...]
    pointed: tuple[str, ...]
    excerpted: bool = False
    short_docstrings: bool = False  # the excerpt shows long docstrings as ELIDED; a rewrite keeps them


def file_view(path: str, content: str, output: str, *, view_lines: int | None, excerpt_lines: int,
              short_docstrings: bool = False, statements: str = "") -> FileView:
    """The file as its edit prompt shows it: whole, or, when it is longer than ``view_lines`` lines (None: never),
    the excerpt of the definitions ``output`` blames, then those the failing ``statements`` name (a class a
    traceback frame is in stays whole; another is refined to the methods they name and the special methods their
    syntax calls), which are then the only ones that may change (their long docstrings elided, with
    ``short_docstrings``)."""
    names = tuple(d.name for d in definitions(content))
    pointed = blamed(path, content, output)
    names = (*pointed, *(n for n in names if n not in pointed))
    if names and view_lines is not None and content.count("\n") > view_lines:
        focus = pointed
        if statements:
            frames = framed(path, content, output)
            named = [n for n in blamed(path, content, statements) if n.rsplit(".", 1)[0] not in frames]
            classes = dict.fromkeys(c for n in named for c in (n, n.rsplit(".", 1)[0])
                                    if any(d.startswith(c + ".") for d in names))
            called = [f"{c}.{m}" for c in classes for m in special_calls(statements) if f"{c}.{m}" in names]
            focus = tuple(dict.fromkeys((*pointed, *named, *called)))
        part, held = excerpt(content, focus, excerpt_lines, short_docstrings=short_docstrings)
        if held:
            return FileView(part, held, tuple(n for n in focus if n in held), excerpted=True,
                            short_docstrings=short_docstrings and ELIDED in part)
    return FileView(content, names, pointed)
