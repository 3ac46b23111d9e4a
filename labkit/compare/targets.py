"""A target of an issue's "done when", checked against a recording: what it asks, the value, met or not."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Target:
    what: str  # the target and the measured value
    met: bool

    def line(self) -> str:
        return f"- {'met' if self.met else 'MISSED'}: {self.what}"
