"""labkit.compare.stats against values computed by hand (the arithmetic is in the comments)."""

from __future__ import annotations

import pytest

from labkit.compare.stats import (
    PairedTest,
    StatsError,
    paired_test,
    pass_hat_k,
    sign_test_p,
    stored_p,
    wilson_interval,
)
from labkit.core.errors import LabkitError
from labkit.dialog import wilson_interval as dialog_wilson


def test_one_implementation_is_shared() -> None:
    assert dialog_wilson is wilson_interval


def test_wilson_interval_hand_computed() -> None:
    # z = 1.96, z² = 3.8415, n = 10: denominator = 1 + 3.8415/10 = 1.38415
    # 5/10: centre = (0.5 + 3.8415/20) / 1.38415 = 0.5
    #       half = 1.96·sqrt(0.5·0.5/10 + 3.8415/400) / 1.38415 = 1.96·sqrt(0.0346037)/1.38415 = 0.26341
    assert wilson_interval(5, 10) == (0.2366, 0.7634)
    # 8/10: centre = (0.8 + 0.192073) / 1.38415 = 0.716738
    #       half = 1.96·sqrt(0.016 + 0.0096037)/1.38415 = 1.96·0.160012/1.38415 = 0.226577
    assert wilson_interval(8, 10) == (0.4902, 0.9433)
    # 0/10: centre = 0.192073/1.38415 = 0.138766, half = 1.96·sqrt(0.0096037)/1.38415 = 0.138766 -> (0, 0.2775)
    assert wilson_interval(0, 10) == (0.0, 0.2775)
    assert wilson_interval(10, 10) == (0.7225, 1.0)  # the mirror image of 0/10
    assert wilson_interval(0, 0) == (0.0, 1.0)


@pytest.mark.parametrize("successes,n", [(3, 2), (-1, 4), (1, -1)])
def test_wilson_interval_refuses_impossible_counts(successes: int, n: int) -> None:
    with pytest.raises(StatsError) as info:
        wilson_interval(successes, n)
    assert isinstance(info.value, ValueError) and isinstance(info.value, LabkitError)


def test_pass_hat_k_hand_computed() -> None:
    # A 3/5, B 5/5: k=2: (C(3,2)/C(5,2) + 1)/2 = (3/10 + 1)/2 = 0.65; k=3: (1/10 + 1)/2 = 0.55
    per_task = {"A": (3, 5), "B": (5, 5)}
    assert pass_hat_k(per_task, 1) == pytest.approx(0.8)
    assert pass_hat_k(per_task, 2) == pytest.approx(0.65)
    assert pass_hat_k(per_task, 3) == pytest.approx(0.55)
    with pytest.raises(StatsError):
        pass_hat_k(per_task, 6)
    # one task: k=2 of 4/5 is C(4,2)/C(5,2) = 6/10; of 2/6 it is C(2,2)/C(6,2) = 1/15; k=3 of 2/6 is 0
    assert pass_hat_k({"t": (4, 5)}, 2) == pytest.approx(6 / 10)
    assert pass_hat_k({"t": (2, 6)}, 2) == pytest.approx(1 / 15)
    assert pass_hat_k({"t": (2, 6)}, 3) == 0.0


@pytest.mark.parametrize("per_task,k", [({"t": (1, 2)}, 0), ({"t": (1, 2)}, 3), ({"t": (3, 2)}, 1), ({}, 1)])
def test_pass_hat_k_refuses_impossible_input(per_task: dict[str, tuple[int, int]], k: int) -> None:
    with pytest.raises(StatsError):
        pass_hat_k(per_task, k)


def test_sign_test_hand_computed() -> None:
    # p = min(1, 2·Σ_{i<=min(w,l)} C(m,i) / 2^m), m = w + l
    assert sign_test_p(0, 5) == pytest.approx(2 * 1 / 32)  # 0.0625: even 5 of 5 is not significant
    assert sign_test_p(6, 0) == pytest.approx(2 * 1 / 64)  # 0.03125
    assert sign_test_p(1, 7) == pytest.approx(2 * (1 + 8) / 256)  # 0.0703125
    assert sign_test_p(8, 2) == pytest.approx(2 * (1 + 10 + 45) / 1024)  # 0.109375
    assert sign_test_p(4, 6) == pytest.approx(2 * (1 + 10 + 45 + 120 + 210) / 1024)  # 0.75390625
    assert sign_test_p(3, 3) == 1.0  # 2·(1+6+15+20)/64 = 1.3125, capped at 1
    assert sign_test_p(0, 0) == 1.0
    assert sign_test_p(7, 1) == sign_test_p(1, 7)  # two-sided: symmetric
    with pytest.raises(StatsError):
        sign_test_p(-1, 2)


def test_paired_test_over_tasks_hand_computed() -> None:
    # rates per task (A vs B): t1 5/5 vs 0/5 A; t2 0/5 vs 0/5 tie; t3 3/5 vs 1/5 A; t4 2/5 vs 4/5 B;
    # t5 1/2 vs 2/4 tie (equal rates with different n)
    a = {"t1": (5, 5), "t2": (0, 5), "t3": (3, 5), "t4": (2, 5), "t5": (1, 2)}
    b = {"t1": (0, 5), "t2": (0, 5), "t3": (1, 5), "t4": (4, 5), "t5": (2, 4)}
    result = paired_test(a, b, names=("machine", "prompt"))
    # 2 wins, 1 loss: m = 3, tail = C(3,0) + C(3,1) = 4, p = min(1, 8/8) = 1
    assert result == PairedTest("machine", "prompt", 5, 2, 1, 2, 1.0)
    assert "2 task(s) better, 1 worse, 2 tied (of 5)" in result.describe()
    # six tasks all for A: p = 2/64
    six = {f"t{i}": (1, 1) for i in range(6)}
    none = {f"t{i}": (0, 1) for i in range(6)}
    assert paired_test(six, none).p_value == pytest.approx(0.03125)


def test_paired_test_refuses_different_task_sets_and_bad_counts() -> None:
    with pytest.raises(StatsError, match="different tasks"):
        paired_test({"t1": (1, 1)}, {"t2": (1, 1)})
    with pytest.raises(StatsError, match="not \\(successes"):
        paired_test({"t1": (2, 1)}, {"t1": (1, 1)})


def test_verdict_words_follow_the_numbers_whichever_way_they_come_out() -> None:
    from labkit.compare.stats import verdict_words

    assert verdict_words(12, 0, 0.0005, ("machine", "prompt")) == "machine did better, beyond chance (p < 0.05)"
    assert verdict_words(4, 9, 0.27, ("model", "rule")).endswith("the point estimate favours rule")
    assert verdict_words(4, 9, 0.27, ("model", "rule")).startswith("no evidence either way")
    assert "level" in verdict_words(3, 3, 1.0)


def test_a_stored_p_keeps_six_decimals_and_is_never_zero() -> None:
    assert stored_p(0.34375) == 0.34375 and stored_p(0.0001220703125) == 0.000122
    tiny = sign_test_p(51, 6)  # definition_edit on HumanEval: far below six decimals
    assert 0 < tiny < 1e-6 and stored_p(tiny) == float(f"{tiny:.3g}") > 0
