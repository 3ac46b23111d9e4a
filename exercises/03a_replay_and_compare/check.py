"""Checker for exercise 03a: the reducer, the chain check and the divergence finder.

Logs are recorded by a real ``LabMachine`` running the review job (``probe.py``, in the sandboxed
child and here alike: the events do not depend on any reducer); "what the state should be" comes
from this file's reference reducer, in this process only. Tampered and diverging inputs are made
from those logs, plus hidden runs drawn afresh at every check; feedback names the first event that
went wrong and what is wrong there, never the value expected.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

from labkit import Event, RunStarted, Transitioned, describe


def _load_probe() -> Any:
    spec = importlib.util.spec_from_file_location("labkit_exercise_04_probe", Path(__file__).with_name("probe.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


PROBE = _load_probe()
FIELDS = PROBE.FIELDS


@dataclasses.dataclass(frozen=True)
class JobState:  # the student file's given class, here so the judge never needs the learner's
    status: str = ""
    records_read: tuple[str, ...] = ()
    retries: int = 0
    drafts_saved: int = 0
    last_seq: int = -1


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


def _reference(job_state: type = JobState) -> Callable[[Any, Event], Any]:
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


def _hidden_steps(rng: random.Random) -> list[tuple[str, dict[str, Any]]]:
    records = [f"h{rng.randint(1, 99)}" for _ in range(3)]
    steps: list[tuple[str, dict[str, Any]]] = [("start", {})]
    for _ in range(rng.randint(2, 6)):
        if rng.random() < 0.3:
            steps.append(("timeout", {"retries_left": 1}))
        else:
            steps.append(_read(rng.choice(records)))
    steps.append(_read(rng.choice(records), more=False))
    steps.append(rng.choice([("draft_saved", {"key": "d"}), ("write_error", {})]))
    return steps


def _fold(reduce: Callable[[Any, Event], Any], events: list[Event]) -> list[Any]:
    state, out = JobState(), []
    for event in events:
        state = reduce(state, event)
        out.append(state)
    return out


def _data(states: list[Any]) -> list[Any]:
    return [PROBE.as_data(s) for s in states]


def cases(rng: random.Random) -> dict[str, Any]:
    runs = {name: {"steps": [list(s) for s in steps], "run_id": "review-1"} for name, steps in RUNS}
    runs["foreign"] = {"steps": runs[RUNS[0][0]]["steps"], "run_id": "review-2"}
    for k in range(2):
        runs[f"hidden {k + 1}"] = {"steps": [list(s) for s in _hidden_steps(rng)], "run_id": f"h-{rng.randint(1, 999)}"}
    first, hidden = RUNS[0][0], "hidden 1"
    n_hidden = len(PROBE.record_events(runs[hidden]["steps"], JobState(), runs[hidden]["run_id"]))
    cut = rng.randint(1, n_hidden - 2)  # not the last: a log cut short is whole
    links = [
        ("the untouched log", first, [], None),
        ("event 3 deleted", first, [["delete", 3]], 3),
        ("events 3 and 4 swapped", first, [["swap", 3, 4]], 3),
        ("event 2 duplicated", first, [["duplicate", 2]], 3),
        ("event 2 replaced by the same event of another run", first, [["foreign", 2, "foreign"]], 2),
        ("the first event deleted", first, [["delete", 0]], 0),
        ("an empty log", first, [["cut", 0]], None),
        ("a hidden log with one event deleted", hidden, [["delete", cut]], cut),
        ("a hidden untouched log", "hidden 2", [], None),
    ]
    reference = _reference()

    def forgets_retries(state: Any, event: Event) -> Any:
        after = reference(state, event)
        return dataclasses.replace(after, retries=state.retries) if isinstance(event, Transitioned) else after

    retried = RUNS[2][0]
    events = PROBE.record_events(runs[retried]["steps"], JobState())
    states = _fold(reference, events)
    edited_state = list(states)
    edited_state[4] = dataclasses.replace(states[4], retries=5)
    edited_events = list(events)
    edited_events[2] = events[2].model_copy(update={"payload": {"record_id": "r9", "more": True}})
    h_events = PROBE.record_events(runs[hidden]["steps"], JobState(), runs[hidden]["run_id"])
    h_states = _fold(reference, h_events)
    at = rng.randint(1, len(h_states) - 1)
    h_edited = list(h_states)
    h_edited[at] = dataclasses.replace(h_states[at], drafts_saved=h_states[at].drafts_saved + 3)
    divergence = [  # (what, run, ops on its events, the events as edited, recorded, reducer, expected)
        ("everything agrees", retried, [], events, states, reference, None),
        ("a reducer that forgets retries", retried, [], events, states, forgets_retries, 3),
        ("the recorded state after event 4 was edited", retried, [], events, edited_state, reference, 4),
        ("event 2's record_id was edited in the log", retried, [["payload", 2, {"record_id": "r9", "more": True}]],
         edited_events, states, reference, 2),
        ("the recording stopped one state early", retried, [], events, states[:-1], reference, events[-1].seq),
        ("the log lost its last event", retried, [["cut", len(events) - 1]], events[:-1], states, reference,
         len(events) - 1),
        ("a hidden run whose recording was edited", hidden, [], h_events, h_edited, reference, at),
        ("a hidden run that agrees", hidden, [], h_events, h_states, reference, None),
    ]
    return {
        "runs": runs,
        "expected_states": {name: _data(_fold(reference, PROBE.record_events(run["steps"], JobState(), run["run_id"])))
                            for name, run in runs.items()},
        "links": [{"what": w, "run": r, "ops": o, "expected": e} for w, r, o, e in links],
        "divergence": [{"what": w, "run": r, "ops": o, "recorded": _data(rec),
                        "reducer": {PROBE.key(ev): PROBE.as_data(s)
                                    for ev, s in zip(evs, _fold(red, evs), strict=True)},
                        "expected": e} for w, r, o, evs, rec, red, e in divergence],
    }


def _fields_differ(mine: dict[str, Any], expected: dict[str, Any]) -> str:
    if "not_a_state" in mine:
        return f"reduce returned {mine['not_a_state']}, not a JobState"
    wrong = [f"{name} is {tuple(v) if isinstance(v := mine.get(name), list) else v!r}" for name in FIELDS
             if mine.get(name) != expected.get(name)]
    return "; ".join(wrong) + " (that is not what the README's rules give here)"


def judge(results: dict[str, Any], cases: dict[str, Any], source: str) -> list[str]:
    if "missing" in results:
        return [f"the file must define {', '.join(results['missing'])}"]
    if results.get("bad_state_class"):
        return [f"keep JobState as given: a dataclass with the fields {', '.join(FIELDS)}"]
    feedback = []
    for name, run in cases["runs"].items():
        if name == "foreign":
            continue
        events = PROBE.record_events(run["steps"], JobState(), run["run_id"])
        for event, got, want in zip(events, results["reduce"][name], cases["expected_states"][name], strict=False):
            if "raised" in got:
                feedback.append(f"reduce, run '{name}': raised {got['raised']} at {describe(event)}")
                break
            if got != want:
                feedback.append(f"reduce, run '{name}': first wrong after {describe(event)}: "
                    f"{_fields_differ(got, want)}")
                break
    for got, c in zip(results["links"], cases["links"], strict=True):
        if "raised" in got:
            feedback.append(f"first_broken_link, {c['what']}: raised {got['raised']}")
        elif got["ok"] != c["expected"]:
            feedback.append(f"first_broken_link, {c['what']}: returned {got['ok']!r}, which is not the first "
                            "broken link")
    for got, c in zip(results["divergence"], cases["divergence"], strict=True):
        if "raised" in got:
            feedback.append(f"first_divergence, {c['what']}: raised {got['raised']}")
        elif got["ok"] != c["expected"]:
            feedback.append(f"first_divergence, {c['what']}: returned {got['ok']!r}, which is not the first "
                            "divergence")
    return feedback
