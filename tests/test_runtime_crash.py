"""Crash and resume: runner processes killed with SIGKILL at seeded points, then resumed.

Each trial starts a real runner process writing to a real SQLite log and draft area, waits until
the log holds a seeded number of events (plus a seeded extra delay, so kills also land inside tool
calls, which take a few milliseconds here), kills it with SIGKILL, and resumes the run from the
log. The resumed run must end where an uninterrupted run of the same task and faults ends, and no
write may have reached the draft area twice.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from labkit.core.reducer import replay
from labkit.core.store import SqliteLog
from labkit.runtime import TASKS, Runtime, TickClock, World, empty_run_state, reduce_run
from labkit.runtime import runtime_invariants as invariants
from labkit.runtime.bench import bench_crash
from labkit.runtime.tools import DraftStore

TRIALS = 28  # `labkit bench crash --trials 100` runs more (recorded in data/bench/crash.json)


@pytest.mark.slow
def test_killed_runs_resume_to_the_same_final_state_without_repeating_a_write() -> None:
    result = bench_crash(TRIALS)
    assert result["failures"] == []
    assert result["runs_with_repeated_writes"] == 0 and result["different_final_state"] == 0
    assert result["killed"] >= 20, f"only {result['killed']} of {TRIALS} runners were killed before they finished"
    assert result["distinct_kill_points"] >= 10  # the kills landed at many different points
    assert result["killed_inside_a_call"] >= 3  # ... some inside a tool call, whose outcome the resumed run settled


def test_a_few_killed_runs_resume_cleanly() -> None:
    """The CI-sized version: five real runner processes, SIGKILLed and resumed."""
    result = bench_crash(5, seed=7)
    assert result["failures"] == [] and result["killed"] >= 3
    assert result["provenance"]["python"] and result["trials"] == 5


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
