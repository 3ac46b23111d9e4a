"""Labels for a range of days."""

from datetime import date

from daterange import days


def labels(start: date, end: date) -> list[str]:
    """'Mon 01' style labels for every day of the range."""
    return [d.strftime("%a %d") for d in days(start, end)]
