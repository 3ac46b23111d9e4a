"""Checker for exercise 05: the three counts, per run and per arm, against the reference computation.

Runs are made here (machine and both free loops, same task, same seeded faults); the reference
counts come from the runtime's own bookkeeping (``labkit.runtime.free_loop``: the machine's log
checks, the free loop's counter and stop reason, the draft area's call table). Two doctored
machine logs — a write committed with nothing observed, a run ended on the planner's word — make
sure the machine's counts are computed, not assumed to be zero.
"""

import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from labkit import Event, EventLog, Transitioned, load_events
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
SEEDS = range(12)


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


def _reference_runs() -> list[tuple[RunRecord, dict[str, int]]]:
    task = TASKS["diff3"]
    found = []
    with tempfile.TemporaryDirectory() as tmp:
        for seed in SEEDS:
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


def _doctored_runs() -> list[tuple[RunRecord, dict[str, int]]]:
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


def _name(run: RunRecord) -> str:
    return run.label or f"{run.arm} seed {run.seed}"


def check(module: ModuleType) -> list[str]:
    missing = [n for n in (*METRICS, "tally") if not callable(getattr(module, n, None))]
    if missing:
        return [f"the file must define the functions {', '.join(missing)}"]
    runs = _reference_runs() + _doctored_runs()
    feedback: list[str] = []
    wrong_per_metric: dict[str, int] = {}
    for metric in METRICS:
        function = getattr(module, metric)
        for run, expected in runs:
            try:
                got = function(run)
            except Exception as exc:
                feedback.append(f"{metric}({_name(run)}): raised {type(exc).__name__}: {exc}")
                break
            if got != expected[metric]:
                wrong_per_metric[metric] = wrong_per_metric.get(metric, 0) + 1
                if wrong_per_metric[metric] == 1:
                    feedback.append(f"{metric}({_name(run)}): returned {got!r}, the reference count is "
                                    f"{expected[metric]}")
        if wrong_per_metric.get(metric, 0) > 1:
            feedback.append(f"{metric}: {wrong_per_metric[metric]} of {len(runs)} runs counted wrong in all")
    real = [run for run, _ in runs if not run.label]
    expected_tally = {arm: {"runs": 0, **dict.fromkeys(METRICS, 0)} for arm in ARMS}
    for run, counts in runs:
        if run.label:
            continue
        expected_tally[run.arm]["runs"] += 1
        for metric in METRICS:
            expected_tally[run.arm][metric] += counts[metric]
    try:
        got_tally = module.tally(real)
    except Exception as exc:
        return [*feedback, f"tally: raised {type(exc).__name__}: {exc}"]
    for arm in ARMS:
        row = got_tally.get(arm) if isinstance(got_tally, dict) else None
        if not isinstance(row, dict):
            feedback.append(f"tally: no row for arm '{arm}' (return {{arm: {{count name: number}}}})")
            continue
        wrong = [f"{k} {row.get(k)!r} (expected {v})" for k, v in expected_tally[arm].items() if row.get(k) != v]
        if wrong:
            feedback.append(f"tally, arm {arm}: " + "; ".join(wrong))
    return feedback
