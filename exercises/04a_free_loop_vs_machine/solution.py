# BEGIN SOLUTION
"""Exercise 04a, one solution: three failure counts, computed from logs, for the machine and the free loop."""
# STUB: """Exercise 04a: count three failures from logs, for the machine and the free loop. Fill in the TODOs, then run
# STUB: `labkit check 04a`."""
# END SOLUTION

import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from labkit import Event, Transitioned, replay
from labkit.runtime import (
    TASKS,
    DraftStore,
    FaultPlan,
    Observation,
    Runtime,
    StatusChecked,
    Task,
    TickClock,
    World,
    empty_run_state,
    goal_met,
    make_planner,
    reduce_run,
)
from labkit.runtime.free_loop import DEFAULT_KINDS, run_free

# ----------------------------------------------------------------------------- given

ARMS = ("machine", "free_assume_ok", "free_retry")


@dataclass(frozen=True)
class RunRecord:
    """One run and the two logs it left: its own (events or transcript) and the world's."""

    arm: str  # one of ARMS
    seed: int
    task: Task
    events: Sequence[Event] = ()  # the machine's event log (empty for a free loop)
    transcript: Sequence[dict[str, Any]] = ()  # a free loop's memory: {action, args, outcome, detail} per call
    stop: str = ""  # a free loop's reason to stop: model_said_done | max_iterations ("" for the machine)
    world_calls: Sequence[tuple[str, str, bool, str]] = field(default_factory=tuple)
    # every save that reached the draft area: (key, sha256, changed, request), in order


def collect_runs(seeds: Sequence[int], task_id: str = "diff3") -> list[RunRecord]:
    """Run the machine and both free loops on the same task and the same seeded faults."""
    task = TASKS[task_id]
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        for seed in seeds:
            plan = FaultPlan.random(seed, DEFAULT_KINDS, count=2)
            for arm in ARMS:
                world = World(DraftStore(Path(tmp) / "drafts.sqlite", area=f"{seed}-{arm}"))
                planner = make_planner(task.planner, task)
                if arm == "machine":
                    runtime = Runtime(task, planner, world, clock=TickClock(), faults=plan)
                    runtime.run()
                    record = RunRecord(arm, seed, task, events=list(runtime.events))
                else:
                    free = run_free(task, planner, world, plan,
                                    on_timeout="assume_ok" if arm == "free_assume_ok" else "retry")
                    record = RunRecord(arm, seed, task, transcript=list(free.transcript), stop=free.stop)
                runs.append(RunRecord(record.arm, seed, task, record.events, record.transcript, record.stop,
                                      tuple(world.drafts.calls())))
                world.drafts.close()
    return runs


# ----------------------------------------------------------------------------- yours


def unknown_writes_as_success(run: RunRecord) -> int:
    """Writes whose outcome was unknown (a timeout) but that the run went on treating as saved."""
    # BEGIN SOLUTION
    if run.arm == "machine":
        count = 0
        for i, event in enumerate(run.events):
            if isinstance(event, Transitioned) and event.trigger == "committed":
                action_id = event.payload.get("action_id")
                observed = any((isinstance(e, Observation) and e.action_id == action_id)
                               or (isinstance(e, StatusChecked) and e.action_id == action_id
                                   and e.outcome == "present") for e in run.events[:i])
                count += 0 if observed else 1
        return count
    if run.arm == "free_assume_ok":
        return sum(1 for step in run.transcript if step["action"] == "save_draft" and step["outcome"] == "timeout")
    return 0
    # STUB: # TODO: machine: count `committed` transitions whose action has no typed success before them
    # STUB: #       (an Observation, or a StatusChecked with outcome "present", for the same action_id);
    # STUB: #       free loops: what does the strategy do with a save_draft that answered "timeout"?
    # STUB: return 0
    # END SOLUTION


def repeated_side_effects(run: RunRecord) -> int:
    """Saves beyond the first for each draft key, counted from the world's log (run.world_calls)."""
    # BEGIN SOLUTION
    counts: dict[str, int] = {}
    for key, *_ in run.world_calls:
        counts[key] = counts.get(key, 0) + 1
    return sum(n - 1 for n in counts.values())
    # STUB: # TODO
    # STUB: return 0
    # END SOLUTION


def stopped_on_models_word(run: RunRecord) -> int:
    """1 if the run stopped because the model said so, with nothing checking it; else 0."""
    # BEGIN SOLUTION
    if run.arm == "machine":
        state = replay(run.events, reduce_run, empty_run_state()).state
        return int(state.outcome == "succeeded" and not goal_met(run.task.goal, state))
    return int(run.stop == "model_said_done")
    # STUB: # TODO: machine: it "succeeded" but the goal predicate (goal_met) is false over the replayed state;
    # STUB: #       free loops: look at run.stop
    # STUB: return 0
    # END SOLUTION


def tally(runs: Sequence[RunRecord]) -> dict[str, dict[str, int]]:
    """Per arm: {"runs": n, "unknown_writes_as_success": ..., "repeated_side_effects": ...,
    "stopped_on_models_word": ...}, the sums of the three counts over that arm's runs."""
    # BEGIN SOLUTION
    table = {arm: {"runs": 0, "unknown_writes_as_success": 0, "repeated_side_effects": 0,
                   "stopped_on_models_word": 0} for arm in ARMS}
    for run in runs:
        row = table[run.arm]
        row["runs"] += 1
        row["unknown_writes_as_success"] += unknown_writes_as_success(run)
        row["repeated_side_effects"] += repeated_side_effects(run)
        row["stopped_on_models_word"] += stopped_on_models_word(run)
    return table
    # STUB: # TODO
    # STUB: return {}
    # END SOLUTION


if __name__ == "__main__":
    for arm, row in tally(collect_runs(range(12))).items():
        print(f"{arm:15} {row}")
