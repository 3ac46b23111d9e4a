"""``labkit bench core``'s logic: pairing, ratios by two clocks, rounds, the goal marks.

No speed is asserted (speed is what the benchmark reports); fake clocks make the arithmetic exact.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable

import pytest

from labkit.core.bench import STEP_GOAL, _paired, bench_core, bench_transitions, render_core
from labkit.core.errors import LabkitError


class FakeClocks:
    """A wall clock and a CPU clock that advance by what the running job says it costs."""

    def __init__(self) -> None:
        self.wall = 0.0
        self.cpu = 0.0

    def spend(self, wall: float, cpu: float) -> Callable[[], None]:
        def run() -> None:
            self.wall += wall
            self.cpu += cpu
        return run

    @property
    def clocks(self) -> tuple[Callable[[], float], Callable[[], float]]:
        return (lambda: self.wall, lambda: self.cpu)


def test_pairs_report_medians_and_the_median_of_per_pair_ratios() -> None:
    fake = FakeClocks()
    costs = itertools.cycle([(3.0, 2.0), (1.0, 1.0), (9.0, 4.0), (2.0, 2.0), (3.0, 2.0), (1.0, 1.0)])

    def subject() -> None:
        fake.spend(*next(costs))()

    def baseline() -> None:
        fake.spend(*next(costs))()

    p = _paired(subject, baseline, repeats=3, clocks=fake.clocks)
    # pairs by wall: (3, 1), (9, 2), (3, 1) -> ratios 3, 4.5, 3; by CPU: (2, 1), (4, 2), (2, 1) -> 2, 2, 2
    assert p == {"subject_s": 3.0, "baseline_s": 1.0, "ratio": 3.0, "ratio_cpu": 2.0}


def test_rounds_are_kept_and_summarised_by_their_median_and_range() -> None:
    t = bench_transitions(200, repeats=2, rounds=3)
    assert len(t["rounds"]) == 3
    ratios = sorted(r["ratio"] for r in t["rounds"])
    assert (t["ratio_min"], t["ratio"], t["ratio_max"]) == (ratios[0], ratios[1], ratios[2])
    assert all(r["labkit_us"] > 0 and r["bare_us"] > 0 and r["ratio_cpu"] > 0 for r in t["rounds"])


def test_the_record_carries_its_commit_and_machine_and_the_table_marks_goals() -> None:
    result = bench_core(events=200, transitions=200, rounds=2)
    json.dumps(result)  # --json must serialise
    assert result["labkit_commit"] and result["machine"]["cpu_count"] and result["recorded_utc"]
    result["transition"].update(ratio=STEP_GOAL + 0.01, ratio_cpu=STEP_GOAL - 0.01)
    table = render_core(result)
    assert f"{STEP_GOAL + 0.01:.2f}× (rounds: " in table and "≤ 2× ✗" in table and "≤ 2× ✓" in table
    assert "in each of 2 rounds" in table


def test_a_record_of_an_older_format_still_renders() -> None:
    old = {"machine": {"python": "3.11.7", "processor": "x86_64", "pydantic": "2", "transitions": "0.9"},
           "transition": {"labkit_us": 15.7, "bare_us": 5.7, "ratio": 2.75},
           "replay": {"events": 100000.0, "json_eps": 4e5, "replay_eps": 1.7e5, "ratio": 2.2}}
    table = render_core(old)
    assert "2.75×" in table and "CPU time" not in table


def test_no_rounds_is_refused() -> None:
    with pytest.raises(LabkitError, match="at least one round"):
        bench_core(events=200, transitions=200, rounds=0)
