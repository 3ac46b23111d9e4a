"""``labkit bench fuzz`` (N seeded random schedules checked after every step: goal 10,000, 0 violations,
every row) and ``labkit bench crash`` (SIGKILL real runners at random points, resume from the SQLite log:
each ends as the uninterrupted run, no write repeated). Logs on ``/dev/shm``; numbers to ``data/bench/``."""

from __future__ import annotations

import os
import platform
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from labkit.core.errors import LabkitError
from labkit.core.reducer import replay
from labkit.core.store import SqliteLog
from labkit.runtime.clock import TickClock
from labkit.runtime.faults import FaultPlan
from labkit.runtime.fuzz import RandomChooser, draw_schedule, run_schedule
from labkit.runtime.invariants import runtime_invariants, side_effect_count
from labkit.runtime.loop import Runtime
from labkit.runtime.state import empty_run_state, outcome_view, reduce_run
from labkit.runtime.table import planner_executor_table
from labkit.runtime.task import TASKS
from labkit.runtime.tools import DraftStore, World

ROOT = Path(__file__).resolve().parents[2]


@contextmanager
def scratch() -> Iterator[Path]:
    """A temporary folder, on the RAM disk when the machine has one."""
    shm = Path("/dev/shm")
    with tempfile.TemporaryDirectory(prefix="labkit-bench-", dir=shm if shm.is_dir() else None) as folder:
        yield Path(folder)


def provenance() -> dict[str, Any]:
    """What a recorded number needs beside it: code version, library versions, machine, date."""
    import pydantic
    import transitions

    def git(*args: str) -> str:
        try:
            return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            return ""

    cpu = ""
    with suppress(OSError):
        cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                    if line.startswith("model name")), "")
    return {"git_commit": git("rev-parse", "HEAD"), "git_dirty": bool(git("status", "--porcelain", "--", "labkit")),
            "python": platform.python_version(), "pydantic": pydantic.VERSION, "transitions": transitions.__version__,
            "machine": platform.machine(), "cpu": cpu, "cpus": os.cpu_count(),
            "date": datetime.now(timezone.utc).isoformat(timespec="seconds")}


# ---------------------------------------------------------------------------------------------- fuzz
def bench_fuzz(schedules: int, seed: int = 0, max_reports: int = 5) -> dict[str, Any]:
    """Run ``schedules`` seeded schedules (seeds ``seed`` .. ``seed + schedules - 1``) with all checks."""
    if schedules < 1:
        raise LabkitError(f"--schedules {schedules} runs nothing", "give at least 1 (the goal is 10000).")
    rows = {(r.source, r.event, r.dest) for r in planner_executor_table().rows}
    covered: set[tuple[str, str, str]] = set()
    outcomes: dict[str, int] = {}
    violations: list[dict[str, Any]] = []
    crashes = steps = 0
    start = time.perf_counter()
    with scratch() as folder:
        for s in range(seed, seed + schedules):
            schedule = draw_schedule(RandomChooser(random.Random(s)))
            run = run_schedule(schedule, folder, f"s{s}")
            covered |= run.transitions & rows
            crashes += run.crashes
            steps += run.runtime.state.transitions
            state = run.runtime.state
            key = state.outcome or ("paused" if state.waiting else state.status)
            outcomes[key] = outcomes.get(key, 0) + 1
            if run.problems:
                violations.append({"seed": s, "problems": run.problems, "commands": schedule.commands()})
    seconds = time.perf_counter() - start
    return {
        "schedules": schedules, "seed": seed, "seconds": round(seconds, 3),
        "schedules_per_s": round(schedules / seconds, 1), "transitions_fired": steps, "crashes_resumed": crashes,
        "rows_covered": len(covered), "rows": len(rows),
        "rows_missed": [f"({a}, {e} -> {b})" for a, e, b in sorted(rows - covered)],
        "outcomes": dict(sorted(outcomes.items())), "violations": len(violations),
        "violation_reports": violations[:max_reports], "provenance": provenance(),
    }


