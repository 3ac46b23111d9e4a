"""The six runs of exercise 02b: made with the real runtime, shown with every destination hidden.

Run this file to see what you predict from:
``.venv/bin/python exercises/02b_predict_states/scenarios.py``. The checker runs the same
scenarios; your answer file holds only your predictions, so the runs (and a replay of them)
stay here, out of the file that is graded.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from labkit import Event, EventLog, Transitioned
from labkit.runtime import TASKS, DraftStore, FaultPlan, Runtime, TickClock, World, describe_event

# name -> (task, fault schedule, the decision a person gives if the run pauses, or None)
SCENARIOS: dict[str, tuple[str, str, bool | None]] = {
    "lost_write": ("diff3", "write_timeout@1:lost", None),
    "duplicate_answer": ("diff3", "duplicate_result@2", None),
    "premature_done": ("diff3", "premature_done@2", None),
    "approved": ("diff3-restricted", "none", True),
    "strict_denial": ("diff3-restricted-strict", "none", None),
    "status_blind": ("diff3", "write_timeout@1,status_timeout@1,status_timeout@2,status_timeout@3,status_timeout@4",
                     None),
}


def run_scenario(name: str) -> list[Event]:
    """Run one scenario with the real runtime (scripted planner, tick clock) and return its events."""
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


def window_bounds(events: list[Event]) -> tuple[int, int]:
    """Where the window starts (the first injected fault or denial) and ends (after the next commit, or the end)."""
    start = next((i for i, e in enumerate(events) if e.type == "fault_injected"
                  or (e.type == "tool_result" and e.outcome == "denied")), 0)
    for i in range(start, len(events)):
        if isinstance(events[i], Transitioned) and events[i].trigger == "committed":
            return start, i + 1
    return start, len(events)


def show(name: str) -> None:
    """Print a scenario's window with every transition's destination hidden: that is what you predict."""
    events = run_scenario(name)
    start, stop = window_bounds(events)
    n = 0
    for event in events[start:stop]:
        if isinstance(event, Transitioned):
            n += 1
            print(f"  #{event.seq:<3} transition {n}: '{event.trigger}' arrives  ->  ?")
        else:
            print(f"  #{event.seq:<3} {describe_event(event)}")


if __name__ == "__main__":
    for scenario in SCENARIOS:
        print(scenario)
        show(scenario)
