"""A target of an issue's "done when", checked against a recording: what it asks, the measured value, met or not.

Why a type of its own: a notebook or a report that judged a recording in a cell could quietly judge another way
than the text says. Each machine's targets are a function (:mod:`labkit.dialog.targets`,
:mod:`labkit.repoedit.targets`) returning these lines.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Target:
    what: str  # the target and the measured value
    met: bool

    def line(self) -> str:
        return f"- {'met' if self.met else 'MISSED'}: {self.what}"
