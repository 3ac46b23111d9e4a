"""Plain-text tables and readable traces for the command line and the notebooks."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from labkit.core.events import Event, InvariantViolated, RunStarted, Transitioned


@dataclass(frozen=True)
class TextTable:
    """A small table: ``headers`` and ``rows`` as data, ``render()`` as aligned text."""

    headers: Sequence[str]
    rows: Sequence[Sequence[Any]]
    title: str = ""
    notes: Sequence[str] = field(default_factory=tuple)

    def render(self) -> str:
        cells = [[str(h) for h in self.headers]] + [[str(c) for c in row] for row in self.rows]
        widths = [max(len(r[i]) for r in cells) for i in range(len(self.headers))]
        lines = [self.title] if self.title else []
        for n, row in enumerate(cells):
            lines.append("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths,
                                                                                                       strict=True))))
            if n == 0:
                lines.append("  ".join("-" * w for w in widths))
        lines.extend(self.notes)
        return "\n".join(lines)

    def as_dicts(self) -> list[dict[str, Any]]:
        return [dict(zip(self.headers, row, strict=True)) for row in self.rows]

    def __str__(self) -> str:
        return self.render()


def _short(value: Any, width: int = 70) -> str:
    text = str(value).replace("\n", " / ")
    return text if len(text) <= width else text[: width - 1] + "…"


def describe_event(event: Event) -> str:
    """One readable line for an event (facts in plain words, transitions as arrows)."""
    e: Any = event
    if isinstance(event, RunStarted):
        task = event.params.get("task", {}).get("id", "?")
        return f"run started: table {event.table}, task {task}, faults {event.params.get('faults', 'none')}"
    if isinstance(event, Transitioned):
        extra = ""
        if event.payload.get("reason") and event.dest in ("SUCCEEDED", "FAILED"):
            extra = f"  ({event.payload.get('outcome', '')}: {_short(event.payload['reason'], 60)})"
        return f"{event.source} --{event.trigger}--> {event.dest}{extra}"
    if isinstance(event, InvariantViolated):
        return f"INVARIANT {event.invariant} violated: {event.detail}"
    kind = event.type
    if kind == "proposed":
        if not e.candidates:
            return f"planner: no candidates{' (claims done)' if e.claims_done else ''}"
        cands = "; ".join(f"{c.action}({_short(c.args, 40)})" for c in e.candidates)
        return f"planner proposes [{cands}]"
    if kind == "interpreted":
        return f"planner's reading: {_short(e.note)}"
    if kind == "validation":
        if e.verdict == "allowed":
            return f"validator allows {e.action_id} {e.tool}({_short(e.args, 40)}) token {e.token[:10]}…"
        return f"validator: {e.verdict} ({_short(e.reason or '; '.join(f.reason for f in e.findings), 80)})"
    if kind == "tool_called":
        return f"executor calls {e.tool} for {e.action_id} (attempt {e.attempt})"
    if kind == "execution_refused":
        return f"executor REFUSES {e.tool} for {e.action_id} ({e.code}; the tool did not run): {_short(e.reason, 60)}"
    if kind == "tool_result":
        return f"{e.tool} answered {e.outcome}{': ' + _short(e.detail, 60) if e.detail else ''}"
    if kind == "duplicate_delivery":
        return f"duplicate answer for {e.action_id} ignored"
    if kind == "observation":
        return f"observed {e.kind} ({e.via}): {_short(e.facts, 60)}"
    if kind == "status_checked":
        return f"status query for draft {e.key!r}: {e.outcome}"
    if kind == "human_decision":
        return f"human {e.by} says {e.decision} for {e.action_id}{': ' + e.note if e.note else ''}"
    if kind == "fault_injected":
        return f"[fault] {e.fault} injected in {e.state} ({e.target})"
    if kind == "resumed":
        return f"resumed in {e.status} after {e.down_seconds:g} s stopped (not counted as work)"
    return f"{kind}"


def render_trace(events: Sequence[Event]) -> str:
    """A run as readable text: one line per event, with its sequence number."""
    return "\n".join(f"{e.seq:>4}  {describe_event(e)}" for e in events)
