"""A dialog scenario file read as a transition table, so ``labkit replay`` and ``labkit diagram`` take a ``.yaml``."""

from __future__ import annotations

from pathlib import Path

from labkit.core.table import TransitionTable
from labkit.dialog.scenario import load_scenario


def scenario_table(path: Path) -> TransitionTable:
    """The checked table a scenario file compiles into."""
    return load_scenario(path).table


TABLE_FILES = {".yaml": scenario_table, ".yml": scenario_table}
