"""Ranges of calendar days."""

from datetime import date, timedelta


def days(start: date, end: date) -> list[date]:
    """Every day from ``start`` to ``end``, both included."""
    count = (end - start).days
    return [start + timedelta(days=i) for i in range(count)]
