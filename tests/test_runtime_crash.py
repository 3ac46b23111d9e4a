"""Crash and resume: runner processes killed with SIGKILL at seeded points, then resumed.

Each trial starts a real runner process writing to a real SQLite log and draft area, waits until
the log holds a seeded number of events (plus a seeded extra delay, so kills also land inside tool
calls, which take a few milliseconds here), kills it with SIGKILL, and resumes the run from the
log. The resumed run must end where an uninterrupted run of the same task and faults ends, and no
write may have reached the draft area twice.
"""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from labkit.reducer import replay
from labkit.runtime import TASKS, FaultPlan, Runtime, TickClock, World, empty_run_state, outcome_view, reduce_run
from labkit.runtime import runtime_invariants as invariants
from labkit.runtime.invariants import side_effect_count
from labkit.runtime.tools import DraftStore
from labkit.store import SqliteLog

ROOT = Path(__file__).resolve().parents[1]
PLANS = ("none", "read_timeout@2", "write_timeout@1:landed", "write_timeout@1:lost")
TRIALS = 28
LATENCY = 0.01


def _count(db: Path, run_id: str) -> int:
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=0.05) as conn:
            return int(conn.execute("SELECT COUNT(*) FROM events WHERE run_id = ?", (run_id,)).fetchone()[0])
    except sqlite3.Error:
        return 0


def _reference(tmp: Path, plan: str) -> dict:
    world = World(DraftStore(tmp / "reference.sqlite", plan))
    rt = Runtime(TASKS["diff3"], None, world, clock=TickClock(), faults=FaultPlan.parse(plan))
    rt.run()
    return {"view": outcome_view(rt.state), "drafts": world.drafts.drafts(), "events": len(rt.events)}


def _start(db: Path, drafts: Path, run_id: str, plan: str) -> subprocess.Popen[bytes]:
    cmd = [sys.executable, "-m", "labkit.runtime.cli", "run", "diff3", "--db", str(db), "--drafts", str(drafts),
           "--run-id", run_id, "--faults", plan, "--latency", str(LATENCY)]
    return subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


@pytest.mark.slow
def test_killed_runs_resume_to_the_same_final_state_without_repeating_a_write(tmp_path: Path) -> None:
    rng = random.Random(2026)
    references = {plan: _reference(tmp_path, plan) for plan in PLANS}
    db, drafts = tmp_path / "runs.sqlite", tmp_path / "drafts.sqlite"
    killed_at: list[int] = []
    interrupted = 0
    for trial in range(TRIALS):
        plan = PLANS[trial % len(PLANS)]
        run_id = f"t{trial}"
        target = rng.randint(1, references[plan]["events"] - 2)
        extra = rng.uniform(0.0, 2 * LATENCY)
        proc = _start(db, drafts, run_id, plan)
        deadline = time.monotonic() + 20
        while _count(db, run_id) < target and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.001)
        time.sleep(extra)
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        if proc.returncode == -signal.SIGKILL:
            killed_at.append(_count(db, run_id))
        else:
            assert proc.returncode == 0, proc.stderr.read().decode() if proc.stderr else ""
        proc.stderr.close()  # type: ignore[union-attr]

        world = World(DraftStore(drafts, run_id))
        with SqliteLog(db, run_id) as log:
            rt = Runtime(None, None, world, log=log)
            rt.run()
            events = list(rt.events)
        interrupted += any(getattr(e, "outcome", "") == "interrupted" for e in events)
        assert outcome_view(rt.state) == references[plan]["view"], f"trial {trial} ({plan}, target {target})"
        assert world.drafts.drafts() == references[plan]["drafts"]
        assert world.drafts.repeated_keys() == {}, f"trial {trial}: a write reached the draft area twice"
        result = replay(events, reduce_run, empty_run_state(), invariants())
        assert result.state == rt.state and result.violations == ()
        assert all(side_effect_count(events, a) <= 1 for a in {getattr(e, "action_id", "") for e in events})
        world.drafts.close()
    assert len(killed_at) >= 20, f"only {len(killed_at)} of {TRIALS} runners were killed before they finished"
    assert len(set(killed_at)) >= 10  # the kills landed at many different points
    assert interrupted >= 3  # ... some of them inside a tool call, whose outcome the resumed run had to settle


def test_time_a_crashed_run_lay_stopped_is_not_work_time(tmp_path: Path) -> None:
    """A run resumed long after its runner died gets a ``resumed`` fact, and the budget skips the gap."""
    from labkit.runtime import Budget, Resumed

    task = TASKS["diff3"].model_copy(update={"budget": Budget(max_seconds=60.0)})
    db, world = tmp_path / "runs.sqlite", World(DraftStore(tmp_path / "drafts.sqlite", "c"))
    with SqliteLog(db, "c") as log:
        first = Runtime(task, None, world, log=log, clock=TickClock())
        for _ in range(9):  # part-way, then the runner "dies": nothing more is written
            first.step()
        assert not first.machine.finished
        stopped_at = first.state.last_at
    with SqliteLog(db, "c") as log:
        again = Runtime(None, None, world, log=log, clock=TickClock(start=stopped_at + 3600))  # an hour later
        result = again.run()
        events = list(again.events)
    assert result.outcome == "succeeded", result.reason
    resumed = [e for e in events if isinstance(e, Resumed)]
    assert [(r.status, r.down_seconds) for r in resumed] == [(first.state.status, 3600.0)]
    assert again.state.down == 3600.0
    assert again.budget.elapsed(again.state, again.state.last_at) < 60
    assert replay(events, reduce_run, empty_run_state(), invariants()).state == again.state


def test_a_resume_while_waiting_for_a_person_counts_the_gap_once(tmp_path: Path) -> None:
    from labkit.runtime import Resumed

    db, world = tmp_path / "runs.sqlite", World(DraftStore(tmp_path / "drafts.sqlite", "w"))
    with SqliteLog(db, "w") as log:
        assert Runtime(TASKS["diff3-restricted"], None, world, log=log, clock=TickClock()).run().outcome == "paused"
    with SqliteLog(db, "w") as log:
        again = Runtime(None, None, world, log=log, clock=TickClock(start=5000))
        assert [e.type for e in again.events][-1] == "resumed"
        assert again.decide(True).outcome == "succeeded"
        assert any(isinstance(e, Resumed) for e in again.events)
    assert again.state.down == 0.0 and again.state.waited > 4900  # the pause, not down time
    with SqliteLog(db, "w") as log:  # a finished run is not resumed
        n = len(log)
        Runtime(None, None, world, log=log, clock=TickClock(start=9000))
        assert len(log) == n
