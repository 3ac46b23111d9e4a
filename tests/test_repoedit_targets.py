"""The code machine's targets, judged from the committed recordings and at their bounds."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from labkit.core.errors import LabkitError
from labkit.repoedit import targets
from labkit.repoedit.targets import benchmark_targets, project_targets

DATA = Path(__file__).resolve().parents[1] / "data" / "repoedit"
QWEN = "qwen2.5-coder-1.5b"


def test_the_recorded_machine_meets_the_test_and_guard_targets_and_misses_the_rates() -> None:
    found = benchmark_targets(DATA / "humaneval-fix" / QWEN)
    assert [t.met for t in found] == [False, False, True, True]
    assert found[0].what == "machine fixes at least 85% (75/106, 71%)"
    assert found[1].what == "at least 15 points above prompt_whole (61/106, 58%: +13 points)"
    kit = project_targets(DATA / "compare-plus" / QWEN)
    assert [t.line() for t in kit] == ["- MISSED: machine fixes at least 9 of 10 (8/10)",
                                       "- met: at least as many as prompt_whole (8 against 6)"]
    best = [DATA / "compare-plus" / QWEN, DATA / "compare-plus-best-of" / QWEN]
    assert [t.met for t in project_targets(best, "machine_best_of_3", "prompt_whole_best_of_3")] == [True, True]


def _summary(machine: int, baseline: int, p: float, n: int = 100, broken: int = 0) -> dict[str, Any]:
    arm = {"tasks": n, "broken_trees": 0, "tests_changed": 0}
    return {"arms": [{**arm, "arm": "m", "tasks_solved": machine, "broken_trees": broken},
                     {**arm, "arm": "b", "tasks_solved": baseline}],
            "paired": [{"measure": "fixed", "a": "m", "b": "b", "a_better": 1, "b_better": 0, "p_value": p}]}


def test_each_target_is_met_exactly_at_its_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(targets, "summarize", lambda folders: _summary(85, 70, 0.0099))
    assert [t.met for t in benchmark_targets(Path("x"), "m", "b")] == [True, True, True, True]
    monkeypatch.setattr(targets, "summarize", lambda folders: _summary(84, 70, 0.01, broken=1))
    assert [t.met for t in benchmark_targets(Path("x"), "m", "b")] == [False, False, False, False]
    monkeypatch.setattr(targets, "summarize", lambda folders: _summary(9, 9, 1.0, n=10))
    assert [t.met for t in project_targets(Path("x"), "m", "b")] == [True, True]
    monkeypatch.setattr(targets, "summarize", lambda folders: _summary(8, 9, 1.0, n=10))
    assert [t.met for t in project_targets(Path("x"), "m", "b")] == [False, False]


def test_an_arm_the_recording_lacks_is_refused_with_the_arms_it_has() -> None:
    with pytest.raises(LabkitError, match="no runs of machine_pluss") as err:
        benchmark_targets(DATA / "humaneval-fix" / QWEN, "machine_pluss")
    assert "prompt_whole" in err.value.hint


def _seeded(machine: int, baseline: int, p: float, even_p: float | None, wall_s: float, runs: int = 300,
            planned: int = 300) -> dict[str, Any]:
    summary = _summary(machine, baseline, p)
    summary["arms"][0]["wall_s"], summary["arms"][1]["wall_s"] = wall_s, 0.0
    if even_p is not None:
        summary["paired"].append({"measure": "fixed", "a": "m", "b": "e", "a_better": 3, "b_better": 1,
                                  "p_value": even_p})
    return {**summary, "runs": runs, "planned": planned}


def test_each_seeded_target_is_met_exactly_at_its_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(targets, "summarize", lambda folders: _seeded(60, 40, 0.0099, 0.0499, 3 * 3600.0))
    assert [t.met for t in targets.seeded_targets(Path("x"), "m", "b", "e")] == [True] * 6
    monkeypatch.setattr(targets, "summarize", lambda folders: _seeded(59, 40, 0.01, 0.05, 3 * 3600.0 + 1))
    assert [t.met for t in targets.seeded_targets(Path("x"), "m", "b", "e")] == [False, False, False, False, True,
                                                                              False]


def test_a_seeded_recording_in_stretches_is_judged_on_what_it_holds_and_its_hours_projected(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(targets, "summarize", lambda folders: _seeded(60, 0, 1.0, None, 3600.0, runs=30, planned=300))
    found = targets.seeded_targets(Path("x"), "m", "b", "e")
    assert found[1].met and "not recorded yet" in found[3].what and not found[3].met
    assert found[5].what == "the test split recorded in at most 3 h (1.0 h for 30 of 300 runs, about 10.0 h for all)"


def test_a_machine_that_fixes_nothing_misses_the_ratio_against_a_prompt_that_fixes_nothing(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(targets, "summarize", lambda folders: _seeded(0, 0, 1.0, None, 60.0))
    assert not targets.seeded_targets(Path("x"), "m", "b", "e")[1].met
