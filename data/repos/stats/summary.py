"""A one-line summary of a list of numbers."""

from stats import mean, spread


def summary(values: list[float]) -> str:
    return f"n={len(values)} mean={mean(values):.2f} spread={spread(values):.2f}"
