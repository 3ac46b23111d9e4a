"""Small descriptive statistics."""


def mean(values: list[float]) -> float:
    """The arithmetic mean of ``values``."""
    return sum(values) / len(values)


def spread(values: list[float]) -> float:
    """Largest minus smallest value."""
    return max(values) - min(values)
