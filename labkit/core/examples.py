"""A small table to learn the core on: a support ticket's life (notebook 01), deliberately not about LLMs."""

from __future__ import annotations

from collections.abc import Sequence

from labkit.core.events import Event, Transitioned
from labkit.core.invariants import Invariant
from labkit.core.reducer import MachineState, TableEntry
from labkit.core.table import Row, TransitionTable

TICKET_STATES = ("NEW", "TRIAGED", "IN_PROGRESS", "WAITING_CUSTOMER", "RESOLVED", "CLOSED", "CANCELLED")

TICKET_ROWS = (
    Row("NEW", "triage", "TRIAGED"),
    Row("NEW", "cancel", "CANCELLED"),
    Row("TRIAGED", "start", "IN_PROGRESS"),
    Row("TRIAGED", "cancel", "CANCELLED"),
    Row("IN_PROGRESS", "ask_customer", "WAITING_CUSTOMER"),
    Row("WAITING_CUSTOMER", "customer_replied", "IN_PROGRESS"),
    Row("WAITING_CUSTOMER", "cancel", "CANCELLED"),
    Row("IN_PROGRESS", "resolve", "RESOLVED", "has_fix_note"),
    Row("IN_PROGRESS", "resolve", "IN_PROGRESS", "not has_fix_note"),
    Row("RESOLVED", "reopen", "IN_PROGRESS"),
    Row("RESOLVED", "confirm", "CLOSED"),
)


def ticket_table() -> TransitionTable:
    """The checked ticket table (every unhandled pair is deliberately left visible)."""
    return TransitionTable.build(
        "ticket", TICKET_STATES, TICKET_ROWS, initial="NEW", terminal=["CLOSED", "CANCELLED"])


def ticket_guards() -> dict[str, object]:
    """A ticket may be resolved only with a note saying what fixed it."""
    return {"has_fix_note": lambda state, payload: bool(str(payload.get("fix_note", "")).strip())}


def _closed_only_after_resolved(state: MachineState, events: Sequence[Event]) -> str | None:
    if state.status != "CLOSED":
        return None
    moves = [e for e in events if isinstance(e, Transitioned)]
    if len(moves) >= 2 and moves[-2].dest == "RESOLVED":
        return None
    return "the ticket was closed without passing through RESOLVED just before"


def ticket_invariants() -> list[Invariant]:
    return [Invariant("closed_only_after_resolved", _closed_only_after_resolved,
                      "CLOSED is entered only straight from RESOLVED")]


# read by labkit.core.catalog (this module is listed in labkit.core.registry.TABLE_MODULES)
TABLES = {"ticket": TableEntry(table=ticket_table, invariants=ticket_invariants)}
