"""LabMachine: allowed and illegal events, guards, invariants as logged events, resume."""

from __future__ import annotations

import dataclasses
import itertools

import pytest

from labkit import (
    IllegalTransition,
    Invariant,
    InvariantViolated,
    InvariantViolation,
    JsonlLog,
    LabkitError,
    LabMachine,
    SqliteLog,
    Transitioned,
    read_jsonl,
    replay,
)
from labkit.core.examples import ticket_guards, ticket_invariants, ticket_table


def ticks():
    counter = itertools.count()
    return lambda: float(next(counter))


def ticket(**kwargs) -> LabMachine:
    kwargs.setdefault("invariants", ticket_invariants())
    return LabMachine(ticket_table(), guards=ticket_guards(), clock=ticks(), **kwargs)


def test_a_happy_path_is_logged_one_event_per_step():
    m = ticket()
    m.fire("triage")
    m.fire("start")
    m.fire("resolve", fix_note="restarted the printer")
    m.fire("confirm")
    assert m.status == "CLOSED" and m.finished
    moves = [(e.source, e.trigger, e.dest) for e in m.events if isinstance(e, Transitioned)]
    assert moves == [("NEW", "triage", "TRIAGED"), ("TRIAGED", "start", "IN_PROGRESS"),
                     ("IN_PROGRESS", "resolve", "RESOLVED"), ("RESOLVED", "confirm", "CLOSED")]
    assert [e.seq for e in m.events] == list(range(5))
    assert m.events[3].payload == {"fix_note": "restarted the printer"}
    assert m.state.status == "CLOSED" and m.state.transitions == 4


def test_an_illegal_event_names_state_event_and_allowed_events_and_records_nothing():
    m = ticket()
    with pytest.raises(IllegalTransition) as info:
        m.fire("confirm")
    err = info.value
    assert (err.state, err.event, err.allowed) == ("NEW", "confirm", ["triage", "cancel"])
    assert "allowed there: triage, cancel" in str(err)
    assert len(m.events) == 1  # only run_started


def test_a_guard_picks_the_row():
    m = ticket()
    m.fire("triage")
    m.fire("start")
    m.fire("resolve", fix_note="   ")
    assert m.status == "IN_PROGRESS"
    m.fire("resolve", fix_note="patched")
    assert m.status == "RESOLVED"


def test_a_missing_guard_predicate_is_reported_when_the_machine_is_made():
    with pytest.raises(LabkitError, match="uses guard\\(s\\) has_fix_note"):
        LabMachine(ticket_table())


def test_terminal_states_allow_nothing():
    m = ticket()
    m.fire("cancel")
    with pytest.raises(IllegalTransition, match="allowed there: none"):
        m.fire("triage")


def at_most_two_transitions(state, events):
    return None if state.transitions <= 2 else f"{state.transitions} transitions, limit is 2"


def test_an_invariant_violation_is_an_event_and_halts_the_run():
    m = ticket(invariants=[Invariant("short", at_most_two_transitions)])
    m.fire("triage")
    m.fire("start")
    with pytest.raises(InvariantViolation) as info:
        m.fire("ask_customer")
    assert info.value.name == "short" and info.value.seq == 4 and info.value.after_seq == 3
    assert "broken by event seq 3" in str(info.value)
    last = m.events[-1]
    assert isinstance(last, InvariantViolated)
    assert (last.invariant, last.after_seq, last.state) == ("short", 3, "WAITING_CUSTOMER")
    with pytest.raises(IllegalTransition, match="halted after invariant 'short'"):
        m.fire("customer_replied")


def test_a_violation_can_send_the_run_to_a_failure_state_instead():
    m = ticket(invariants=[Invariant("short", at_most_two_transitions)], on_violation="CANCELLED")
    for trigger in ("triage", "start", "ask_customer"):
        m.fire(trigger)
    assert m.status == "CANCELLED" and m.finished
    assert m.state.violations == ("short",)


