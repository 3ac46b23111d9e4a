"""The doctor's verdicts and their report, shared by the machine and server doctors (so neither imports
the other)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

PURPOSES = ("experiment", "lab", "test")


@dataclass(frozen=True)
class Finding:
    """One check's verdict: what was seen, and the command that fixes it when it is not ok."""

    check: str
    ok: bool
    detail: str
    fix: str = ""
    needed_for: tuple[str, ...] = PURPOSES


@dataclass
class Report:
    """The doctor's verdicts for one purpose (``heading``: the first line, when not this machine's)."""

    purpose: str
    findings: list[Finding] = field(default_factory=list)
    heading: str = ""

    @property
    def ok(self) -> bool:
        return all(f.ok for f in self.findings)

    def render(self) -> str:
        lines = [self.heading or f"labkit doctor — what {self.purpose} needs on this machine"]
        for f in self.findings:
            lines.append(f"  {'ok  ' if f.ok else 'FAIL'}  {f.check:<16} {f.detail}")
            if f.fix:  # an ok finding may still have one (the sandbox in limits-only mode)
                lines.append(f"        {'':<16} fix: {f.fix}")
        bad = [f.check for f in self.findings if not f.ok]
        lines.append("all checks passed" if not bad else f"{len(bad)} problem(s): {', '.join(bad)}")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {"purpose": self.purpose, "ok": self.ok, "findings": [asdict(f) for f in self.findings]}
