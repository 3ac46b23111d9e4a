"""Where labkit finds what its parts declare: event types, tables, commands, comparisons, log kinds.

Each layer declares what it adds in one of its modules; the lists here name those modules
(``EVENT_MODULES``, ``TABLE_MODULES``, ``COMMAND_MODULES``, ``TABLE_FILE_MODULES``,
``COMPARISON_MODULES``, ``LOG_KIND_MODULES``), one per line so merges stay trivial. Nothing is
imported until looked up (:func:`load`), so the core never imports the layers above it. This module
imports nothing from labkit but :mod:`labkit.core.errors`.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from types import ModuleType
from typing import Any

EVENT_MODULES: list[str] = [
    "labkit.runtime.events",
    "labkit.layers.events",
    "labkit.dialog.events",
    "labkit.experiment.v2.events",
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
    "labkit.experiment.v2.cli",
    "labkit.inference.cli",
    "labkit.doctor.checks",
    "labkit.dialog.cli",
    "labkit.repoedit.cli",
    "labkit.compare.command",
    "labkit.compare.crash",
]

COMPARISON_MODULES: list[str] = [
    "labkit.experiment.v2.cli",
    "labkit.repoedit.cli",
    "labkit.dialog.cli",
]

LOG_KIND_MODULES: list[str] = [
    "labkit.experiment.v2.free_log",
]


def load(modules: Sequence[str]) -> list[ModuleType]:
    """Import the named modules (Python imports each once) and return those present.

    A module whose package is not in this checkout is skipped, so a trimmed installation still
    works; an import error *inside* an existing module is raised, never hidden.
    """
    found: list[ModuleType] = []
    for name in modules:
        try:
            found.append(importlib.import_module(name))
        except ModuleNotFoundError as exc:
            if exc.name is None or not name.startswith(exc.name):
                raise
    return found


def declared(modules: Sequence[str], attribute: str, list_name: str) -> dict[str, Any]:
    """The ``attribute`` mappings (name -> declaration) of the named modules, merged; the first of a name wins.

    ``list_name`` is the list above that names the modules, for the error a module without the
    mapping gets.
    """
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
