"""Named tables, with their reducer, invariants and state guards: a log's ``run_started`` names its table,
so ``labkit replay`` and ``labkit diagram`` work on any declared table. Declared as ``TABLES`` in the
modules of ``labkit.core.registry.TABLE_MODULES``; :func:`register` adds one at run time."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

from labkit.core import registry
from labkit.core.errors import LabkitError
from labkit.core.reducer import TableEntry
from labkit.core.table import TransitionTable, table_from_dict
from labkit.core.yaml_input import read_input

Entry = TableEntry  # the name this module has always exported

_ENTRIES: dict[str, TableEntry] = {}
_loaded = False


def register(name: str, entry: TableEntry) -> None:
    """Add a table at run time; declared tables (``TABLES`` in a registry module) need no call."""
    _ENTRIES[name] = entry


def _load_providers() -> None:
    global _loaded
    if _loaded:
        return
    for name, entry in registry.declared(registry.TABLE_MODULES, "TABLES", "TABLE_MODULES").items():
        _ENTRIES.setdefault(name, entry)
    _loaded = True


def names() -> list[str]:
    _load_providers()
    return sorted(_ENTRIES)


def lookup(name: str) -> Entry | None:
    """The entry registered under ``name``, or None for tables the catalog does not know."""
    _load_providers()
    return _ENTRIES.get(name)


def resolve_table(spec: str) -> TransitionTable:
    """A table from a catalog name, a ``.json`` file, a file a layer reads (a scenario ``.yaml``) or ``module:attr``."""
    entry = lookup(spec)
    if entry is not None:
        return entry.table()
    path = Path(spec)
    readers = registry.declared(registry.TABLE_FILE_MODULES, "TABLE_FILES", "TABLE_FILE_MODULES")
    if path.suffix in readers:
        return readers[path.suffix](path)
    if path.suffix == ".json":
        if not path.exists():
            raise LabkitError(f"no table file at {path}", "check the path.")
        try:
            data = json.loads(read_input(path, "table file"))
        except json.JSONDecodeError as exc:
            raise LabkitError(f"{path}:{exc.lineno}:{exc.colno}: not valid JSON ({exc.msg})",
                              "fix the file; see TransitionTable.to_dict() for the format.") from None
        return table_from_dict(data)
    if ":" in spec:
        module_name, _, attr = spec.partition(":")
        try:
            obj = getattr(importlib.import_module(module_name), attr)
        except (ImportError, AttributeError) as exc:
            raise LabkitError(f"cannot load table '{spec}': {exc}",
                              "give module:attribute of a TransitionTable (or a function returning one).") from None
        obj = obj() if callable(obj) and not isinstance(obj, TransitionTable) else obj
        if not isinstance(obj, TransitionTable):
            raise LabkitError(f"'{spec}' is a {type(obj).__name__}, not a TransitionTable",
                              "point at a TransitionTable or a function returning one.")
        return obj
    raise LabkitError(f"unknown table '{spec}'",
                      f"use a catalog name ({', '.join(names())}), a .json file, or module:attribute.")