def test_a_crashing_check_counts_as_a_violation():
    m = ticket(invariants=[Invariant("broken", lambda s, e: 1 / 0)])
    with pytest.raises(InvariantViolation, match="ZeroDivisionError"):
        m.fire("triage")


@pytest.mark.parametrize("answer", [False, 0, "", ["a list"], ZeroDivisionError])
def test_the_machine_records_the_detail_invariant_violation_gives(answer):
    """The machine calls each check itself on its hot path; the recorded detail must not differ."""
    def check(state, events):
        if answer is ZeroDivisionError:
            return 1 / 0
        return None if state.status == "NEW" else answer

    invariant = Invariant("odd", check)
    m = ticket(invariants=[invariant], on_violation="CANCELLED")
    m.fire("triage")
    recorded = m.events[-1]
    assert isinstance(recorded, InvariantViolated) and recorded.after_seq == 1
    assert recorded.detail == invariant.violation(m.states[1], m.events[:2])
    assert recorded.detail.startswith("the check")


def test_the_planted_closing_bug_is_caught_by_the_ticket_invariant():
    # closing must come straight from RESOLVED; a table with a shortcut row lets the invariant catch it
    from labkit import Row, TransitionTable
    from labkit.core.examples import TICKET_ROWS, TICKET_STATES

    buggy = TransitionTable.build("ticket", TICKET_STATES, (*TICKET_ROWS, Row("TRIAGED", "close", "CLOSED")),
                                  initial="NEW", terminal=["CLOSED", "CANCELLED"])
    m = LabMachine(buggy, guards=ticket_guards(), invariants=ticket_invariants(), clock=ticks())
    m.fire("triage")
    with pytest.raises(InvariantViolation, match="closed_only_after_resolved"):
        m.fire("close")


def test_live_state_equals_replayed_state(tmp_path):
    m = ticket(log=JsonlLog(tmp_path / "run.jsonl", run_id="r1"))
    for trigger in ("triage", "start", "ask_customer", "customer_replied"):
        m.fire(trigger)
    loaded = read_jsonl(tmp_path / "run.jsonl").events
    assert loaded == list(m.events)
    assert replay(loaded).state == m.state
    assert list(replay(loaded).states) == m.states


@pytest.mark.parametrize("make_log", [
    lambda p: JsonlLog(p / "run.jsonl", run_id="r1"),
    lambda p: SqliteLog(p / "runs.sqlite", run_id="r1"),
])
def test_a_run_resumes_from_its_log(tmp_path, make_log):
    first = ticket(log=make_log(tmp_path))
    first.fire("triage")
    first.fire("start")
    second = ticket(log=make_log(tmp_path))
    assert second.status == "IN_PROGRESS" and len(second.events) == 3
    second.fire("resolve", fix_note="done")
    assert make_log(tmp_path).events[-1].dest == "RESOLVED"


def test_resuming_with_another_table_is_refused(tmp_path):
    from labkit import TransitionTable

    ticket(log=JsonlLog(tmp_path / "run.jsonl")).fire("triage")
    other = TransitionTable.build("other", ["A", "B"], [("A", "go", "B")], initial="A", terminal=["B"])
    with pytest.raises(LabkitError, match="does not start a run of table 'other'"):
        LabMachine(other, log=JsonlLog(tmp_path / "run.jsonl"))


def test_a_payload_that_cannot_be_recorded_changes_nothing():
    m = ticket()
    with pytest.raises(LabkitError, match="could not be recorded") as info:
        m.fire("triage", when=object())
    assert "JSON-serialisable" in str(info.value)
    assert m.status == "NEW" and m.state.status == "NEW" and len(m.events) == 1
    m.fire("triage", when="today")
    assert m.status == "TRIAGED"


