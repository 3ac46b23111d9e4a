"""Checker for exercise 04: the reducer, the chain check and the divergence finder.

Logs are recorded here by a real ``LabMachine`` running the review job with the checker's own
reference reducer, so "what the state should be" never comes from the file under test. Tampered
and diverging inputs are made from those logs, and each check names the first event that went wrong.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

from labkit import Event, EventLog, LabMachine, Row, RunStarted, Transitioned, TransitionTable, describe

FIELDS = ("status", "records_read", "retries", "drafts_saved", "last_seq")

TABLE = TransitionTable.build(
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
GUARDS = {"more": lambda state, payload: bool(payload.get("more", False)),
          "retries_left": lambda state, payload: payload.get("retries_left", 0) > 0}


def _read(record: str, more: bool = True) -> tuple[str, dict[str, Any]]:
    return "read_ok", {"record_id": record, "more": more}


# (name, the steps of the run)
RUNS: list[tuple[str, list[tuple[str, dict[str, Any]]]]] = [
    ("three reads and a draft", [("start", {}), _read("r1"), _read("r2"), _read("r3", more=False),
                                 ("draft_saved", {"key": "draft-1"})]),
    ("a record read twice", [("start", {}), _read("r1"), _read("r2"), _read("r1"), _read("r3", more=False),
                             ("draft_saved", {"key": "draft-1"})]),
    ("a read retried after timeouts", [("start", {}), _read("r1"), ("timeout", {"retries_left": 2}),
                                       ("timeout", {"retries_left": 1}), _read("r2", more=False),
                                       ("draft_saved", {"key": "draft-1"})]),
    ("out of retries", [("start", {}), ("timeout", {"retries_left": 1}), ("timeout", {"retries_left": 0})]),
    ("the draft was not saved", [("start", {}), _read("r1", more=False), ("write_error", {})]),
]


def _reference(job_state: type) -> Callable[[Any, Event], Any]:
    """The reducer the README describes, building states of the file's own JobState class."""

    def reduce(state: Any, event: Event) -> Any:
        if isinstance(event, RunStarted):
            return job_state(status=event.initial, last_seq=event.seq)
        if not isinstance(event, Transitioned):
            return dataclasses.replace(state, last_seq=event.seq)
        changes: dict[str, Any] = {"status": event.dest, "last_seq": event.seq}
        if event.trigger == "read_ok" and event.payload["record_id"] not in state.records_read:
            changes["records_read"] = (*state.records_read, event.payload["record_id"])
        elif event.trigger == "timeout":
            changes["retries"] = state.retries + 1
        elif event.trigger == "draft_saved":
            changes["drafts_saved"] = state.drafts_saved + 1
        return dataclasses.replace(state, **changes)

    return reduce


def record_run(steps: Sequence[tuple[str, dict[str, Any]]], reduce: Callable[[Any, Event], Any], empty: Any,
               run_id: str = "review-1") -> tuple[list[Event], list[Any]]:
    """Run the job live and return its sealed events and the state recorded after each."""
    machine = LabMachine(TABLE, guards=GUARDS, reduce=reduce, empty=empty, log=EventLog(run_id),
                         clock=lambda: 0.0)
    for trigger, payload in steps:
        machine.fire(trigger, **payload)
    return list(machine.events), list(machine.states)


def _fields_differ(mine: Any, expected: Any) -> str:
    parts = [f"{name} is {getattr(mine, name, '(missing)')!r}, expected {getattr(expected, name)!r}"
             for name in FIELDS if getattr(mine, name, None) != getattr(expected, name)]
    return "; ".join(parts) or f"your state {mine!r} differs from {expected!r}"


def _check_reduce(module: ModuleType, reference: Callable[[Any, Event], Any]) -> list[str]:
    feedback = []
    for name, steps in RUNS:
        events, expected = record_run(steps, reference, module.JobState())
        state = module.JobState()
        for event, want in zip(events, expected, strict=True):
            try:
                state = module.reduce(state, event)
            except Exception as exc:
                feedback.append(f"reduce, run '{name}': raised {type(exc).__name__}: {exc} at {describe(event)}")
                break
            if state != want:
                feedback.append(f"reduce, run '{name}': first wrong after {describe(event)}: "
                                f"{_fields_differ(state, want)}")
                break
    return feedback


