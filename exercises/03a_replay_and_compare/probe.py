"""Exercise 03a's probes: record the review job's logs, then call the learner's three functions on them.

The logs are recorded with labkit's machine and a reducer that keeps no state (events do not depend
on the state), so the child holds no reference reducer. Where ``first_divergence`` needs a correct
reducer, it gets one that looks up the states the judge computed for exactly those events.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from labkit import EventLog, LabMachine, Row, Transitioned, TransitionTable

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


def record_events(steps: list[list[Any]], empty: Any, run_id: str = "review-1") -> list[Any]:
    machine = LabMachine(TABLE, guards=GUARDS, reduce=lambda state, event: state, empty=empty, log=EventLog(run_id),
                         clock=lambda: 0.0)
    for trigger, payload in steps:
        machine.fire(trigger, **payload)
    return list(machine.events)


def key(event: Any) -> str:
    return json.dumps([event.seq, event.type, getattr(event, "trigger", None), getattr(event, "payload", None)],
                      sort_keys=True, default=str)


def as_data(state: Any) -> Any:
    if dataclasses.is_dataclass(state) and not isinstance(state, type):
        return {f.name: list(v) if isinstance(v := getattr(state, f.name), tuple) else v
                for f in dataclasses.fields(state)}
    return {"not_a_state": repr(state)[:200]}


def _state(module: Any, data: dict[str, Any]) -> Any:
    return module.JobState(**{k: tuple(v) if isinstance(v, list) else v for k, v in data.items()})


def _events(module: Any, spec: dict[str, Any], runs: dict[str, Any]) -> list[Any]:
    events = record_events(runs[spec["run"]]["steps"], module.JobState(), runs[spec["run"]]["run_id"])
    for op, *args in spec["ops"]:
        if op == "delete":
            events = events[:args[0]] + events[args[0] + 1:]
        elif op == "swap":
            events[args[0]], events[args[1]] = events[args[1]], events[args[0]]
        elif op == "duplicate":
            events = events[:args[0] + 1] + events[args[0]:]
        elif op == "foreign":
            events[args[0]] = record_events(runs[args[1]]["steps"], module.JobState(), runs[args[1]]["run_id"])[args[0]]
        elif op == "payload":
            events[args[0]] = events[args[0]].model_copy(update={"payload": args[1]})
        elif op == "cut":
            events = events[:args[0]]
    return events


def probe(module: Any, cases: dict[str, Any]) -> dict[str, Any]:
    missing = [n for n in ("JobState", "reduce", "first_broken_link", "first_divergence") if not hasattr(module, n)]
    if missing:
        return {"missing": missing}
    cls = module.JobState
    if not dataclasses.is_dataclass(cls) or tuple(f.name for f in dataclasses.fields(cls)) != FIELDS:
        return {"bad_state_class": True}
    runs = cases["runs"]
    reduced: dict[str, Any] = {}
    for name, run in runs.items():  # the reducer first, before first_divergence is handed any reducer
        state, states = module.JobState(), []
        for event in record_events(run["steps"], module.JobState(), run["run_id"]):
            try:
                state = module.reduce(state, event)
            except Exception as exc:
                states.append({"raised": f"{type(exc).__name__}: {exc}"})
                break
            states.append(as_data(state))
        reduced[name] = states
    links = []
    for spec in cases["links"]:
        try:
            links.append({"ok": module.first_broken_link(_events(module, spec, runs))})
        except Exception as exc:
            links.append({"raised": f"{type(exc).__name__}: {exc}"})
    divergence = []
    for spec in cases["divergence"]:
        events = _events(module, spec, runs)
        recorded = [_state(module, s) for s in spec["recorded"]]
        table = {k: _state(module, s) for k, s in spec["reducer"].items()}

        def looked_up(state: Any, event: Any, table: dict[str, Any] = table) -> Any:
            found = table.get(key(event))
            return found if found is not None else state
        try:
            got = module.first_divergence(events, recorded, looked_up, module.JobState())
            divergence.append({"ok": got if got is None or isinstance(got, int) else repr(got)})
        except Exception as exc:
            divergence.append({"raised": f"{type(exc).__name__}: {exc}"})
        _ = Transitioned
    return {"reduce": reduced, "links": links, "divergence": divergence}
