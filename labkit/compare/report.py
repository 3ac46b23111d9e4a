"""Report cells and Markdown tables that every comparison's report renders the same way."""

from __future__ import annotations

from collections.abc import Iterable, Sequence


def markdown_table(header: Sequence[str], rows: Iterable[Sequence[object]]) -> list[str]:
    """A Markdown table's lines: the header, its rule, one line per row (cells as ``str``)."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
