# BEGIN SOLUTION
"""Exercise 03a, one solution: a reducer, a chain check and a divergence finder for the review job."""
# STUB: """Exercise 03a: replay a log and find where it stops agreeing. Fill in the TODOs, then run
# STUB: `labkit check 03a`."""
# END SOLUTION

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from labkit import Event, Row, RunStarted, Transitioned, TransitionTable
from labkit.core.events import GENESIS_HASH


@dataclass(frozen=True)
class JobState:
    """What the review job knows after each event (given; do not change its fields)."""

    status: str = ""
    records_read: tuple[str, ...] = ()
    retries: int = 0
    drafts_saved: int = 0
    last_seq: int = -1


def review_table() -> TransitionTable:
    """The review job's table (given)."""
    return TransitionTable.build(
        "review_job",
        ["INIT", "READING", "DRAFTING", "DONE", "FAILED"],
        [
            Row("INIT", "start", "READING"),
            Row("READING", "read_ok", "READING", "more"),
            Row("READING", "read_ok", "DRAFTING", "not more"),
            Row("READING", "timeout", "READING", "retries_left"),
            Row("READING", "timeout", "FAILED", "not retries_left"),
            Row("DRAFTING", "draft_saved", "DONE"),
            Row("DRAFTING", "write_error", "FAILED"),
        ],
        initial="INIT",
        terminal=["DONE", "FAILED"],
    )


def review_guards() -> dict[str, Callable[[Any, Any], bool]]:
    """The guards read the event's payload (given)."""
    return {"more": lambda state, payload: bool(payload.get("more", False)),
            "retries_left": lambda state, payload: payload.get("retries_left", 0) > 0}


def reduce(state: JobState, event: Event) -> JobState:
    """Fold one event into the state (see the README for the rules)."""
    # BEGIN SOLUTION
    if isinstance(event, RunStarted):
        return JobState(status=event.initial, last_seq=event.seq)
    if not isinstance(event, Transitioned):
        return dataclasses.replace(state, last_seq=event.seq)
    changes: dict[str, Any] = {"status": event.dest, "last_seq": event.seq}
    if event.trigger == "read_ok":
        record = event.payload["record_id"]
        if record not in state.records_read:
            changes["records_read"] = (*state.records_read, record)
    elif event.trigger == "timeout":
        changes["retries"] = state.retries + 1
    elif event.trigger == "draft_saved":
        changes["drafts_saved"] = state.drafts_saved + 1
    return dataclasses.replace(state, **changes)
    # STUB: # TODO: run_started starts a fresh state; transitioned moves status and updates the counters
    # STUB: return state
    # END SOLUTION


def first_broken_link(events: Sequence[Event]) -> int | None:
    """The position of the first event whose seq or prev_hash breaks the chain; None if it is whole."""
    # BEGIN SOLUTION
    previous = GENESIS_HASH
    for position, event in enumerate(events):
        if event.seq != position or event.prev_hash != previous:
            return position
        previous = event.hash
    return None
    # STUB: # TODO: compare event.seq with its position and event.prev_hash with the previous event's hash
    # STUB: return None
    # END SOLUTION


def first_divergence(events: Sequence[Event], recorded: Sequence[Any],
                     reduce: Callable[[Any, Event], Any], empty: Any) -> int | None:
    """The seq of the first event after which replayed and recorded states differ; None if none."""
    # BEGIN SOLUTION
    state = empty
    for position, event in enumerate(events):
        state = reduce(state, event)
        if position >= len(recorded) or state != recorded[position]:
            return event.seq
    if len(recorded) > len(events):
        return len(events)
    return None
    # STUB: # TODO: fold reduce over events from empty and compare with recorded, position by position
    # STUB: return None
    # END SOLUTION
