"""pass^k and the per-arm summary against hand-computed values."""

from __future__ import annotations

import pytest

from labkit.errors import LabkitError
from labkit.experiment.arms import RunRecord
from labkit.experiment.metrics import counts_only, pass_hat_k, summarize


def test_pass_hat_k_matches_hand_computed_values() -> None:
    # A: 3 of 5, B: 5 of 5, C: 0 of 5
    per_task = {"A": (3, 5), "B": (5, 5), "C": (0, 5)}
    # k=1: (3/5 + 1 + 0) / 3; k=2: C(3,2)/C(5,2) = 3/10; k=3: C(3,3)/C(5,3) = 1/10; k=4, 5: 0 for A
    assert pass_hat_k(per_task, 1) == pytest.approx((0.6 + 1.0) / 3)
    assert pass_hat_k(per_task, 2) == pytest.approx((0.3 + 1.0) / 3)
    assert pass_hat_k(per_task, 3) == pytest.approx((0.1 + 1.0) / 3)
    assert pass_hat_k(per_task, 4) == pytest.approx(1.0 / 3)
    assert pass_hat_k(per_task, 5) == pytest.approx(1.0 / 3)


def test_pass_hat_k_single_task_values() -> None:
    assert pass_hat_k({"t": (4, 5)}, 2) == pytest.approx(6 / 10)  # C(4,2)/C(5,2)
    assert pass_hat_k({"t": (2, 6)}, 2) == pytest.approx(1 / 15)  # C(2,2)/C(6,2)
    assert pass_hat_k({"t": (2, 6)}, 3) == 0.0


@pytest.mark.parametrize("per_task,k", [({"t": (1, 2)}, 0), ({"t": (1, 2)}, 3), ({"t": (3, 2)}, 1), ({}, 1)])
def test_pass_hat_k_refuses_impossible_input(per_task: dict[str, tuple[int, int]], k: int) -> None:
    with pytest.raises(LabkitError):
        pass_hat_k(per_task, k)


def _record(arm: str, task: str, seed: int, passed: bool, **kw: object) -> RunRecord:
    base = dict(arm=arm, task=task, seed=seed, passed=passed, failed_checks=[] if passed else ["draft_exists"],
                failure_source="" if passed else "no draft saved", termination="succeeded" if passed else "said done",
                reason="", llm_calls=2, prompt_tokens=100, completion_tokens=10, max_prompt_tokens=60, retries=1,
                http_retries=0, guard_rejections=0, schema_invalid=1, forced_choices=0, planner_calls=3,
                tool_calls=3, wall_s=1.5, model_s=1.0)
    base.update(kw)
    return RunRecord(**base)  # type: ignore[arg-type]


def test_summarize_counts_per_arm() -> None:
    records = [_record("a", "t1", s, s < 2) for s in range(3)] + [_record("a", "t2", s, True) for s in range(3)]
    records += [_record("b", "t1", s, False) for s in range(3)]
    rows = summarize(records, ["a", "b"])
    a, b = rows
    assert (a["success"], a["seeds_per_task"], a["tasks_all_seeds_passed"]) == ("5/6", 3, 1)
    assert a["pass_k"] == [pytest.approx((2 / 3 + 1) / 2, abs=1e-4), pytest.approx((1 / 3 + 1) / 2, abs=1e-4), 0.5]
    assert a["failure_sources"] == {"no draft saved": 1}
    assert a["terminations"] == {"said done": 1, "succeeded": 5}
    assert (a["llm_calls"], a["prompt_tokens"], a["schema_invalid"]) == (12, 600, 6)
    assert b["success"] == "0/3" and b["pass_k"] == [0.0, 0.0, 0.0]
    assert "wall_s" not in counts_only(rows)[0]
