"""Exercise 04a's probes: make the runs (machine and both free loops, seeded faults), call the learner's counts.

The runs are made with the real runtime, here in the sandboxed child and again in the judging
process, from the seeds the judge sends (some drawn afresh at every check). The reference counts
are computed only in the judge; the child returns what the learner's functions answered.
"""

import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from labkit import Event, EventLog, Transitioned, load_events
from labkit.course.exercise_child import call
from labkit.runtime import TASKS, DraftStore, FaultPlan, Runtime, Task, TickClock, World, make_planner
from labkit.runtime.free_loop import (
    DEFAULT_KINDS,
    machine_stopped_on_word,
    machine_unknown_writes_committed,
    run_free,
)
from labkit.runtime.traces import TRACES_DIR

ARMS = ("machine", "free_assume_ok", "free_retry")
METRICS = ("unknown_writes_as_success", "repeated_side_effects", "stopped_on_models_word")


@dataclass(frozen=True)
class RunRecord:
    arm: str
    seed: int
    task: Task
    events: Sequence[Event] = ()
    transcript: Sequence[dict[str, Any]] = ()
    stop: str = ""
    world_calls: Sequence[tuple[str, str, bool, str]] = field(default_factory=tuple)
    label: str = ""


def reference_runs(seeds: Sequence[int]) -> list[tuple[RunRecord, dict[str, int]]]:
    task = TASKS["diff3"]
    found = []
    with tempfile.TemporaryDirectory() as tmp:
        for seed in seeds:
            plan = FaultPlan.random(seed, DEFAULT_KINDS, count=2)
            for arm in ARMS:
                world = World(DraftStore(Path(tmp) / "drafts.sqlite", area=f"{seed}-{arm}"))
                planner = make_planner(task.planner, task)
                calls = world.drafts.calls
                if arm == "machine":
                    runtime = Runtime(task, planner, world, clock=TickClock(), faults=plan)
                    runtime.run()
                    events = list(runtime.events)
                    record = RunRecord(arm, seed, task, events=events, world_calls=tuple(calls()))
                    unknown = machine_unknown_writes_committed(events)
                    on_word = machine_stopped_on_word(events, task)
                else:
                    free = run_free(task, planner, world, plan,
                                    on_timeout="assume_ok" if arm == "free_assume_ok" else "retry")
                    record = RunRecord(arm, seed, task, transcript=list(free.transcript), stop=free.stop,
                                       world_calls=tuple(calls()))
                    unknown = free.unknown_writes_taken_as_success
                    on_word = int(free.stop == "model_said_done")
                repeated = sum(n - 1 for n in world.drafts.repeated_keys().values())
                found.append((record, {"unknown_writes_as_success": unknown, "repeated_side_effects": repeated,
                                       "stopped_on_models_word": on_word}))
                world.drafts.close()
    return found


def _resealed(events: Sequence[Event], extra: Sequence[Event]) -> list[Event]:
    log = EventLog(events[0].run_id)
    for event in [*events, *extra]:
        log.append(event.model_copy(update={"hash": "", "seq": -1, "prev_hash": ""}), at=event.at)
    return list(log.events)


def doctored_runs() -> list[tuple[RunRecord, dict[str, int]]]:
    task = TASKS["diff3"]
    found = []
    # 1. the write timed out, nothing was asked or observed, and the machine committed anyway
    timed_out = load_events(TRACES_DIR / "write_timeout_unknown.jsonl")
    cut = next(i for i, e in enumerate(timed_out) if isinstance(e, Transitioned) and e.dest == "UNKNOWN") + 1
    write_id = [e.payload["action_id"] for e in timed_out[:cut]
                if isinstance(e, Transitioned) and e.trigger == "allowed"][-1]  # the write that timed out
    events = _resealed(timed_out[:cut], [
        Transitioned(trigger="confirmed_present", source="UNKNOWN", dest="COMMITTING", payload={}),
        Transitioned(trigger="committed", source="COMMITTING", dest="SUCCEEDED", payload={"action_id": write_id})])
    found.append((RunRecord("machine", -1, task, events=events, label="doctored: write committed unobserved"),
                  {"unknown_writes_as_success": machine_unknown_writes_committed(events), "repeated_side_effects": 0,
                   "stopped_on_models_word": machine_stopped_on_word(events, task)}))
    # 2. after three reads the run ends SUCCEEDED because the planner proposed nothing
    normal = load_events(TRACES_DIR / "normal_success.jsonl")
    reads_done = [i for i, e in enumerate(normal) if isinstance(e, Transitioned) and e.trigger == "committed"][2] + 1
    events = _resealed(normal[:reads_done], [
        Transitioned(trigger="no_proposal", source="PLANNING", dest="SUCCEEDED", payload={})])
    calls = (("diff-R03-R05-R11", "x", True, "a4"), ("diff-R03-R05-R11", "x", False, "a4"))
    found.append((RunRecord("machine", -2, task, events=events, world_calls=calls,
                            label="doctored: ended on the planner's word, draft area saved twice"),
                  {"unknown_writes_as_success": machine_unknown_writes_committed(events), "repeated_side_effects": 1,
                   "stopped_on_models_word": machine_stopped_on_word(events, task)}))
    return found


def name(run: RunRecord) -> str:
    return run.label or f"{run.arm} seed {run.seed}"


def probe(module: Any, cases: dict[str, Any]) -> dict[str, Any]:
    missing = [n for n in (*METRICS, "tally") if not callable(getattr(module, n, None))]
    if missing:
        return {"missing": missing}
    runs = [run for run, _ in reference_runs(cases["seeds"]) + doctored_runs()]
    counts = {metric: [call(getattr(module, metric), run) for run in runs] for metric in METRICS}
    for metric in METRICS:
        counts[metric] = [c if "raised" in c or isinstance(c["ok"], int) else {"ok": repr(c["ok"])}
                          for c in counts[metric]]
    tally = call(module.tally, [run for run in runs if not run.label])
    if "ok" in tally and not isinstance(tally["ok"], dict):
        tally = {"ok": repr(tally["ok"])}
    return {"names": [name(run) for run in runs], "counts": counts, "tally": tally}
