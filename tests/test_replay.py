"""Replay: the state is a fold over the log, and disagreements are named by event."""

from __future__ import annotations

import dataclasses

import pytest

from labkit import (
    Invariant,
    LabMachine,
    MachineState,
    ReplayDivergence,
    Transitioned,
    find_divergence,
    reduce_machine,
    replay,
)
from labkit.core.examples import ticket_guards, ticket_table


@pytest.fixture
def run() -> LabMachine:
    m = LabMachine(ticket_table(), guards=ticket_guards(), clock=lambda: 0.0)
    for trigger in ("triage", "start", "ask_customer", "customer_replied"):
        m.fire(trigger)
    return m


def test_replay_from_empty_rebuilds_every_intermediate_state(run):
    result = replay(run.events)
    assert result.state == run.state
    assert list(result.states) == run.states
    assert result.violations == ()


def test_matching_states_have_no_divergence(run):
    assert find_divergence(run.events, run.states) is None
    assert find_divergence(run.events, run.state) is None


def test_the_first_differing_recorded_state_is_named(run):
    recorded = list(run.states)
    recorded[3] = dataclasses.replace(recorded[3], status="RESOLVED")
    divergence = find_divergence(run.events, recorded)
    assert divergence is not None and divergence.seq == 3
    assert "status: replayed 'WAITING_CUSTOMER', recorded 'RESOLVED'" in divergence.reason


def test_a_reducer_that_disagrees_with_the_log_is_caught_at_its_first_wrong_step(run):
    def forgetful(state: MachineState, event):  # drops the ask_customer step
        if isinstance(event, Transitioned) and event.trigger == "ask_customer":
            return dataclasses.replace(state, seq=event.seq)
        return reduce_machine(state, event)

    with pytest.raises(ReplayDivergence) as info:
        replay(run.events, forgetful)
    assert info.value.divergence.seq == 4
    assert "left 'WAITING_CUSTOMER', but replay is in 'IN_PROGRESS'" in str(info.value)
    assert find_divergence(run.events, run.states, forgetful).seq == 4


def test_only_a_final_state_places_the_divergence_at_the_last_event(run):
    other = dataclasses.replace(run.state, transitions=99)
    divergence = find_divergence(run.events, other)
    assert divergence.seq == run.events[-1].seq and "transitions: replayed 4, recorded 99" in divergence.reason


def test_invariants_are_checked_again_during_replay(run):
    never_waiting = Invariant("never_waiting", lambda s, ev: "waited" if s.status == "WAITING_CUSTOMER" else None)
    result = replay(run.events, invariants=[never_waiting])
    assert result.violations == ((3, "never_waiting", "waited"),)


def resealed(events, change):
    """The events with one field changed and the whole chain sealed again (a careful forger)."""
    from labkit import EventLog

    log = EventLog(run_id=events[0].run_id)
    for event in events:
        log.append(change(event).model_copy(update={"hash": "", "seq": -1, "prev_hash": ""}), at=event.at)
    return list(log.events)


def test_a_resealed_log_with_a_move_the_table_does_not_have_is_refused(run):
    from labkit.core.examples import ticket_table

    def teleport(event):
        if isinstance(event, Transitioned) and event.trigger == "start":
            return event.model_copy(update={"trigger": "confirm"})
        return event

    forged = resealed(list(run.events), teleport)
    replay(forged)  # the chain itself is valid...
    with pytest.raises(ReplayDivergence, match="TRIAGED --confirm--> IN_PROGRESS, which is not a row"):
        replay(forged, table=ticket_table())  # ...but the table has no such move


def test_violations_the_log_records_are_not_reported_again():
    from labkit import InvariantViolation, LabMachine
    from labkit.core.examples import ticket_guards, ticket_table

    no_wait = Invariant("no_wait", lambda s, ev: "waited" if s.status == "WAITING_CUSTOMER" else None)
    m = LabMachine(ticket_table(), guards=ticket_guards(), invariants=[no_wait], clock=lambda: 0.0)
    m.fire("triage")
    m.fire("start")
    with pytest.raises(InvariantViolation):
        m.fire("ask_customer")
    assert replay(m.events, invariants=[no_wait]).violations == ()
