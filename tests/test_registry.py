"""One explicit registry names the modules that declare event types, tables and commands; every
module imports on its own, in a fresh interpreter, and a shipped trace loads with nothing imported first."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from labkit.core import registry

ROOT = Path(__file__).resolve().parents[1]


def fresh(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=False)


MODULES = ["labkit", "labkit.core.registry", "labkit.core.events", "labkit.core.store", "labkit.core.reducer",
           "labkit.core.machine", "labkit.core.catalog", "labkit.cli", "labkit.core.dispatch", "labkit.core.examples",
           "labkit.course.viewer",
           "labkit.runtime", "labkit.runtime.events", "labkit.runtime.table", "labkit.runtime.cli",
           "labkit.runtime.executor", "labkit.runtime.state"]


@pytest.mark.parametrize("module", MODULES)
def test_each_module_imports_alone_in_a_fresh_interpreter(module: str) -> None:
    out = fresh(f"import {module}")
    assert out.returncode == 0, out.stderr


def test_a_shipped_trace_loads_with_nothing_imported_first() -> None:
    out = fresh("from labkit import load_events; "
                "events = load_events('data/traces/normal_success.jsonl'); print(len(events), events[5].type)")
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[0] == "46"


def test_tables_are_found_without_importing_their_layer() -> None:
    out = fresh("import sys; from labkit.core import catalog; "
                "print('labkit.runtime.table' in sys.modules, catalog.names())")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False ['planner_executor', 'repoedit', 'ticket', 'writing']"


def test_importing_a_table_module_registers_nothing_by_side_effect() -> None:
    """Providers declare; the catalog reads. Importing one does not touch the catalog's entries."""
    out = fresh("import labkit.runtime.table, labkit.core.catalog as c; print(sorted(c._ENTRIES))")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return found


def _module_path(name: str) -> Path:
    base = ROOT / Path(*name.split("."))
    return base / "__init__.py" if base.is_dir() else base.with_suffix(".py")


@pytest.mark.parametrize(("loader", "kind"), [("labkit.core.catalog", "TABLE_MODULES"),
                                              ("labkit.cli", "COMMAND_MODULES"),
                                              ("labkit.core.events", "EVENT_MODULES"), ("labkit.core.registry", "")])
def test_no_declaring_module_imports_the_module_that_reads_it(loader: str, kind: str) -> None:
    """The two former loops (catalog <-> runtime.table, cli <-> runtime.cli) stay gone: a module the registry
    names never imports its reader (the registry itself imports nothing from labkit but the error type, a module
    that imports nothing)."""
    if not kind:
        assert {m for m in _imports(_module_path(loader)) if m.startswith("labkit")} <= \
            {"labkit.core.errors", "labkit.core.errors.LabkitError"}
        assert not {m for m in _imports(_module_path("labkit.core.errors")) if m.startswith("labkit")}
        return
    for name in getattr(registry, kind):
        path = _module_path(name)
        if path.exists() and loader != "labkit.core.events":  # event modules subclass Event: that import is the point
            assert loader not in _imports(path), f"{name} imports {loader}, which loads it"


def test_every_listed_module_declares_what_its_list_promises() -> None:
    for module in registry.load(registry.TABLE_MODULES):
        assert isinstance(module.TABLES, dict) and module.TABLES
    for module in registry.load(registry.COMMAND_MODULES):
        assert callable(module.register)
    from labkit.core.events import event_types

    declared = {cls.__module__ for cls in event_types().values()}
    assert set(registry.EVENT_MODULES) <= declared


def test_a_missing_part_is_skipped_but_a_broken_one_is_reported(tmp_path: Path) -> None:
    assert registry.load(["labkit.not_in_this_checkout"]) == []
    (tmp_path / "broken_part.py").write_text("import a_package_that_is_not_installed\n", encoding="utf-8")
    sys.path.insert(0, str(tmp_path))
    try:
        with pytest.raises(ModuleNotFoundError):
            registry.load(["broken_part"])
    finally:
        sys.path.remove(str(tmp_path))


def test_declarations_merge_first_wins_and_a_module_without_them_is_named(tmp_path: Path) -> None:
    from labkit.core.errors import LabkitError

    (tmp_path / "part_a.py").write_text("THINGS = {'x': 1, 'y': 2}\n", encoding="utf-8")
    (tmp_path / "part_b.py").write_text("THINGS = {'y': 3, 'z': 4}\n", encoding="utf-8")
    (tmp_path / "part_c.py").write_text("OTHER = {}\n", encoding="utf-8")
    sys.path.insert(0, str(tmp_path))
    try:
        assert registry.declared(["part_a", "part_b"], "THINGS", "THING_MODULES") == {"x": 1, "y": 2, "z": 4}
        with pytest.raises(LabkitError, match=r"part_c is listed in labkit.core.registry.THING_MODULES but declares "
                                              r"no THINGS mapping"):
            registry.declared(["part_a", "part_c"], "THINGS", "THING_MODULES")
    finally:
        sys.path.remove(str(tmp_path))


def test_the_diagram_shows_the_status_guard() -> None:
    out = subprocess.run([sys.executable, "-m", "labkit", "diagram", "planner_executor"], capture_output=True,
                         text=True, cwd=ROOT, check=False)
    assert out.returncode == 0, out.stderr
    assert "UNKNOWN --> EXECUTING : confirmed_absent [status_checked]" in out.stdout
