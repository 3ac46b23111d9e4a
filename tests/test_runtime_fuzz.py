"""The fuzz schedules, the crash fault, and the CI-sized `labkit bench fuzz` (200 seeded schedules)."""

from __future__ import annotations

import random
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from labkit.core.errors import LabkitError
from labkit.core.store import SqliteLog
from labkit.runtime import TASKS, FaultPlan, Runtime, TickClock, World
from labkit.runtime.bench import bench_fuzz
from labkit.runtime.cli import _setting
from labkit.runtime.events import FaultInjected, StatusChecked, ToolResult
from labkit.runtime.fuzz import (
    FuzzRun,
    RandomChooser,
    RunnerDied,
    Schedule,
    apply_overrides,
    die_in_process,
    draw_schedule,
    run_schedule,
)
from labkit.runtime.tools import DraftStore

ROOT = Path(__file__).resolve().parents[1]


def test_200_seeded_schedules_break_nothing_and_take_every_row() -> None:
    result = bench_fuzz(200, seed=0)
    assert result["violations"] == 0, result["violation_reports"]
    assert result["rows_covered"] == result["rows"] == 28, result["rows_missed"]
    assert result["crashes_resumed"] > 0 and set(result["outcomes"]) >= {"succeeded", "failed", "incomplete"}


def test_the_same_seed_draws_the_same_schedule() -> None:
    a = draw_schedule(RandomChooser(random.Random(11)))
    assert a == draw_schedule(RandomChooser(random.Random(11)))
    assert len({str(draw_schedule(RandomChooser(random.Random(s)))) for s in range(50)}) > 40


def test_a_schedule_prints_as_cli_lines_that_rebuild_it() -> None:
    schedule = Schedule("diff3", {"budget.max_retries": 0, "escalate_denials": False,
                                  "forbidden_records": ["R05"]},
                        FaultPlan.parse("crash/save_draft@1:lost,status_timeout@1,crash@7"), ("approve", "wait"))
    run_line, decide, wait = schedule.commands(db="x.sqlite", run_id="r")
    words = shlex.split(run_line)
    assert words[:3] == ["labkit", "run", "diff3"]
    assert FaultPlan.parse(words[words.index("--faults") + 1]) == schedule.faults
    sets = dict(_setting(words[i + 1]) for i, w in enumerate(words) if w == "--set")
    assert apply_overrides(TASKS["diff3"], sets) == schedule.task()
    assert schedule.task().budget.max_retries == 0 and not schedule.task().escalate_denials
    assert decide == "labkit decide x.sqlite --run r approve" and wait.startswith("# wait")


def test_bad_overrides_are_clear_errors() -> None:
    with pytest.raises(LabkitError, match="no field 'budgett'"):
        apply_overrides(TASKS["diff3"], {"budgett.max_steps": 1})
    with pytest.raises(LabkitError, match="do not make a valid task"):
        apply_overrides(TASKS["diff3"], {"budget.max_steps": 0})
    with pytest.raises(LabkitError, match="FIELD=VALUE"):
        _setting("budget.max_steps")


def test_crash_faults_parse_label_and_refuse_a_tool_they_cannot_strike() -> None:
    plan = FaultPlan.parse("crash@12,crash/save_draft@1:lost,crash/read_record@2")
    assert plan.labels() == "crash@12,crash/save_draft@1:lost,crash/read_record@2:landed"
    assert [f.target for f in plan.faults] == ["runner", "save_draft", "read_record"]
    with pytest.raises(LabkitError, match="a crash strikes a call of read_record or save_draft"):
        FaultPlan.parse("crash/draft_status@1")
    assert all(f.kind != "crash" for s in range(200) for f in FaultPlan.random(s).faults)  # never in a batch


def _runtime(tmp_path: Path, plan: str, log: SqliteLog) -> Runtime:
    world = World(DraftStore(tmp_path / "drafts.sqlite", "c"))
    return Runtime(TASKS["diff3"], None, world, log=log, clock=TickClock(), faults=FaultPlan.parse(plan),
                   die=die_in_process)


