"""Whole definitions as the unit of an edit: found by name through ``ast``, replaced, and blamed by a failure.

A small model that must copy a search text character for character fails for reasons that have
nothing to do with the fix (a quote style, an indentation). Naming a definition from a closed list
(the file's own functions, classes and methods) and writing it out whole is a contract such a model
can meet: code finds the lines, re-bases the indentation and checks that the new text defines what
it claims to. The result is an ordinary search/replace edit (the old definition's exact text and the
new one), so every edit guard of :mod:`~labkit.repoedit.edits` still judges it.
"""

from __future__ import annotations

import ast
import re
import textwrap
from dataclasses import dataclass

from labkit.core.python_source import parse
from labkit.repoedit.tasks import SearchReplace


@dataclass(frozen=True)
class Definition:
    """A function, class or method of a file: ``name`` (``Class.method`` for a method), its lines and indent."""

    name: str
    first: int  # 1-based, the first decorator's line if decorated
    last: int
    indent: int


IMPORTS = "imports"
"""The name of the file's import lines (from the first import to the last) in the list of definitions."""

ELIDED = '"""..."""'
"""What an excerpt shows in place of a docstring of more than one line (short_docstrings)."""


def _assigned(node: ast.stmt) -> str:
    """The one name a top-level assignment binds (``FACTORS = {...}``, ``LIMIT: int = 3``), else ''."""
    if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
        return node.targets[0].id
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return node.target.id
    return ""


def _leading_imports(body: list[ast.stmt]) -> list[ast.stmt]:
    """The file's first run of import statements (a later import, after code, is not part of it)."""
    start = next((i for i, n in enumerate(body) if isinstance(n, ast.Import | ast.ImportFrom)), None)
    if start is None:
        return []
    run = []
    for node in body[start:]:
        if not isinstance(node, ast.Import | ast.ImportFrom):
            break
        run.append(node)
    return run


def definitions(text: str) -> tuple[Definition, ...]:
    """The file's imports (as one entry), top-level functions, classes (and their methods) and single-name
    assignments, in file order.

    Empty if the file does not parse. An assignment counts because a table or a constant is as
    often the thing to fix as a function is."""
    try:
        tree = parse(text)
    except SyntaxError:
        return ()
    found: list[Definition] = []
    imports = _leading_imports(tree.body)
    if imports:  # the import lines, as one pseudo-definition: a rename must change them too
        found.append(Definition(IMPORTS, imports[0].lineno, imports[-1].end_lineno or imports[-1].lineno, 0))

    def add(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef, name: str) -> None:
        first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        found.append(Definition(name, first, node.end_lineno or node.lineno, node.col_offset))

    for node in tree.body:
        target = _assigned(node)
        if target:
            found.append(Definition(target, node.lineno, node.end_lineno or node.lineno, node.col_offset))
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            add(node, node.name)
        elif isinstance(node, ast.ClassDef):
            add(node, node.name)
            for member in node.body:
                if isinstance(member, ast.FunctionDef | ast.AsyncFunctionDef):
                    add(member, f"{node.name}.{member.name}")
    return tuple(found)


def _is_docstring(node: ast.stmt) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)


def _defined(code: str) -> tuple[str | None, str, str]:
    """The one function, class or assigned name ``code`` defines and that definition's own lines, or None and why.

    A module docstring or import lines the model copied along with the definition are dropped (they
    are not part of the definition, and the file keeps its own; imports change as ``imports``)."""
    try:
        tree = parse(code)
    except SyntaxError as exc:
        return None, f"the new definition does not parse: {exc.msg} (line {exc.lineno})", ""
    if tree.body and all(isinstance(n, ast.Import | ast.ImportFrom) for n in tree.body):
        return IMPORTS, "", code
    defs = [n for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
            or _assigned(n)]
    others = [n for n in tree.body if n not in defs and not _is_docstring(n)
              and not isinstance(n, ast.Import | ast.ImportFrom)]
    if len(defs) != 1 or others:
        return None, (f"the code must hold exactly one definition; it holds {len(defs)}, "
                      f"and {len(others)} other statement(s)"), ""
    node = defs[0]
    first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
    own = "\n".join(code.splitlines()[first - 1:node.end_lineno])
    return (_assigned(node) or node.name), "", own  # type: ignore[union-attr]


_Def = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


def _with_docstrings(code: str) -> list[tuple[str, _Def, ast.Expr | None]]:
    """The definition ``code`` holds ('' for it) and a class's methods (by name), each with its docstring."""
    node = next((n for n in parse(code).body if isinstance(n, _Def)), None)
    if node is None:
        return []
    members = [m for m in node.body if isinstance(m, _Def)] if isinstance(node, ast.ClassDef) else []
    return [(key, n, n.body[0] if _is_docstring(n.body[0]) else None)  # type: ignore[misc]
            for key, n in [("", node), *((m.name, m) for m in members)]]


