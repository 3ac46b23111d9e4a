# BEGIN SOLUTION
"""Exercise 01a, one solution: the code-change job as a transition table that counts its own retries."""
# STUB: """Exercise 01a: the code-change job as a transition table. Fill in the TODOs, then run `labkit check 01a`."""
# END SOLUTION

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from labkit import Event, Row, RunStarted, Transitioned, TransitionTable

STATES = ["DISCOVER", "PLAN", "EDIT", "TEST", "FIX", "DONE", "FAILED"]
MAX_RETRIES = 2
"""How many times the whole job may try again (a new plan, or a fix after failing tests)."""


@dataclass(frozen=True)
class JobState:
    """What the machine knows about the job: where it is, and how many retries it has used."""

    status: str = ""
    retries_used: int = 0


def reduce(state: JobState, event: Event) -> JobState:
    """Fold one event into the job's state. The machine runs this after every step it takes."""
    if isinstance(event, RunStarted):
        return JobState(status=event.initial)
    if not isinstance(event, Transitioned):
        return state
    # BEGIN SOLUTION
    retried = event.trigger in ("plan_invalid", "tests_failed")
    return JobState(status=event.dest, retries_used=state.retries_used + retried)
    # STUB: # TODO: a plan_invalid or tests_failed transition uses up one retry
    # STUB: return JobState(status=event.dest, retries_used=state.retries_used)
    # END SOLUTION


def retries_left(state: JobState, payload: Mapping[str, Any]) -> bool:
    """The guard ``retries_left``: may the job try once more? It sees the state *before* the event."""
    # BEGIN SOLUTION
    return state.retries_used < MAX_RETRIES
    # STUB: # TODO: decide from the state; the event's payload comes from outside and may say anything
    # STUB: return True
    # END SOLUTION


ROWS = [
    Row("DISCOVER", "indexed", "PLAN"),
    # BEGIN SOLUTION
    Row("PLAN", "plan_valid", "EDIT"),
    Row("PLAN", "plan_invalid", "PLAN", "retries_left"),
    Row("PLAN", "plan_invalid", "FAILED", "not retries_left"),
    Row("EDIT", "edits_done", "TEST"),
    Row("TEST", "tests_passed", "DONE"),
    Row("TEST", "tests_failed", "FIX", "retries_left"),
    Row("TEST", "tests_failed", "FAILED", "not retries_left"),
    Row("FIX", "patch_ready", "TEST"),
    Row("FIX", "give_up", "FAILED"),
    *[Row(state, "timeout", "FAILED") for state in ("DISCOVER", "PLAN", "EDIT", "TEST", "FIX")],
    # STUB: # TODO: PLAN — plan_valid, and plan_invalid split by the guard "retries_left" / "not retries_left"
    # STUB: # TODO: EDIT — edits_done
    # STUB: # TODO: TEST — tests_passed, and tests_failed split by the same guard
    # STUB: # TODO: FIX — patch_ready and give_up
    # STUB: # TODO: timeout from every state that is not terminal
    # END SOLUTION
]

GUARDS = {"retries_left": retries_left}


def build_table() -> TransitionTable:
    """Build (and so check) the table. TableError lists whatever is still wrong with it."""
    return TransitionTable.build(
        "code_change", STATES, ROWS,
        initial="DISCOVER",
        # BEGIN SOLUTION
        terminal=["DONE", "FAILED"],
        # STUB: terminal=[],  # TODO: which states end the job?
        # END SOLUTION
    )
