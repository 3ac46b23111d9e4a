"""A deterministic clock for reproducible runs, traces and notebook outputs."""

from __future__ import annotations


class TickClock:
    """Each call returns the previous time plus ``step`` seconds from ``start``: the same run records the
    same timestamps (and spends the same budget) every time."""

    def __init__(self, start: float = 0.0, step: float = 0.25) -> None:
        self.now = start
        self.step = step

    def __call__(self) -> float:
        value = self.now
        self.now = round(self.now + self.step, 6)
        return value
