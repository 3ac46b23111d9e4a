"""The planner–executor table: checked, complete, registered, and in step with the declared faults."""

from __future__ import annotations

from labkit.core import catalog
from labkit.runtime.table import EVENT_SOURCES, FAULTS, STATES, TABLE_NAME, TERMINAL, planner_executor_table


def test_table_builds_and_leaves_no_pair_unhandled() -> None:
    table = planner_executor_table()
    assert table.problems() == []
    assert table.unhandled() == []
    assert set(table.states) == set(STATES)
    assert table.terminal == frozenset(TERMINAL)


def test_every_event_has_a_row_in_each_state_it_can_arrive_in() -> None:
    table = planner_executor_table()
    assert set(EVENT_SOURCES) == set(table.events)
    for event, states in EVENT_SOURCES.items():
        for state in states:
            assert table.rows_for(state, event), f"{event} can arrive in {state} but has no row there"


def test_the_lessons_transitions_are_rows() -> None:
    table = planner_executor_table()
    expected = [("PLANNING", "proposed", "VALIDATING"), ("VALIDATING", "denied", "WAITING_HUMAN"),
                ("VALIDATING", "denied", "FAILED"), ("VALIDATING", "allowed", "EXECUTING"),
                ("EXECUTING", "timeout", "UNKNOWN"), ("UNKNOWN", "confirmed_present", "COMMITTING"),
                ("UNKNOWN", "confirmed_absent", "EXECUTING"), ("COMMITTING", "committed", "PLANNING"),
                ("COMMITTING", "committed", "SUCCEEDED")]
    have = {(r.source, r.event, r.dest) for r in table.rows}
    assert [t for t in expected if t not in have] == []


def test_success_is_reachable_only_through_the_goal_guard() -> None:
    into_success = [r for r in planner_executor_table().rows if r.dest == "SUCCEEDED"]
    assert into_success and all(r.guard == "goal_met" for r in into_success)


def test_declared_faults_name_real_states_and_rows() -> None:
    table = planner_executor_table()
    for spec in FAULTS.values():
        assert spec.state in table.states
        assert table.rows_for(spec.state, spec.event), f"fault {spec.name}: no row {spec.state}+{spec.event}"


def test_catalog_entry_is_registered() -> None:
    entry = catalog.lookup(TABLE_NAME)
    assert entry is not None
    assert entry.table().name == TABLE_NAME
    assert [i.name for i in entry.invariants()] == [
        "executed_implies_validated", "committed_implies_observed", "single_side_effect"]
    assert entry.empty().status == ""


def test_a_retry_of_an_unknown_write_needs_a_recorded_status_query(tmp_path) -> None:
    """The guard is a row of the table: the live machine refuses the blind retry, and replay refuses a log
    that was written around the machine with one."""
    import subprocess
    import sys
    from pathlib import Path

    import pytest

    from labkit import EventLog, IllegalTransition, JsonlLog, LabMachine, Transitioned, read_jsonl, write_jsonl
    from labkit.core.reducer import ReplayDivergence, replay
    from labkit.runtime import empty_run_state, reduce_run, runtime_invariants
    from labkit.runtime.table import state_guards

    rows = planner_executor_table().rows_for("UNKNOWN", "confirmed_absent")
    assert [r.guard for r in rows] == ["status_checked"]
    events = read_jsonl(Path(__file__).resolve().parents[1] / "data/traces/write_timeout_unknown.jsonl").events
    unknown_at = next(i for i, e in enumerate(events) if isinstance(e, Transitioned) and e.dest == "UNKNOWN") + 1
    write_jsonl(tmp_path / "prefix.jsonl", list(events[:unknown_at]))
    guards = {**state_guards(), "goal_met": lambda s, p: True, "escalate": lambda s, p: True}
    machine = LabMachine(planner_executor_table(), guards=guards, invariants=runtime_invariants(), reduce=reduce_run,
                         empty=empty_run_state(), log=JsonlLog(tmp_path / "prefix.jsonl"), clock=lambda: 0.0)
    with pytest.raises(IllegalTransition, match="no row's guard holds: status_checked"):
        machine.fire("confirmed_absent", action_id="a4")
    assert len(machine.events) == unknown_at

    forged = EventLog(events[0].run_id)
    for event in events[:unknown_at]:
        forged.append(event, at=event.at)
    forged.append(Transitioned(trigger="confirmed_absent", source="UNKNOWN", dest="EXECUTING",
                               payload={"action_id": "a4"}), at=events[unknown_at].at)
    with pytest.raises(ReplayDivergence, match=rf"seq {unknown_at}: .*guard \[status_checked\] does not hold"):
        replay(forged.events, reduce_run, empty_run_state(), runtime_invariants(), planner_executor_table(),
               state_guards())
    write_jsonl(tmp_path / "forged.jsonl", list(forged.events))
    out = subprocess.run([sys.executable, "-m", "labkit", "replay", str(tmp_path / "forged.jsonl")],
                         capture_output=True, text=True, check=False)
    assert out.returncode == 2 and "guard [status_checked] does not hold" in out.stderr
    # every shipped trace passes the same check
    for trace in sorted((Path(__file__).resolve().parents[1] / "data/traces").glob("*.jsonl")):
        replay(read_jsonl(trace).events, reduce_run, empty_run_state(), runtime_invariants(),
               planner_executor_table(), state_guards())


def test_the_seeds_rows_are_compared_with_the_table_and_a_changed_row_shows() -> None:
    from labkit import Row, TransitionTable
    from labkit.runtime.table import SEED_ROWS, seed_rows_in

    table = planner_executor_table()
    found = seed_rows_in(table)
    assert len(found) == len(SEED_ROWS) and all(r["same"] for r in found)
    assert found[3]["seed"] == "EXECUTING + timeout [side_effect_possible] -> UNKNOWN"
    # a table that retries every timed-out call blindly no longer goes where the seed says
    blind = TransitionTable.build("blind", ["EXECUTING", "DONE"],
                                  [Row("EXECUTING", "timeout", "EXECUTING"), Row("EXECUTING", "ok", "DONE")],
                                  initial="EXECUTING", terminal=["DONE"])
    timeout = next(r for r in seed_rows_in(blind) if r["seed"].startswith("EXECUTING + timeout"))
    assert timeout == {"seed": "EXECUTING + timeout [side_effect_possible] -> UNKNOWN", "table": [], "same": False}
