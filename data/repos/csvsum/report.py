"""A one-line summary per numeric column."""

from summary import col_total, column_mean


def report(text: str, columns: list[str]) -> str:
    return "\n".join(f"{c}: total {col_total(text, c):g}, mean {column_mean(text, c):g}" for c in columns)
