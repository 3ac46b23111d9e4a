"""The recorded oracle runs in data/repoedit/oracle replay without a model, and match today's code."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from labkit.cli import main
from labkit.core import catalog
from labkit.core.events import Event, RunStarted, Transitioned
from labkit.core.reducer import replay
from labkit.core.store import load_events
from labkit.repoedit.events import EditApplied, TestsRan
from labkit.repoedit.machine import RepoEditRun
from labkit.repoedit.planners import OraclePlanner
from labkit.repoedit.tasks import load_tasks, project_dir

RECORDED = Path(__file__).resolve().parents[1] / "data" / "repoedit" / "oracle"
LOGS = sorted(RECORDED.glob("*.jsonl"))
TASKS = load_tasks()


def test_every_task_has_a_recorded_oracle_run_and_the_summary_matches_the_logs():
    assert {p.stem for p in LOGS} == set(TASKS)
    summary = json.loads((RECORDED / "summary.json").read_text())
    entry = catalog.lookup("repoedit")
    assert entry is not None
    for path in LOGS:
        events = load_events(path)
        state = replay(events, entry.reduce, entry.empty(), entry.invariants(), entry.table(), entry.guards()).state
        assert summary["runs"][path.stem]["status"] == state.status == "DONE"
        assert summary["runs"][path.stem]["test_runs"] == state.test_runs
    assert summary["done"] == len(LOGS)
    assert "dirty" not in summary["versions"]["git_commit"]


@pytest.mark.parametrize("path", LOGS[:3], ids=lambda p: p.stem)
def test_labkit_replay_verifies_a_recorded_run(path, capsys):
    assert main(["replay", str(path)]) == 0
    out = capsys.readouterr().out
    assert "table repoedit" in out and "hash chain verified" in out and "status: DONE" in out


def _facts(events: list[Event]) -> list[tuple]:
    """What a run did, without times and hashes: transitions, edits (with their diffs), test outcomes."""
    facts: list[tuple] = []
    for e in events:
        if isinstance(e, Transitioned):
            facts.append(("move", e.source, e.trigger, e.dest))
        elif isinstance(e, EditApplied):
            facts.append(("edit", e.file, e.diff, e.digest))
        elif isinstance(e, TestsRan):
            facts.append(("tests", e.phase, e.outcome, tuple(e.passed), tuple(e.failed)))
    return facts


@pytest.mark.slow
def test_a_recorded_run_is_what_the_machine_does_today():
    recorded = load_events(RECORDED / "greeter-rename.jsonl")
    task = TASKS["greeter-rename"]
    machine = RepoEditRun(project_dir(task), task.requirement, OraclePlanner(task), task_id=task.id)
    machine.run()
    assert _facts(list(machine.events)) == _facts(recorded)
    started = recorded[0]
    assert isinstance(started, RunStarted) and started.params["planner"] == "oracle"
    assert {"git_commit", "python", "pytest", "repoedit"} <= set(started.versions)


@pytest.mark.slow
def test_the_run_command_prints_the_trace_and_writes_a_replayable_log(tmp_path, capsys):
    log = tmp_path / "run.jsonl"
    assert main(["repoedit", "run", "wordcount-whitespace", "--log", str(log)]) == 0
    out = capsys.readouterr().out
    assert "RUN_TESTS --green--> DONE" in out and "-    return len(text.split(\" \"))" in out
    assert main(["replay", str(log)]) == 0
    capsys.readouterr()
    written = log.read_bytes()
    assert main(["repoedit", "run", "wordcount-whitespace", "--log", str(log)]) == 0  # finished: shown, not rerun
    out = capsys.readouterr().out
    assert "holds a finished run; its trace:" in out and "RUN_TESTS --green--> DONE" in out
    assert log.read_bytes() == written and not (tmp_path / "run.jsonl.copy").exists()
    assert main(["repoedit", "run", "nope"]) == 2
    assert "no task 'nope'" in capsys.readouterr().err
    assert main(["repoedit", "tasks"]) == 0
    assert f"{len(TASKS)} tasks, checked" in capsys.readouterr().out


def _resealed(events: list[Event], change) -> list[Event]:
    """The log with ``change(event)`` applied to each event, sealed into a fresh, valid hash chain."""
    from labkit.core.store import EventLog

    log = EventLog(run_id=events[0].run_id)
    for event in events:
        fresh = change(event).model_copy(update={"hash": "", "seq": -1, "prev_hash": ""})
        log.append(fresh, at=event.at)
    return list(log.events)


def _replay(events: list[Event]):
    entry = catalog.lookup("repoedit")
    assert entry is not None
    return replay(events, entry.reduce, entry.empty(), entry.invariants(), entry.table(), entry.guards())


def test_a_doctored_log_that_claims_done_after_failing_tests_is_caught_on_replay():
    events = load_events(RECORDED / "wordcount-whitespace.jsonl")

    def fail_the_check(event: Event) -> Event:
        if isinstance(event, TestsRan) and event.phase == "check":
            return event.model_copy(update={"outcome": "failed", "passed": [], "failed": event.passed})
        return event

    result = _replay(_resealed(events, fail_the_check))
    assert [name for _, name, _ in result.violations] == ["done_only_when_green"]


def test_a_doctored_log_that_retries_past_the_budget_does_not_replay():
    """A plan refused once in a run whose plan budget is 1 must end the run; a log that retries anyway
    breaks the guard of the row it claims, and replay names it."""
    from labkit.core.reducer import ReplayDivergence
    from labkit.repoedit.events import ProposalRefused

    started, indexed, baseline, moved, proposed = load_events(RECORDED / "wordcount-whitespace.jsonl")[:5]
    forged = [started.model_copy(update={"params": {**started.params, "plan_budget": 1}}), indexed, baseline,
              moved, proposed, ProposalRefused(state="PLAN_CHANGE", code="not_json", detail="prose"),
              Transitioned(trigger="plan_refused", source="PLAN_CHANGE", dest="PLAN_CHANGE")]
    with pytest.raises(ReplayDivergence, match="plan_retries_left"):
        _replay(_resealed(forged, lambda e: e))