def _restore_docstrings(old: str, new: str) -> str:
    """``new`` (a definition) with the docstrings of ``old`` (the definition it replaces; a class's methods
    matched by name) that span more than one line, in place of what ``new`` writes there or where it has none:
    the model was shown :data:`ELIDED` for them, so what it writes there is a guess."""
    try:
        before = {key: doc for key, _, doc in _with_docstrings(old)}
        after = _with_docstrings(new)
    except SyntaxError:
        return new
    old_lines, lines = old.splitlines(), new.splitlines()
    spliced: list[tuple[int, int, list[str]]] = []
    for key, node, doc in after:
        kept = before.get(key)
        if kept is None or kept.end_lineno == kept.lineno:  # a one-line docstring was shown: the answer's stands
            continue
        first = node.body[0]
        indent = " " * first.col_offset
        text = [indent + line[kept.col_offset:] if line.strip() and not line[:kept.col_offset].strip() else line
                for line in old_lines[kept.lineno - 1:kept.end_lineno]]  # a blank line stays as it was
        if doc is not None:
            spliced.append((doc.lineno - 1, doc.end_lineno or doc.lineno, text))
        elif first.lineno > node.lineno:  # a body on the def line has no room for a docstring
            spliced.append((first.lineno - 1, first.lineno - 1, text))
    for start, end, text in sorted(spliced, reverse=True):
        lines[start:end] = text
    return "\n".join(lines)


def definition_edit(text: str, name: str, code: str, *, keep_docstrings: bool = False
                    ) -> tuple[SearchReplace | None, str, str]:
    """The search/replace edit that puts ``code`` in place of definition ``name`` of ``text``, or None and why.

    ``code`` may be indented any way (a method written at column 0 is re-based to its class); it
    must define one thing and nothing else. It may define it under another name (a rename: the
    requirement may ask for one); the third value says so, for the edit's event. With
    ``keep_docstrings`` (the model was shown :data:`ELIDED` for them), a docstring of more than one line
    stays the old one, whatever the new code writes there. A method written under its dotted name
    (``def Box.size(self):``, as the list of definitions names it) is read as the method.
    """
    if "." in name:
        code = re.sub(rf"^(\s*(?:async\s+)?def\s+){re.escape(name)}(?=\s*\()", rf"\g<1>{name.rsplit('.', 1)[-1]}",
                      code, count=1, flags=re.MULTILINE)
    found = next((d for d in definitions(text) if d.name == name), None)
    if found is None:
        known = ", ".join(d.name for d in definitions(text)) or "(none)"
        return None, f"{name!r} is not a definition of the file (it has: {known})", ""
    flat = textwrap.dedent(code.expandtabs(4)).strip("\n")
    defined, why, flat = _defined(flat)
    if defined is None:
        return None, why, ""
    renamed = f"{name} renamed to {defined}" if defined != name.rsplit(".", 1)[-1] else ""
    lines = text.splitlines(keepends=True)
    old = "".join(lines[found.first - 1:found.last])
    if keep_docstrings:
        flat = _restore_docstrings(textwrap.dedent(old).strip("\n"), flat)
    new = textwrap.indent(flat, " " * found.indent) + ("\n" if old.endswith("\n") else "")
    return SearchReplace(search=old, replace=new), "", renamed


_SHORT_FRAME = re.compile(r"^([\w./-]+\.py):(\d+): in (\w+)", re.MULTILINE)
_LONG_FRAME = re.compile(r'^\s*File "([\w./-]+\.py)", line (\d+), in (\w+)', re.MULTILINE)
_IDENT = re.compile(r"[A-Za-z_]\w*")


def blamed(path: str, text: str, output: str) -> tuple[str, ...]:
    """The definitions of ``path`` that a failing test run points at, most specific first.

    A traceback frame in ``path`` names its definition by line (the deepest frame first); an
    assertion that fails inside a test blames no frame of the file, so the names the test's shown
    lines use are matched against the file's definitions. Empty when nothing matches.
    """
    in_frames = framed(path, text, output)
    if in_frames:
        return in_frames
    used = set(_IDENT.findall(output))
    return tuple(d.name for d in definitions(text) if d.name.rsplit(".", 1)[-1] in used)


def framed(path: str, text: str, output: str) -> tuple[str, ...]:
    """The definitions of ``path`` that hold a frame of ``output``'s traceback, the deepest frame first."""
    defs = definitions(text)
    found: list[str] = []
    for pattern in (_SHORT_FRAME, _LONG_FRAME):
        for match in pattern.finditer(output):
            if match.group(1) == path:
                line = int(match.group(2))
                inner = [d for d in defs if d.first <= line <= d.last]
                if inner:
                    found.append(max(inner, key=lambda d: d.first).name)
    return tuple(dict.fromkeys(reversed(found)))  # a traceback lists the deepest frame last
