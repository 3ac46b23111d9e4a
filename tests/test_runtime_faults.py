"""Fault schedules and the fault x state coverage matrix."""

from __future__ import annotations

import pytest

from labkit.core.errors import LabkitError
from labkit.runtime import FAULTS, Fault, FaultPlan
from labkit.runtime.batch import coverage, run_batch
from labkit.runtime.faults import coverage_matrix, fault_states
from labkit.runtime.table import IN_PROCESS_FAULTS


def test_parse_and_label_round_trip() -> None:
    plan = FaultPlan.parse("read_timeout@2, write_timeout@1:lost,denied/save_draft,duplicate_result@3")
    assert plan.faults[0] == Fault(kind="read_timeout", nth=2)
    assert plan.faults[1].landed is False and plan.faults[2].target == "save_draft"
    assert FaultPlan.parse(plan.labels()) == plan
    assert FaultPlan.parse("none").faults == ()


@pytest.mark.parametrize("bad", ["bogus", "read_timeout@x", "write_timeout@1:maybe"])
def test_parse_errors_say_what_to_write(bad: str) -> None:
    with pytest.raises(LabkitError):
        FaultPlan.parse(bad)


def test_random_plans_are_seeded() -> None:
    assert FaultPlan.random(7) == FaultPlan.random(7)
    assert len({FaultPlan.random(s).labels() for s in range(30)}) > 10
    with_status = [FaultPlan.random(s) for s in range(60) if "status_timeout" in FaultPlan.random(s).labels()]
    assert with_status and all("write_timeout" in p.labels() for p in with_status)


def test_a_batch_exercises_every_declared_fault_in_the_state_it_strikes() -> None:
    logs = run_batch(range(40))
    pairs = {p for log in logs for p in fault_states(log)}
    for spec in FAULTS.values():
        if not spec.kills_runner:  # a crash is not drawn for an in-process batch (tests/test_runtime_fuzz.py)
            assert (spec.name, spec.state) in pairs, spec.name
    table = coverage_matrix(logs)
    assert [r[0] for r in table.rows] == list(IN_PROCESS_FAULTS)
    assert "fault \\ state" in table.render()


def test_coverage_counts_are_per_run() -> None:
    table = coverage(range(5), task_ids=("diff3",))
    counts = [c for row in table.rows for c in row[1:] if c != "."]
    assert counts and max(counts) <= 5  # type: ignore[type-var]
