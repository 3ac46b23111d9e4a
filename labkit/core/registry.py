"""Where labkit finds what its parts declare: event types, tables, commands, comparisons, log kinds.

The lists name the declaring modules, one per line; nothing is imported until :func:`load`, so the core
never imports the layers above it."""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from types import ModuleType
from typing import Any

EVENT_MODULES: list[str] = [
    "labkit.runtime.events",
    "labkit.layers.events",
    "labkit.dialog.events",
    "labkit.reading.events",
    "labkit.repoedit.events",
]

TABLE_MODULES: list[str] = [
    "labkit.core.examples",
    "labkit.runtime.table",
    "labkit.layers.writing",
    "labkit.repoedit.machine",
]

TABLE_FILE_MODULES: list[str] = [
    "labkit.dialog.table_files",
]

COMMAND_MODULES: list[str] = [
    "labkit.runtime.cli",
    "labkit.llm.cli",
    "labkit.reading.cli",
    "labkit.inference.cli",
    "labkit.doctor.checks",
    "labkit.dialog.cli",
    "labkit.repoedit.cli",
    "labkit.compare.command",
    "labkit.compare.crash",
]

COMPARISON_MODULES: list[str] = [
    "labkit.reading.cli",
    "labkit.repoedit.cli",
    "labkit.dialog.cli",
]

LOG_KIND_MODULES: list[str] = [
    "labkit.reading.free_log",
]


def load(modules: Sequence[str]) -> list[ModuleType]:
    """Import the named modules and return those present; a missing package is skipped, an error raised."""
    found: list[ModuleType] = []
    for name in modules:
        try:
            found.append(importlib.import_module(name))
        except ModuleNotFoundError as exc:
            if exc.name is None or not name.startswith(exc.name):
                raise
    return found


def declared(modules: Sequence[str], attribute: str, list_name: str) -> dict[str, Any]:
    """The ``attribute`` mappings of the named modules, merged (first of a name wins); ``list_name`` for errors."""
    from labkit.core.errors import LabkitError  # the core's error type, imported when used like the modules

    merged: dict[str, Any] = {}
    for module in load(modules):
        found = getattr(module, attribute, None)
        if not isinstance(found, dict):
            raise LabkitError(f"{module.__name__} is listed in labkit.core.registry.{list_name} but declares no "
                              f"{attribute} mapping", f"declare {attribute} = {{name: ...}} there, or remove it "
                              "from the list.")
        for name, value in found.items():
            merged.setdefault(name, value)
    return merged
