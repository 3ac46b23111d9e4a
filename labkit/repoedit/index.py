"""DISCOVER_PROJECT's work, done by code: which files exist, what they define, which are tests.

The index is what a plan is checked against (a plan may name only indexed, non-test source files)
and what the model is shown instead of the repository: names and symbols, not contents.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from labkit.core.python_source import parse

SKIP_DIRS = frozenset({".git", "__pycache__", ".pytest_cache"})


def is_test_path(path: str) -> bool:
    """A test file by pytest's conventions: under ``tests/``, ``test_*.py``, ``*_test.py`` or ``conftest.py``."""
    pure = PurePosixPath(path)
    name = pure.name
    return ("tests" in pure.parts[:-1] or name.startswith("test_") or name.endswith("_test.py")
            or name == "conftest.py")


@dataclass(frozen=True)
class FileEntry:
    """One indexed file: its path, whether it is a test, the names it defines and the modules it imports."""

    path: str
    test: bool
    symbols: tuple[str, ...] = ()
    imports: tuple[str, ...] = ()
    lines: int = 0


@dataclass(frozen=True)
class RepoIndex:
    files: tuple[FileEntry, ...]

    @property
    def source_files(self) -> tuple[str, ...]:
        return tuple(f.path for f in self.files if not f.test and f.path.endswith(".py"))

    @property
    def test_files(self) -> tuple[str, ...]:
        return tuple(f.path for f in self.files if f.test)

    def entry(self, path: str) -> FileEntry | None:
        return next((f for f in self.files if f.path == path), None)

    def module_file(self, module: str) -> str | None:
        """The source file that ``import module`` loads, if it is in the project."""
        wanted = module.replace(".", "/") + ".py"
        return wanted if wanted in self.source_files else None

    def summary(self) -> str:
        """One line per source file with its symbols: the model's view of the project."""
        return "\n".join(f"{f.path}: {', '.join(f.symbols) or '(no definitions)'}"
                         for f in self.files if not f.test and f.path.endswith(".py"))

    def to_dict(self) -> dict[str, object]:
        return {"source": {f.path: list(f.symbols) for f in self.files if not f.test and f.path.endswith(".py")},
                "tests": list(self.test_files)}


def _symbols(tree: ast.Module) -> tuple[tuple[str, ...], tuple[str, ...]]:
    names: list[str] = []
    imports: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            names.append(f"{node.name}()")
        elif isinstance(node, ast.ClassDef):
            methods = [f"{node.name}.{m.name}()" for m in node.body
                       if isinstance(m, ast.FunctionDef | ast.AsyncFunctionDef) and not m.name.startswith("__")]
            names += [node.name, *methods]
        elif isinstance(node, ast.Assign):
            names += [t.id for t in node.targets if isinstance(t, ast.Name) and t.id.isupper()]
        elif isinstance(node, ast.Import):
            imports += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            imports.append(node.module)
    return tuple(names), tuple(imports)


def index_project(root: Path) -> RepoIndex:
    """Index every file under ``root``; Python files are parsed for top-level names and imports.

    Symlinks that lead out of the project are left out: the index is what a plan may name, and
    nothing outside the project may be read or planned.
    """
    entries: list[FileEntry] = []
    real_root = root.resolve()
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if any(part in SKIP_DIRS for part in rel.parts) or not path.is_file() or rel.name == ".gitignore":
            continue
        if real_root not in path.resolve().parents:  # a symlink out of the project is not part of it
            continue
        posix = rel.as_posix()
        symbols: tuple[str, ...] = ()
        imports: tuple[str, ...] = ()
        text = path.read_text(encoding="utf-8", errors="replace")
        if posix.endswith(".py"):
            try:
                symbols, imports = _symbols(parse(text))
            except SyntaxError:
                symbols = ("(does not parse)",)
        entries.append(FileEntry(posix, is_test_path(posix), symbols, imports, text.count("\n")))
    return RepoIndex(tuple(entries))


def _used_names(text: str) -> set[str]:
    try:
        tree = parse(text)
    except SyntaxError:
        return set()
    return ({n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
            | {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
            | {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names})


def summary_with_uses(root: Path, index: RepoIndex) -> str:
    """:meth:`RepoIndex.summary` plus, per source file, the other files' definitions it uses by name.

    A rename or a changed signature must also change every caller; the definitions alone do not
    show a planner that ``report.py`` calls ``Inventory.get_qty``. Code reads that from the syntax
    tree (names and attributes), so the planner need not guess it.
    """
    lines = []
    for entry in index.files:
        if entry.test or not entry.path.endswith(".py"):
            continue
        used = _used_names((root / entry.path).read_text(encoding="utf-8", errors="replace"))
        foreign = [sym for other in index.files if other.path != entry.path and not other.test
                   for sym in other.symbols if sym.rstrip("()").rsplit(".", 1)[-1] in used]
        line = f"{entry.path}: {', '.join(entry.symbols) or '(no definitions)'}"
        lines.append(line + (f"; uses {', '.join(foreign)}" if foreign else ""))
    return "\n".join(lines)
