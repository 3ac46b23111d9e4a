"""The dialog ablation: each declared pair differs in one feature, and the table counts what it buys."""

from __future__ import annotations

from pathlib import Path

from labkit.dialog import history
from labkit.dialog.ablation import ablation_rows, ablation_summary, ablation_table, dev_ablation
from labkit.dialog.arms import ABLATIONS, BY_NAME
from labkit.dialog.features import ALL, PARTS
from labkit.dialog.measure import PARTS as MEASURE_PARTS
from labkit.dialog.measure import Score
from labkit.dialog.simulate import load_scenarios
from labkit.dialog.users import load_user_scripts

DATA = Path(__file__).resolve().parents[1] / "data" / "dialog"


def test_every_feature_and_part_has_one_pair_that_differs_in_it_alone() -> None:
    assert sorted(a.feature for a in ABLATIONS) == sorted(ALL | {p.name for p in PARTS})
    for a in ABLATIONS:
        with_arm, without_arm = BY_NAME[a.with_arm], BY_NAME[a.without_arm]
        differs = (with_arm.features ^ without_arm.features) | (with_arm.without ^ without_arm.without)
        assert differs == {a.feature}, a
    for feature, with_name, without_name in history.ABLATIONS:  # the recorded pairs too
        with_arm, without_arm = history.recorded_arm(with_name), history.recorded_arm(without_name)
        differs = (with_arm.features ^ without_arm.features) | (with_arm.without ^ without_arm.without)
        assert differs == {feature}, feature


def _score(user: str, arm: str, adhered: bool) -> Score:
    parts = {p: adhered for p in MEASURE_PARTS}
    return Score(user, "support", arm, "dev", "filed", "filed" if adhered else "issue", parts)


def test_a_row_counts_users_both_arms_ran_pairs_them_and_lists_the_parts_that_moved() -> None:
    recording = {"machine_plus": [_score("u1", "machine_plus", True), _score("u2", "machine_plus", True),
                                  _score("u3", "machine_plus", False), _score("u4", "machine_plus", True)],
                 "machine_plus_no_step_example": [_score("u1", "x", False), _score("u2", "x", True),
                                                  _score("u3", "x", True)]}  # u4 not run: left out
    (row,) = ablation_rows([recording])
    assert (row["feature"], row["users"], row["with"], row["without"], row["buys"]) == ("step_example", 3, 2, 2, 0)
    assert (row["only_with"], row["only_without"], row["p_value"]) == (1, 1, 1.0)
    assert row["parts"] == {p: 0 for p in MEASURE_PARTS}
    table = ablation_table([row])
    assert "| `step_example` | machine_plus / machine_plus_no_step_example | 3 | 2 | 2 | +0 | 1 / 1 | 1 | none |" \
        in table


def test_a_pair_is_read_from_the_first_recording_that_holds_both_arms() -> None:
    first = {"machine_plus": [_score("u1", "machine_plus", True)]}  # no ablation arm here
    second = {"machine_plus": [_score("u1", "m", True)], "machine_plus_no_carry_over": [_score("u1", "x", False)]}
    third = {"machine_plus": [_score("u1", "m", False)], "machine_plus_no_carry_over": [_score("u1", "x", True)]}
    (row,) = ablation_rows([first, second, third])
    assert (row["feature"], row["buys"], row["parts"]["end_step"]) == ("carry_over", 1, 1)
    assert "end_step +1" in ablation_table([row])
    assert ablation_summary([row]) == ("Of 1 features and rules, 1 bought adherence: carry_over (+1 of 1); 0 cost: "
                                       "none; 0 bought nothing net. Beyond chance (exact sign test p < 0.05): none.")


def test_the_committed_dev_recordings_hold_every_pair() -> None:
    rows = dev_ablation(DATA, "qwen2.5-coder-1.5b", load_scenarios(DATA), load_user_scripts(DATA / "users"))
    # the recordings were made under the design rounds' names: every recorded pair is read
    assert [r["feature"] for r in rows] == [feature for feature, _, _ in history.ABLATIONS]
    assert all(r["users"] >= 6 for r in rows)


def test_feature_by_trait_pairs_each_trait_s_users_alone() -> None:
    from labkit.dialog.ablation import ablation_by_trait, feature_trait_table

    recording = {"machine": [_score("u1", "machine", True), _score("u2", "machine", True),
                             _score("u3", "machine", False)],
                 "machine_without_carry_over": [_score("u1", "x", False), _score("u2", "x", True),
                                                _score("u3", "x", True)]}
    traits = {"u1": ("terse", "typos"), "u2": ("terse",), "u3": ("typos",)}
    rows = ablation_by_trait([recording], traits)
    assert [(r["trait"], r["feature"], r["users"], r["with"], r["without"], r["buys"]) for r in rows] == [
        ("terse", "carry_over", 2, 2, 1, 1), ("typos", "carry_over", 2, 1, 1, 0)]
    assert ablation_by_trait([recording], {}) == []  # hand-written users have no traits
    table = feature_trait_table(rows)
    assert table.splitlines()[0] == "| feature | terse | typos |"
    assert "| `carry_over` | +1 (2/1 of 2) | +0 (1/1 of 2) |" in table
