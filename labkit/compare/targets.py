"""A target of an issue's "done when", checked against a recording: what it asks, the measured value, met or not.

A type of its own so a notebook cannot judge a recording another way than the text says; each machine's
targets (:mod:`labkit.dialog.targets`, :mod:`labkit.repoedit.targets`) return these lines.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Target:
    what: str  # the target and the measured value
    met: bool

    def line(self) -> str:
        return f"- {'met' if self.met else 'MISSED'}: {self.what}"
