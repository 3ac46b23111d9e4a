"""Per-column numbers of a CSV table."""

from table import read_rows


def col_total(text: str, column: str) -> float:
    """The sum of ``column`` over every row; an empty cell counts as 0."""
    header, rows = read_rows(text)
    index = header.index(column)
    return sum(float(row[index] or 0) for row in rows)


def column_mean(text: str, column: str) -> float:
    """The mean of ``column`` over every row."""
    _, rows = read_rows(text)
    return col_total(text, column) / len(rows)
