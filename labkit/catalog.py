"""Named tables, with the reducer and invariants that belong to each.

A log's ``run_started`` event names its table; the catalog turns that name back into the table,
the reducer that folds its events and the invariants to re-check, so ``labkit replay`` and
``labkit diagram`` work on any registered table without being told how.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from labkit.errors import LabkitError
from labkit.invariants import Invariant
from labkit.reducer import MachineState, Reduce, reduce_machine
from labkit.table import TransitionTable, table_from_dict


@dataclass(frozen=True)
class Entry:
    """Everything needed to rebuild and re-check runs of one table."""

    table: Callable[[], TransitionTable]
    reduce: Reduce[Any] = reduce_machine
    empty: Callable[[], Any] = MachineState
    invariants: Callable[[], Sequence[Invariant]] = field(default=tuple)


_ENTRIES: dict[str, Entry] = {}
# Modules that register tables when imported; the catalog imports them on first lookup so that
# `labkit replay` knows every shipped table without importing the whole kit up front.
_PROVIDERS = ["labkit.examples", "labkit.runtime.table"]


def register(name: str, entry: Entry) -> None:
    _ENTRIES[name] = entry


def _load_providers() -> None:
    for module in _PROVIDERS:
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name is None or not module.startswith(exc.name):
                raise  # a real import error inside an existing provider must not be hidden


def names() -> list[str]:
    _load_providers()
    return sorted(_ENTRIES)


def lookup(name: str) -> Entry | None:
    """The entry registered under ``name``, or None for tables the catalog does not know."""
    _load_providers()
    return _ENTRIES.get(name)


def resolve_table(spec: str) -> TransitionTable:
    """A table from a catalog name, a ``.json`` file, a dialog scenario ``.yaml``, or ``module:attribute``."""
    entry = lookup(spec)
    if entry is not None:
        return entry.table()
    path = Path(spec)
    if path.suffix in (".yaml", ".yml"):
        from labkit.dialog.scenario import load_scenario

        return load_scenario(path).table
    if path.suffix == ".json":
        if not path.exists():
            raise LabkitError(f"no table file at {path}", "check the path.")
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise LabkitError(f"{path} is not valid JSON (line {exc.lineno}: {exc.msg})",
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
