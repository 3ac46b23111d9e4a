"""The planner–executor machine as a checked transition table, with the faults it must survive.

``EVENT_SOURCES`` declares who may raise each event where (every other pair impossible); ``FAULTS`` where each
fault strikes. Guards ``goal_met`` and ``escalate`` are checked live; ``side_effect_possible`` and
``status_checked`` read the state alone, so ``labkit replay`` checks them too."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from labkit.core.reducer import Guard, TableEntry
from labkit.core.table import Row, TransitionTable
from labkit.runtime.invariants import runtime_invariants
from labkit.runtime.state import empty_run_state, reduce_run

TABLE_NAME = "planner_executor"

STATES = ("INIT", "PLANNING", "VALIDATING", "EXECUTING", "OBSERVING", "COMMITTING", "WAITING_HUMAN",
          "SUCCEEDED", "FAILED", "UNKNOWN")
TERMINAL = ("SUCCEEDED", "FAILED")

ROWS = (
    Row("INIT", "start", "PLANNING"),
    # the planner proposes; it never decides that the run is over
    Row("PLANNING", "proposed", "VALIDATING"),
    Row("PLANNING", "no_proposal", "SUCCEEDED", "goal_met"),
    Row("PLANNING", "no_proposal", "PLANNING", "not goal_met"),
    Row("PLANNING", "budget_exhausted", "FAILED"),
    # the validator owns permission
    Row("VALIDATING", "allowed", "EXECUTING"),
    Row("VALIDATING", "rejected", "PLANNING"),
    Row("VALIDATING", "denied", "WAITING_HUMAN", "escalate"),
    Row("VALIDATING", "denied", "FAILED", "not escalate"),
    Row("VALIDATING", "budget_exhausted", "FAILED"),
    # the executor returns typed results; a write that timed out is UNKNOWN, never a success
    Row("EXECUTING", "ok", "OBSERVING"),
    Row("EXECUTING", "error", "PLANNING"),
    Row("EXECUTING", "denied", "WAITING_HUMAN", "escalate"),
    Row("EXECUTING", "denied", "FAILED", "not escalate"),
    Row("EXECUTING", "timeout", "UNKNOWN", "side_effect_possible"),
    Row("EXECUTING", "timeout", "EXECUTING", "not side_effect_possible"),
    Row("EXECUTING", "budget_exhausted", "FAILED"),
    Row("OBSERVING", "observed", "COMMITTING"),
    Row("OBSERVING", "duplicate_result", "OBSERVING"),
    # the goal is checked on the state, after each commit
    Row("COMMITTING", "committed", "SUCCEEDED", "goal_met"),
    Row("COMMITTING", "committed", "PLANNING", "not goal_met"),
    # an unknown write is settled by asking the world, not by guessing
    Row("UNKNOWN", "confirmed_present", "COMMITTING"),
    Row("UNKNOWN", "confirmed_absent", "EXECUTING", "status_checked"),
    Row("UNKNOWN", "status_unavailable", "UNKNOWN"),
    Row("UNKNOWN", "budget_exhausted", "FAILED"),
    Row("WAITING_HUMAN", "approved", "VALIDATING"),
    Row("WAITING_HUMAN", "refused", "FAILED"),
    Row("WAITING_HUMAN", "budget_exhausted", "FAILED"),
)

# Who sends each event, and so in which states it can arrive at all.
EVENT_SOURCES: dict[str, tuple[str, ...]] = {
    "start": ("INIT",),  # the runtime, once
    "proposed": ("PLANNING",),  # the planner (only asked in PLANNING)
    "no_proposal": ("PLANNING",),
    "allowed": ("VALIDATING",),  # the validator (only runs in VALIDATING)
    "rejected": ("VALIDATING",),
    "denied": ("VALIDATING", "EXECUTING"),  # the validator's policy, or the tool's permission check
    "ok": ("EXECUTING",),  # the executor (only runs in EXECUTING)
    "error": ("EXECUTING",),
    "timeout": ("EXECUTING",),
    "observed": ("OBSERVING",),  # the observation step
    "duplicate_result": ("OBSERVING",),  # a second copy of the answer that moved us to OBSERVING
    "committed": ("COMMITTING",),
    "confirmed_present": ("UNKNOWN",),  # the status query (only asked in UNKNOWN)
    "confirmed_absent": ("UNKNOWN",),
    "status_unavailable": ("UNKNOWN",),
    "approved": ("WAITING_HUMAN",),  # a person (only asked in WAITING_HUMAN)
    "refused": ("WAITING_HUMAN",),
    # budgets are checked before anything that costs: asking the planner, validating (the action's
    # cost), retrying a tool or a status query, and while a paused run waits (max_wait_seconds).
    # Finishing an observed step (OBSERVING, COMMITTING) costs nothing and is never cut short.
    "budget_exhausted": ("PLANNING", "VALIDATING", "EXECUTING", "UNKNOWN", "WAITING_HUMAN"),
}


def _impossible() -> list[tuple[str, str]]:
    events = dict.fromkeys(r.event for r in ROWS)
    return [(state, event) for state in STATES if state not in TERMINAL
            for event in events if state not in EVENT_SOURCES.get(event, ())]


def _side_effect_possible(state: Any, payload: Mapping[str, Any]) -> bool:
    return bool(state.action and state.action.side_effect)


def _status_checked(state: Any, payload: Mapping[str, Any]) -> bool:
    return bool(state.action and state.action.last_status == "absent")


def state_guards() -> dict[str, Guard]:
    """The table's guards that depend on the run state alone (the runtime adds ``goal_met`` and
    ``escalate``, which need its task and policy)."""
    return {"side_effect_possible": _side_effect_possible, "status_checked": _status_checked}


def planner_executor_table() -> TransitionTable:
    """The checked planner–executor table (every (state, event) pair handled or declared impossible)."""
    return TransitionTable.build(TABLE_NAME, STATES, ROWS, initial="INIT", terminal=TERMINAL,
                                 impossible=_impossible())


@dataclass(frozen=True)
class FaultSpec:
    """A fault kind: where it strikes, what it turns into, and how the machine recovers."""

    name: str
    target: str  # "planner" or a tool name
    state: str  # the machine state it strikes in
    event: str  # the event it produces there
    recovery: str
    kills_runner: bool = False  # ends the runner process; never drawn for in-process batches


FAULTS: dict[str, FaultSpec] = {f.name: f for f in (
    FaultSpec("read_timeout", "read_record", "EXECUTING", "timeout",
              "safe retry: a read has no side effect (EXECUTING -> EXECUTING)"),
    FaultSpec("write_timeout", "save_draft", "EXECUTING", "timeout",
              "query to confirm: UNKNOWN -> status query -> COMMITTING or EXECUTING again"),
    FaultSpec("status_timeout", "draft_status", "UNKNOWN", "status_unavailable",
              "ask again (UNKNOWN -> UNKNOWN) until the retry budget ends as needs_review"),
    FaultSpec("denied", "read_record", "EXECUTING", "denied",
              "by policy: WAITING_HUMAN (approve / refuse) or FAILED"),
    FaultSpec("bad_args", "planner", "VALIDATING", "rejected",
              "the argument schema rejects it; the planner is asked again"),
    FaultSpec("unknown_tool", "planner", "VALIDATING", "rejected",
              "the allowlist rejects it; the planner is asked again"),
    FaultSpec("duplicate_result", "any", "OBSERVING", "duplicate_result",
              "the second copy is recorded and ignored (counted once)"),
    FaultSpec("premature_done", "planner", "PLANNING", "no_proposal",
              "the claim is ignored unless the goal predicate holds; the planner is asked again"),
    FaultSpec("crash", "save_draft", "EXECUTING", "timeout",
              "the runner is killed (during the nth call of a tool, or once the log holds n events); "
              "the resumed run records an open call as interrupted and settles it like a timeout",
              kills_runner=True),
)}

# The kinds a seeded batch draws from: every fault that leaves the runner process alive.
IN_PROCESS_FAULTS: tuple[str, ...] = tuple(k for k, f in FAULTS.items() if not f.kills_runner)


# read by labkit.core.catalog (this module is listed in labkit.core.registry.TABLE_MODULES)
TABLES = {TABLE_NAME: TableEntry(table=planner_executor_table, reduce=reduce_run, empty=empty_run_state,
                                 invariants=runtime_invariants, guards=state_guards)}


# The transitions the planner–executor seed (004) writes down as its examples, in this table's event names:
# (source, event, the guard the seed attaches, the destinations it names). The seed's ``action_proposed`` is
# ``proposed`` here, its ``status_confirmed(success)`` and ``status_confirmed(absent)`` are ``confirmed_present``
# and ``confirmed_absent``, and its ``event_saved`` is ``committed``.
SEED_ROWS: tuple[tuple[str, str, str | None, tuple[str, ...]], ...] = (
    ("PLANNING", "proposed", None, ("VALIDATING",)),
    ("VALIDATING", "denied", None, ("WAITING_HUMAN", "FAILED")),
    ("VALIDATING", "allowed", None, ("EXECUTING",)),
    ("EXECUTING", "timeout", "side_effect_possible", ("UNKNOWN",)),
    ("UNKNOWN", "confirmed_present", None, ("COMMITTING",)),
    ("UNKNOWN", "confirmed_absent", None, ("EXECUTING",)),
    ("COMMITTING", "committed", None, ("PLANNING", "SUCCEEDED")),
)


def seed_rows_in(table: TransitionTable) -> list[dict[str, Any]]:
    """Each of :data:`SEED_ROWS` beside the destinations ``table`` has for it (same source and event, and the
    seed's guard where it names one): ``same`` is True when the table goes exactly where the seed says."""
    out = []
    for source, event, guard, dests in SEED_ROWS:
        kit = sorted({r.dest for r in table.rows
                      if r.source == source and r.event == event and (guard is None or r.guard == guard)})
        when = f" [{guard}]" if guard else ""
        out.append({"seed": f"{source} + {event}{when} -> {' | '.join(dests)}", "table": kit,
                    "same": set(kit) == set(dests)})
    return out
