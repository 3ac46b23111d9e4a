"""A finished run stays finished: nothing is recorded after a terminal state, and replay refuses a
log that goes on after its end, naming the seq."""

from __future__ import annotations

import itertools
import subprocess
import sys
from pathlib import Path

import pytest

from labkit import EventLog, IllegalTransition, Invariant, LabMachine, Transitioned, read_jsonl, replay, write_jsonl
from labkit.core.errors import RunFinished
from labkit.core.examples import ticket_guards, ticket_invariants, ticket_table
from labkit.core.reducer import EventAfterEnd
from labkit.runtime import (
    HumanDecision,
    ToolCalled,
    empty_run_state,
    planner_executor_table,
    reduce_run,
    runtime_invariants,
)
from labkit.runtime.table import state_guards

TRACES = Path(__file__).resolve().parents[1] / "data" / "traces"


def ticks():
    counter = itertools.count()
    return lambda: float(next(counter))


def runtime_machine(events, path: Path) -> LabMachine:
    """The core machine with the planner–executor table, resumed from ``events``."""
    write_jsonl(path, list(events))
    from labkit import JsonlLog

    guards = {**state_guards(), "goal_met": lambda s, p: True, "escalate": lambda s, p: True}
    return LabMachine(planner_executor_table(), guards=guards, invariants=runtime_invariants(), reduce=reduce_run,
                      empty=empty_run_state(), log=JsonlLog(path), clock=lambda: 1_790_000_900.0,
                      on_violation="FAILED")


def test_record_after_success_is_refused_and_records_nothing(tmp_path: Path) -> None:
    events = read_jsonl(TRACES / "normal_success.jsonl").events
    m = runtime_machine(events, tmp_path / "run.jsonl")
    assert m.status == "SUCCEEDED" and m.end_seq == events[-1].seq
    late = [HumanDecision(action_id="a4", decision="refuse"),
            ToolCalled(action_id="a4", attempt=2, tool="save_draft", args_sha256="0" * 64, policy_version="p",
                       side_effect=True)]
    for fact in late:
        with pytest.raises(RunFinished, match=rf"ended in 'SUCCEEDED' at event seq {events[-1].seq}") as err:
            m.record(fact)
        assert err.value.event == fact.type and err.value.hint
    assert len(m.events) == len(events) and m.status == "SUCCEEDED"
    assert read_jsonl(tmp_path / "run.jsonl").events == events  # nothing reached the file either
    with pytest.raises(IllegalTransition, match="run ended at seq"):
        m.fire("start")


def test_record_after_a_failure_is_refused_too() -> None:
    m = LabMachine(ticket_table(), guards=ticket_guards(), invariants=ticket_invariants(), clock=ticks())
    m.fire("cancel")
    assert m.status in m.table.terminal
    with pytest.raises(RunFinished):
        m.record(HumanDecision(action_id="x", decision="approve"))


def test_the_machines_own_violation_can_still_end_a_run_after_its_last_step() -> None:
    """A violation found after the step that entered a terminal state is the machine's own finding: it
    is recorded (and sends the run to the failure state), and replay accepts it."""
    table = ticket_table()
    def closed(state, history):
        return "closed" if any(isinstance(e, Transitioned) and e.dest == "CLOSED" for e in history) else None

    closed_is_bad, also_bad = Invariant("never_closed", closed), Invariant("never_closed_either", closed)
    m = LabMachine(table, guards=ticket_guards(), invariants=[closed_is_bad, also_bad], clock=ticks(),
                   on_violation="CANCELLED")
    for trigger in ("triage", "start"):
        m.fire(trigger)
    m.fire("resolve", fix_note="x")
    m.fire("confirm")
    assert m.status == "CANCELLED"
    kinds = [e.type for e in m.events[-3:]]
    assert kinds == ["transitioned", "invariant_violated", "invariant_violated"]
    result = replay(m.events, m.reduce, None, m.invariants, table)
    assert result.state.status == "CANCELLED" and result.violations == ()


@pytest.mark.parametrize("name", ["normal_success", "permission_denied", "write_timeout_unknown"])
def test_replay_refuses_an_event_after_the_end_and_names_its_seq(name: str) -> None:
    events = read_jsonl(TRACES / f"{name}.jsonl").events
    log = EventLog(events[0].run_id)
    for event in events:
        log.append(event.model_copy(update={"hash": "", "seq": -1, "prev_hash": ""}), at=event.at)
    log.append(HumanDecision(action_id="a1", decision="approve"), at=events[-1].at + 1)
    with pytest.raises(EventAfterEnd, match=rf"seq {len(events)}: 'human_decision' comes after the run ended "
                       rf"in '{events[-1].dest}' at seq {events[-1].seq}"):
        replay(log.events, reduce_run, empty_run_state(), runtime_invariants(), planner_executor_table())
    # the log up to its end replays, as before
    assert replay(events, reduce_run, empty_run_state(), runtime_invariants(), planner_executor_table()).state


def test_labkit_replay_exits_non_zero_on_a_log_that_goes_on_after_its_end(tmp_path: Path) -> None:
    events = read_jsonl(TRACES / "normal_success.jsonl").events
    log = EventLog(events[0].run_id)
    for event in events:
        log.append(event.model_copy(update={"hash": "", "seq": -1, "prev_hash": ""}), at=event.at)
    log.append(HumanDecision(action_id="a4", decision="refuse"), at=events[-1].at + 1)
    log.append(ToolCalled(action_id="a4", attempt=2, tool="save_draft", args_sha256="0" * 64,
                          policy_version="p", side_effect=True), at=events[-1].at + 2)
    path = tmp_path / "late.jsonl"
    write_jsonl(path, list(log.events))
    out = subprocess.run([sys.executable, "-m", "labkit", "replay", str(path)], capture_output=True, text=True,
                         check=False)
    assert out.returncode == 2, out.stderr
    assert f"seq {len(events)}: 'human_decision' comes after the run ended in 'SUCCEEDED'" in out.stderr
    assert "what to do:" in out.stderr


def test_resuming_a_log_that_goes_on_after_its_end_is_refused(tmp_path: Path) -> None:
    events = read_jsonl(TRACES / "permission_denied.jsonl").events
    assert isinstance(events[-1], Transitioned) and events[-1].dest == "FAILED"
    log = EventLog(events[0].run_id)
    for event in events:
        log.append(event.model_copy(update={"hash": "", "seq": -1, "prev_hash": ""}), at=event.at)
    log.append(HumanDecision(action_id="a1", decision="approve"), at=events[-1].at + 1)
    with pytest.raises(Exception, match="comes after the run ended"):
        runtime_machine(log.events, tmp_path / "resumed.jsonl")