def render_fuzz(result: dict[str, Any]) -> str:
    r = result
    lines = [f"labkit bench fuzz: {r['schedules']:,} schedules (seeds {r['seed']}..{r['seed'] + r['schedules'] - 1}) "
             f"in {r['seconds']:.1f} s = {r['schedules_per_s']:,.1f} schedules/s",
             f"  transitions fired: {r['transitions_fired']:,}; crashes resumed from the log: {r['crashes_resumed']:,}",
             f"  table rows covered: {r['rows_covered']} of {r['rows']} "
             f"({100 * r['rows_covered'] / r['rows']:.0f}%)" + (f"; missed: {', '.join(r['rows_missed'])}"
                                                                 if r["rows_missed"] else ""),
             "  outcomes: " + ", ".join(f"{k} {v:,}" for k, v in r["outcomes"].items()),
             f"  violations: {r['violations']}"]
    for v in r["violation_reports"]:
        lines.append(f"  seed {v['seed']}: " + "; ".join(v["problems"][:3]))
        lines += [f"    {c}" for c in v["commands"]]
    p = r["provenance"]
    lines.append(f"  git {p['git_commit'][:12]}{' (dirty)' if p['git_dirty'] else ''}, Python {p['python']}, "
                 f"pydantic {p['pydantic']}, {p['cpus']} CPUs ({p['cpu'] or p['machine']}), {p['date']}")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------- crash
CRASH_PLANS = ("none", "read_timeout@2", "write_timeout@1:landed", "write_timeout@1:lost", "duplicate_result@1")
CRASH_LATENCY = 0.01  # seconds per tool call, so that a kill can land inside one


def _logged(db: Path, run_id: str) -> int:
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=0.05) as conn:
            return int(conn.execute("SELECT COUNT(*) FROM events WHERE run_id = ?", (run_id,)).fetchone()[0])
    except sqlite3.Error:
        return 0


def _uninterrupted(folder: Path, plan: str) -> dict[str, Any]:
    world = World(DraftStore(folder / "reference.sqlite", plan))
    runtime = Runtime(TASKS["diff3"], None, world, clock=TickClock(), faults=FaultPlan.parse(plan))
    runtime.run()
    result = {"view": outcome_view(runtime.state), "drafts": world.drafts.drafts(), "events": len(runtime.events)}
    world.drafts.close()
    return result


def crash_trial(folder: Path, trial: int, plan: str, target: int, delay: float) -> dict[str, Any]:
    """One runner process killed once the log holds ``target`` events (plus ``delay`` seconds), then
    resumed in this process; what happened and what the resumed run ended with."""
    db, drafts, run_id = folder / "runs.sqlite", folder / "drafts.sqlite", f"t{trial}"
    cmd = [sys.executable, "-m", "labkit.runtime.cli", "run", "diff3", "--db", str(db), "--drafts", str(drafts),
           "--run-id", run_id, "--faults", plan, "--latency", str(CRASH_LATENCY)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 30
    while _logged(db, run_id) < target and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.001)
    time.sleep(delay)
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGKILL)
    _, err = proc.communicate()
    killed = proc.returncode == -signal.SIGKILL
    if not killed and proc.returncode != 0:
        raise LabkitError(f"runner of trial {trial} failed with exit status {proc.returncode}: {err.decode()[-500:]}",
                          "run the command by hand to see why.")
    at = _logged(db, run_id)
    world = World(DraftStore(drafts, run_id))
    with SqliteLog(db, run_id) as log:
        runtime = Runtime(None, None, world, log=log)
        runtime.run()
        events = list(runtime.events)
    result = replay(events, reduce_run, empty_run_state(), runtime_invariants())
    actions = {getattr(e, "action_id", "") for e in events} - {""}
    trial_result = {
        "trial": trial, "plan": plan, "target": target, "killed": killed, "killed_at": at if killed else None,
        "interrupted_call": any(getattr(e, "outcome", "") == "interrupted" for e in events),
        "view": outcome_view(runtime.state), "drafts": world.drafts.drafts(),
        "repeated": world.drafts.repeated_keys(), "replay_ok": result.state == runtime.state and not result.violations,
        "side_effects_ok": all(side_effect_count(events, a) <= 1 for a in actions),
    }
    world.drafts.close()
    return trial_result


