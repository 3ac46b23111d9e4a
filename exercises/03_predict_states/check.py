"""Checker for exercise 03: predicted states against the states a replay of the real run gives.

The runs are made here with the real runtime (scripted planner, tick clock, the scenario's fault
schedule), and the true states come from replaying their logs with the runtime's reducer, so the
answer never comes from the file under test. For the first wrong prediction of each scenario the
feedback names the event and shows the table rows that decide it.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from types import ModuleType

from labkit import Event, EventLog, Transitioned, replay
from labkit.runtime import (
    STATES,
    TASKS,
    DraftStore,
    FaultPlan,
    Runtime,
    TickClock,
    World,
    empty_run_state,
    planner_executor_table,
    reduce_run,
)

SCENARIOS: dict[str, tuple[str, str, bool | None]] = {
    "lost_write": ("diff3", "write_timeout@1:lost", None),
    "duplicate_answer": ("diff3", "duplicate_result@2", None),
    "premature_done": ("diff3", "premature_done@2", None),
    "approved": ("diff3-restricted", "none", True),
    "strict_denial": ("diff3-restricted-strict", "none", None),
    "status_blind": ("diff3", "write_timeout@1,status_timeout@1,status_timeout@2,status_timeout@3,status_timeout@4",
                     None),
}
OUTCOME_WORDS = ("succeeded", "failed", "incomplete", "needs_review")


def run_scenario(name: str) -> list[Event]:
    task_name, faults, decision = SCENARIOS[name]
    task = (TASKS["diff3-restricted"].model_copy(update={"escalate_denials": False})
            if task_name == "diff3-restricted-strict" else TASKS[task_name])
    with tempfile.TemporaryDirectory() as tmp:
        world = World(DraftStore(Path(tmp) / "drafts.sqlite", area=name))
        runtime = Runtime(task, None, world, log=EventLog(f"ex03-{name}"), clock=TickClock(start=0.0),
                          faults=FaultPlan.parse(faults))
        if runtime.run().outcome == "paused" and decision is not None:
            runtime.decide(decision, by="teacher")
        world.drafts.close()
        return list(runtime.events)


def _window_bounds(events: list[Event]) -> tuple[int, int]:
    start = next((i for i, e in enumerate(events) if e.type == "fault_injected"
                  or (e.type == "tool_result" and e.outcome == "denied")), 0)
    for i in range(start, len(events)):
        if isinstance(events[i], Transitioned) and events[i].trigger == "committed":
            return start, i + 1
    return start, len(events)


def _rows(source: str, trigger: str) -> str:
    return ", ".join(str(r) for r in planner_executor_table().rows_for(source, trigger))


def _check_scenario(name: str, predicted: object, outcome: object) -> list[str]:
    events = run_scenario(name)
    result = replay(events, reduce_run, empty_run_state())  # the truth: a replay of the real log
    start, stop = _window_bounds(events)
    moves = [(i, e) for i, e in enumerate(events[start:stop], start) if isinstance(e, Transitioned)]
    truth = [result.states[i].status for i, _ in moves]
    feedback = []
    if not isinstance(predicted, list) or not all(isinstance(p, str) for p in predicted):
        feedback.append(f"{name}: PREDICTIONS['{name}'] must be a list of state names")
    else:
        unknown = [p for p in predicted if p not in STATES]
        for k, (guess, actual) in enumerate(zip(predicted, truth, strict=False)):
            if guess != actual:
                i, event = moves[k]
                before = result.states[i - 1].status
                feedback.append(
                    f"{name}: transition {k + 1} of {len(truth)} (#{event.seq} '{event.trigger}' arriving in "
                    f"{before}): you predicted {guess}, the replay says {actual}; the rows for it: "
                    f"{_rows(before, event.trigger)}")
                break
        else:
            if len(predicted) != len(truth):
                feedback.append(f"{name}: you predicted {len(predicted)} state(s), but the window has "
                                f"{len(truth)} transition(s)")
        if unknown:
            feedback.append(f"{name}: {', '.join(map(repr, unknown))} is not a state of the table "
                            f"({', '.join(STATES)})")
    final = result.state.outcome
    if outcome not in OUTCOME_WORDS:  # no guess yet: say what a guess looks like, not what the answer is
        feedback.append(f"{name}: OUTCOMES['{name}'] is {outcome!r}; predict one of {', '.join(OUTCOME_WORDS)}")
    elif outcome != final:
        feedback.append(f"{name}: you predicted the outcome {outcome!r}, the run ended {final!r}")
    return feedback


def check(module: ModuleType) -> list[str]:
    predictions = getattr(module, "PREDICTIONS", None)
    outcomes = getattr(module, "OUTCOMES", None)
    if not isinstance(predictions, dict) or not isinstance(outcomes, dict):
        return ["the file must define the dicts PREDICTIONS and OUTCOMES"]
    feedback = []
    for name in SCENARIOS:
        if name not in predictions or name not in outcomes:
            feedback.append(f"{name}: missing from PREDICTIONS or OUTCOMES")
            continue
        feedback += _check_scenario(name, predictions[name], outcomes[name])
    return feedback
