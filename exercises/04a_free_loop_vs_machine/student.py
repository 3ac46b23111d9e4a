"""Exercise 04a: count three failures from logs, for the machine and the free loop. Fill in the TODOs, then run
`labkit check 04a`."""

import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from labkit import Event, Transitioned, replay  # noqa: F401 - your answer needs it
from labkit.runtime import (
    TASKS,
    DraftStore,
    FaultPlan,
    Observation,  # noqa: F401 - your answer needs it
    Runtime,
    StatusChecked,  # noqa: F401 - your answer needs it
    Task,
    TickClock,
    World,
    empty_run_state,  # noqa: F401 - your answer needs it
    goal_met,  # noqa: F401 - your answer needs it
    make_planner,
    reduce_run,  # noqa: F401 - your answer needs it
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
    # TODO: machine: count `committed` transitions whose action has no typed success before them
    #       (an Observation, or a StatusChecked with outcome "present", for the same action_id);
    #       free loops: what does the strategy do with a save_draft that answered "timeout"?
    return 0


def repeated_side_effects(run: RunRecord) -> int:
    """Saves beyond the first for each draft key, counted from the world's log (run.world_calls)."""
    # TODO
    return 0


def stopped_on_models_word(run: RunRecord) -> int:
    """1 if the run stopped because the model said so, with nothing checking it; else 0."""
    # TODO: machine: it "succeeded" but the goal predicate (goal_met) is false over the replayed state;
    #       free loops: look at run.stop
    return 0


def tally(runs: Sequence[RunRecord]) -> dict[str, dict[str, int]]:
    """Per arm: {"runs": n, "unknown_writes_as_success": ..., "repeated_side_effects": ...,
    "stopped_on_models_word": ...}, the sums of the three counts over that arm's runs."""
    # TODO
    return {}


if __name__ == "__main__":
    for arm, row in tally(collect_runs(range(12))).items():
        print(f"{arm:15} {row}")