def bench_crash(trials: int, seed: int = 2026) -> dict[str, Any]:
    """``trials`` kill-and-resume trials over the plans in :data:`CRASH_PLANS`; see the module docstring."""
    if trials < 1:
        raise LabkitError(f"--trials {trials} runs nothing", "give at least 1 (the goal is 100 or more).")
    rng = random.Random(seed)
    start = time.perf_counter()
    failures: list[dict[str, Any]] = []
    kills: list[int] = []
    interrupted = repeated = 0
    with scratch() as folder:
        references = {plan: _uninterrupted(folder, plan) for plan in CRASH_PLANS}
        for trial in range(trials):
            plan = CRASH_PLANS[trial % len(CRASH_PLANS)]
            target = rng.randint(1, references[plan]["events"] - 2)
            t = crash_trial(folder, trial, plan, target, rng.uniform(0.0, 2 * CRASH_LATENCY))
            ref = references[plan]
            problems = []
            if t["view"] != ref["view"]:
                problems.append(f"ended {t['view']}, uninterrupted {ref['view']}")
            if t["drafts"] != ref["drafts"]:
                problems.append("the draft area differs from the uninterrupted run's")
            if t["repeated"]:
                problems.append(f"writes repeated in the draft area: {t['repeated']}")
            if not t["replay_ok"]:
                problems.append("the log's replay differs from the live state or breaks an invariant")
            if not t["side_effects_ok"]:
                problems.append("an action has more than one side effect in the log")
            repeated += bool(t["repeated"])
            interrupted += t["interrupted_call"]
            if t["killed"]:
                kills.append(t["killed_at"])
            if problems:
                failures.append({"trial": trial, "plan": plan, "target": target, "problems": problems})
    seconds = time.perf_counter() - start
    return {"trials": trials, "seed": seed, "seconds": round(seconds, 1), "plans": list(CRASH_PLANS),
            "killed": len(kills), "distinct_kill_points": len(set(kills)), "killed_inside_a_call": interrupted,
            "finished_before_the_kill": trials - len(kills), "runs_with_repeated_writes": repeated,
            "different_final_state": sum(1 for f in failures if any("ended" in p for p in f["problems"])),
            "failures": failures, "provenance": provenance()}


def render_crash(result: dict[str, Any]) -> str:
    r = result
    lines = [f"labkit bench crash: {r['trials']} trials in {r['seconds']:.0f} s (plans: {', '.join(r['plans'])})",
             f"  runners killed with SIGKILL: {r['killed']} at {r['distinct_kill_points']} distinct log positions, "
             f"{r['killed_inside_a_call']} inside a tool call; {r['finished_before_the_kill']} finished first",
             f"  resumed runs with a repeated write: {r['runs_with_repeated_writes']}; "
             f"with a final state unlike the uninterrupted run's: {r['different_final_state']}; "
             f"failed trials: {len(r['failures'])}"]
    lines += [f"  trial {f['trial']} ({f['plan']}, kill at {f['target']}): {'; '.join(f['problems'])}"
              for f in r["failures"][:10]]
    p = r["provenance"]
    lines.append(f"  git {p['git_commit'][:12]}{' (dirty)' if p['git_dirty'] else ''}, Python {p['python']}, "
                 f"pydantic {p['pydantic']}, {p['cpus']} CPUs ({p['cpu'] or p['machine']}), {p['date']}")
    return "\n".join(lines)
