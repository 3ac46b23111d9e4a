"""A deterministic clock for reproducible runs, traces and notebook outputs."""

from __future__ import annotations


class TickClock:
    """Each call returns the previous time plus ``step`` seconds, starting at ``start``.

    Pass it as ``clock=`` wherever a run reads the time; the same run then records the same
    timestamps (and spends the same wall-clock budget) every time.
    """

    def __init__(self, start: float = 0.0, step: float = 0.25) -> None:
        self.now = start
        self.step = step

    def __call__(self) -> float:
        value = self.now
        self.now = round(self.now + self.step, 6)
        return value