@pytest.mark.parametrize("landed", [True, False])
def test_a_crash_inside_a_write_resumes_to_one_draft(tmp_path: Path, landed: bool) -> None:
    plan = f"crash/save_draft@1:{'landed' if landed else 'lost'}"
    with SqliteLog(tmp_path / "runs.sqlite", "c") as log:
        runtime = _runtime(tmp_path, plan, log)
        with pytest.raises(RunnerDied):
            runtime.run()
        assert runtime.world.drafts.calls() == ([("diff-R03-R05-R11", runtime.world.drafts.calls()[0][1], True, "a4")]
                                                if landed else [])
    with SqliteLog(tmp_path / "runs.sqlite", "c") as log:
        again = Runtime(None, None, runtime.world, log=log, clock=TickClock(start=100), die=die_in_process)
        assert again.run().outcome == "succeeded"
        events = list(again.events)
    assert next(e.outcome for e in events if isinstance(e, ToolResult) and e.tool == "save_draft") == "interrupted"
    assert [e.outcome for e in events if isinstance(e, StatusChecked)] == ["present" if landed else "absent"]
    assert len(runtime.world.drafts.calls()) == 1 and runtime.world.drafts.repeated_keys() == {}


def test_a_crash_at_a_step_boundary_strikes_once(tmp_path: Path) -> None:
    run = FuzzRun(Schedule("diff3", faults=FaultPlan.parse("crash@5,crash@9")), tmp_path)
    assert run.run() == []
    assert run.crashes == 2 and run.runtime.state.outcome == "succeeded"
    crashes = [e for e in run.runtime.events if isinstance(e, FaultInjected) and e.fault == "crash"]
    assert [(e.seq, e.detail) for e in crashes] == [(5, "crash@5"), (9, "crash@9")]
    run.close()


def test_the_checks_catch_a_draft_saved_twice_and_a_late_fact(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = DraftStore.save
    monkeypatch.setattr(DraftStore, "save", lambda self, k, t, request="": (real(self, k, t, request),
                                                                              real(self, k, t, request))[1])
    run = run_schedule(Schedule("diff3"), tmp_path, "twice")
    assert "draft 'diff-R03-R05-R11' saved 2 times with the same text (draft area audit)" in run.problems
    assert "action 'a4' reached the draft area 2 times (draft area audit)" in run.problems


def test_crash_really_kills_labkit_run_and_a_rerun_resumes(tmp_path: Path) -> None:
    """The line a shrunk schedule prints: run it, it dies by SIGKILL inside the write; run it again."""
    db = tmp_path / "runs.sqlite"
    cmd = [sys.executable, "-m", "labkit.runtime.cli", "run", "diff3", "--db", str(db), "--run-id", "k",
           "--faults", "crash/save_draft@1:landed", "--set", "budget.max_retries=1"]
    first = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert first.returncode == -signal.SIGKILL, first.stderr
    second = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert second.returncode == 0, second.stderr
    assert "resuming run k" in second.stdout and "SUCCEEDED (succeeded)" in second.stdout
    store = DraftStore(tmp_path / "runs.drafts.sqlite", "k")
    assert len(store.calls()) == 1
    store.close()


def test_a_decision_recorded_but_not_acted_on_is_not_asked_again(tmp_path: Path) -> None:
    """The runner stops between recording a person's answer and acting on it: a second answer is
    refused (the first one stands), and the resumed run acts on the first."""
    from labkit.runtime.events import HumanDecision

    with SqliteLog(tmp_path / "runs.sqlite", "h") as log:
        world = World(DraftStore(tmp_path / "drafts.sqlite", "h"))
        rt = Runtime(TASKS["diff3-restricted"], None, world, log=log, clock=TickClock())
        assert rt.run().outcome == "paused"
        pending = rt.pending_decision()
        assert pending is not None
        rt.machine.record(HumanDecision(action_id=pending.action_id, decision="refuse", by="p"))  # ... then it dies
        assert rt.pending_decision() is None
        with pytest.raises(LabkitError, match="already holds a decision it has not acted on yet"):
            rt.decide(True)
    with SqliteLog(tmp_path / "runs.sqlite", "h") as log:
        again = Runtime(None, None, world, log=log, clock=TickClock(start=50))
        result = again.run()
    assert result.status == "FAILED" and "a human refused" in result.reason
    assert sum(isinstance(e, HumanDecision) for e in again.events) == 1
