"""Report cells and Markdown tables that every comparison's report renders the same way."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any


def solved_cell(row: Mapping[str, Any]) -> str:
    """"k/n (low–high)": tasks solved and the Wilson 95% interval of one summary row."""
    return f"{row['tasks_solved']}/{row['tasks']} ({row['ci95'][0]:.2f}–{row['ci95'][1]:.2f})"


def markdown_table(header: Sequence[str], rows: Iterable[Sequence[object]]) -> list[str]:
    """A Markdown table's lines: the header, its rule, one line per row (cells as ``str``)."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
