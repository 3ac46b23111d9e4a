"""Exercise 03: predict the states six runs pass through. Fill in the TODOs, then run `labkit check 03`.

Run this file (`.venv/bin/python exercises/03_predict_states/student.py`) to see what you predict from.
"""

import tempfile
from pathlib import Path

from labkit import Event, EventLog, Transitioned
from labkit.runtime import TASKS, DraftStore, FaultPlan, Runtime, TickClock, World, describe_event

# ----------------------------------------------------------------------------- given

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


def window(events: list[Event]) -> list[Event]:
    """The events from the first surprise (an injected fault or a denial) to the next commit, or the end."""
    start = next((i for i, e in enumerate(events) if e.type == "fault_injected"
                  or (e.type == "tool_result" and e.outcome == "denied")), 0)
    for i in range(start, len(events)):
        if isinstance(events[i], Transitioned) and events[i].trigger == "committed":
            return events[start:i + 1]
    return events[start:]


def show(name: str) -> None:
    """Print a scenario's window with every transition's destination hidden: that is what you predict."""
    n = 0
    for event in window(run_scenario(name)):
        if isinstance(event, Transitioned):
            n += 1
            print(f"  #{event.seq:<3} transition {n}: '{event.trigger}' arrives  ->  ?")
        else:
            print(f"  #{event.seq:<3} {describe_event(event)}")


# ----------------------------------------------------------------------------- yours

# For each scenario: the machine state after each transition in its window, in order.
# Example: a window with three transitions might be ["EXECUTING", "OBSERVING", "COMMITTING"].
PREDICTIONS: dict[str, list[str]] = {
    "lost_write": [],  # TODO
    "duplicate_answer": [],  # TODO
    "premature_done": [],  # TODO
    "approved": [],  # TODO
    "strict_denial": [],  # TODO
    "status_blind": [],  # TODO
}

# For each scenario: how the run ends (succeeded, failed, incomplete or needs_review).
OUTCOMES: dict[str, str] = {
    "lost_write": "",  # TODO
    "duplicate_answer": "",  # TODO
    "premature_done": "",  # TODO
    "approved": "",  # TODO
    "strict_denial": "",  # TODO
    "status_blind": "",  # TODO
}


if __name__ == "__main__":
    for scenario in SCENARIOS:
        print(scenario)
        show(scenario)
