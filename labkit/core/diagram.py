"""Mermaid diagrams of transition tables (plain text JupyterLab renders; the current state highlighted)."""

from __future__ import annotations

from typing import Any

from labkit.core.errors import LabkitError
from labkit.core.table import TransitionTable


def to_mermaid(table: TransitionTable | Any, current: str | None = None) -> str:
    """Return a ``stateDiagram-v2`` for ``table``, ``current`` highlighted; a composite draws itself."""
    if not isinstance(table, TransitionTable):
        return table.to_mermaid(current)
    lines = ["stateDiagram-v2", f"    [*] --> {table.initial}"]
    for row in table.rows:
        label = row.event + (f" [{row.guard}]" if row.guard else "")
        lines.append(f"    {row.source} --> {row.dest} : {label}")
    for state in table.states:
        if state in table.terminal:
            lines.append(f"    {state} --> [*]")
    if current is not None:
        if current not in table.states:
            raise LabkitError(f"cannot highlight '{current}': it is not a state of table '{table.name}'",
                              f"use one of: {', '.join(table.states)}.")
        lines.append("    classDef current fill:#ffd54f,stroke:#e65100,stroke-width:3px")
        lines.append(f"    class {current} current")
    return "\n".join(lines) + "\n"


def mermaid_markdown(table: TransitionTable, current: str | None = None) -> str:
    """The diagram wrapped in a fenced ``mermaid`` block, ready for ``IPython.display.Markdown``."""
    return "```mermaid\n" + to_mermaid(table, current) + "```\n"
