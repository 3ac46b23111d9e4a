"""Where labkit finds what its parts declare: event types, tables and command-line commands.

The core reads logs, replays tables and builds the ``labkit`` parser without knowing the layers
above it. Each layer *declares* what it adds in one of its modules, and this file names those
modules, one per line:

- ``EVENT_MODULES`` define event types (``@register_event`` classes);
- ``TABLE_MODULES`` define ``TABLES``, a mapping of table name to :class:`labkit.core.reducer.TableEntry`;
- ``COMMAND_MODULES`` define ``register(commands, bench)``, which adds their subcommands;
- ``TABLE_FILE_MODULES`` define ``TABLE_FILES``, a mapping of file suffix to a reader of a table from such a file;
- ``COMPARISON_MODULES`` define ``COMPARISONS``, the comparisons ``labkit compare KIND`` runs
  (:class:`labkit.compare.command.ComparisonKind`);
- ``LOG_KIND_MODULES`` define ``LOG_KINDS``, logs that follow no table (:mod:`labkit.core.log_kinds`).

Nothing is imported until somebody looks something up (:func:`load`): reading a trace imports the
event modules, ``labkit replay`` the table modules, ``labkit --help`` the command modules. So no
caller has to import a layer first for its events or tables to be known, and no module imports the
module that reads its declarations (the provider modules depend on the core, never the other way).

To add a part, add its module's name to the right list (one line each, so that merges stay trivial).
This module imports nothing from labkit on purpose, but for the error type (:mod:`labkit.core.errors`, which
imports nothing either) when a declaration is missing.
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
