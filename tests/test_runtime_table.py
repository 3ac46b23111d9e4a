"""The planner–executor table: checked, complete, registered, and in step with the declared faults."""

from __future__ import annotations

from labkit import catalog
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