def _tampered(events: list[Event], foreign: list[Event]) -> list[tuple[str, list[Event], int | None]]:
    """(what was done, the tampered list, the position of the first broken link)."""
    swapped = list(events)
    swapped[3], swapped[4] = swapped[4], swapped[3]
    replaced = list(events)
    replaced[2] = foreign[2]  # same seq, same trigger, another run: only the hash chain tells
    return [
        ("the untouched log", list(events), None),
        ("event 3 deleted", events[:3] + events[4:], 3),
        ("events 3 and 4 swapped", swapped, 3),
        ("event 2 duplicated", events[:3] + events[2:], 3),
        ("event 2 replaced by the same event of another run", replaced, 2),
        ("the first event deleted", list(events[1:]), 0),
        ("an empty log", [], None),
    ]


def _check_links(module: ModuleType, events: list[Event], foreign: list[Event]) -> list[str]:
    feedback = []
    for what, tampered, expected in _tampered(events, foreign):
        try:
            got = module.first_broken_link(tampered)
        except Exception as exc:
            feedback.append(f"first_broken_link, {what}: raised {type(exc).__name__}: {exc}")
            continue
        if got != expected:
            feedback.append(f"first_broken_link, {what}: returned {got!r}, expected {expected!r}")
    return feedback


def _check_divergence(module: ModuleType, reference: Callable[[Any, Event], Any]) -> list[str]:
    empty = module.JobState()
    events, states = record_run(RUNS[2][1], reference, empty)  # start, read r1, two timeouts, read r2, draft

    def forgets_retries(state: Any, event: Event) -> Any:
        after = reference(state, event)
        return dataclasses.replace(after, retries=state.retries) if isinstance(event, Transitioned) else after

    edited_state = list(states)
    edited_state[4] = dataclasses.replace(states[4], retries=5)
    edited_event = list(events)
    edited_event[2] = events[2].model_copy(update={"payload": {"record_id": "r9", "more": True}})
    cases: list[tuple[str, list[Event], list[Any], Callable[[Any, Event], Any], int | None]] = [
        ("everything agrees", events, states, reference, None),
        ("a reducer that forgets retries", events, states, forgets_retries, 3),
        ("the recorded state after event 4 was edited", events, edited_state, reference, 4),
        ("event 2's record_id was edited in the log", edited_event, states, reference, 2),
        ("the recording stopped one state early", events, states[:-1], reference, events[-1].seq),
        ("the log lost its last event", events[:-1], states, reference, len(events) - 1),
    ]
    feedback = []
    for what, evs, recorded, reduce, expected in cases:
        try:
            got = module.first_divergence(evs, recorded, reduce, empty)
        except Exception as exc:
            feedback.append(f"first_divergence, {what}: raised {type(exc).__name__}: {exc}")
            continue
        if got != expected:
            feedback.append(f"first_divergence, {what}: returned {got!r}, expected {expected!r}")
    return feedback


def check(module: ModuleType) -> list[str]:
    missing = [n for n in ("JobState", "reduce", "first_broken_link", "first_divergence") if not hasattr(module, n)]
    if missing:
        return [f"the file must define {', '.join(missing)}"]
    if not dataclasses.is_dataclass(module.JobState) or tuple(
            f.name for f in dataclasses.fields(module.JobState)) != FIELDS:
        return [f"keep JobState as given: a dataclass with the fields {', '.join(FIELDS)}"]
    reference = _reference(module.JobState)
    feedback = _check_reduce(module, reference)
    events, _ = record_run(RUNS[0][1], reference, module.JobState())
    foreign, _ = record_run(RUNS[0][1], reference, module.JobState(), run_id="review-2")
    feedback += _check_links(module, events, foreign)
    feedback += _check_divergence(module, reference)
    return feedback