def test_resuming_a_log_that_breaks_an_invariant_it_does_not_record_is_refused(tmp_path):
    ticket(log=JsonlLog(tmp_path / "run.jsonl")).fire("triage")
    never_triaged = Invariant("never_triaged", lambda s, ev: "triaged" if s.status == "TRIAGED" else None)
    with pytest.raises(LabkitError, match="breaks invariant 'never_triaged' at seq 1"):
        ticket(log=JsonlLog(tmp_path / "run.jsonl"), invariants=[never_triaged])


def test_the_state_after_a_transition_equals_the_one_its_constructor_builds():
    from labkit.core.reducer import MachineState, reduce_machine

    before = MachineState("IN_PROGRESS", "ticket", 4, 3, ("closed_only_after_resolved",))
    after = reduce_machine(before, Transitioned(trigger="ask_customer", source="IN_PROGRESS",
                                                dest="WAITING_CUSTOMER", seq=5))
    expected = MachineState("WAITING_CUSTOMER", "ticket", 5, 4, ("closed_only_after_resolved",))
    assert after == expected and hash(after) == hash(expected) and repr(after) == repr(expected)
    assert type(after) is MachineState and before.status == "IN_PROGRESS"  # the old state is untouched
    with pytest.raises(dataclasses.FrozenInstanceError):
        after.status = "CLOSED"  # type: ignore[misc]


def test_a_fired_event_is_the_event_pydantic_builds_from_the_same_values():
    import copy
    import pickle

    m = ticket()
    fired = m.fire("triage", note="from the phone")
    values = {"trigger": "triage", "source": "NEW", "dest": "TRIAGED", "payload": {"note": "from the phone"},
              "seq": 1, "prev_hash": m.events[0].hash, "run_id": m.log.run_id, "at": fired.at}
    built = Transitioned.model_validate(values)  # pydantic's own construction, its own fields set
    assert fired.model_copy(update={"hash": ""}) == built
    assert fired.model_fields_set == built.model_fields_set == set(values)
    for kwargs in ({}, {"exclude_unset": True}, {"exclude_defaults": True}):
        assert fired.model_dump(**kwargs) | {"hash": ""} == built.model_dump(**kwargs) | {"hash": ""}
    assert fired.model_dump_json(exclude_unset=True) == fired.model_dump_json(exclude={"hash", "type",
                                                                                         "schema_version"})
    # Events the machine builds share one read-only fields set; every copy gets a private plain set.
    second = m.fire("start")
    assert second.model_fields_set is fired.model_fields_set
    with pytest.raises(TypeError, match="shared"):
        fired.model_fields_set.add("hash")
    with pytest.raises(TypeError, match="shared"):
        fired.model_fields_set |= {"hash"}
    assert fired.model_fields_set == set(values)
    updated = fired.model_copy(update={"seq": 7})
    assert updated.model_fields_set == set(values) and type(updated.model_fields_set) is set
    for twin in (copy.copy(fired), copy.deepcopy(fired), pickle.loads(pickle.dumps(fired))):
        assert twin == fired and twin.model_fields_set == set(values) and type(twin.model_fields_set) is set
    assert fired.model_fields_set == set(values) and second.model_fields_set is fired.model_fields_set


def test_the_states_follow_the_log_step_by_step_and_after_a_resume(tmp_path):
    m = ticket(log=JsonlLog(tmp_path / "run.jsonl"), invariants=[Invariant("short", at_most_two_transitions)],
               on_violation="CANCELLED")
    assert m.states == [m.state] and len(m.states) == 1
    for trigger in ("triage", "start", "ask_customer"):  # the third breaks 'short': a violation event too
        m.fire(trigger)
        assert len(m.states) == len(m.events) and m.states[-1] == m.state
    assert m.state.status == "CANCELLED" and m.states[-1].violations == ("short",)
    assert m.states == list(replay(list(m.events)).states)
    resumed = ticket(log=JsonlLog(tmp_path / "run.jsonl"), invariants=[Invariant("short", at_most_two_transitions)],
                     on_violation="CANCELLED")
    assert resumed.states == m.states and resumed.state == m.state
