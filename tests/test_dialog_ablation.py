"""The dialog ablation: each declared pair differs in one feature, and the table counts what it buys."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path
from typing import Any

from labkit.dialog import history
from labkit.dialog.ablation import (
    ablation_rows,
    ablation_summary,
    ablation_table,
    dev_ablation,
    round_rows,
    round_summary,
    round_table,
)
from labkit.dialog.arms import ABLATIONS, BY_NAME
from labkit.dialog.features import ALL, PARTS
from labkit.dialog.measure import PARTS as MEASURE_PARTS
from labkit.dialog.measure import Score
from labkit.dialog.rescore import score_folder
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


def test_a_design_round_s_pair_is_shown_by_the_feature_it_added_when_asked() -> None:
    recording = {"machine_plus_next": [_score("u1", "a", True), _score("u2", "a", True)],
                 "machine_plus": [_score("u1", "b", False), _score("u2", "b", True)]}
    (row,) = ablation_rows([recording])
    assert "| `results_first` | machine_plus_next / machine_plus |" in ablation_table([row])  # as recorded
    assert "| `results_first` | + results_first / machine_plus | 2 | 2 | 1 | +1 |" in ablation_table(
        [row], name=history.label)


def test_the_rounds_are_read_in_order_from_the_dev_and_test_recordings() -> None:
    scenarios, users = load_scenarios(DATA), load_user_scripts(DATA / "users")
    rows = round_rows(DATA, "qwen2.5-coder-1.5b", scenarios, users)
    assert [r["feature"] for r in rows] == ["", *(r.feature for r in history.ROUNDS)]
    assert rows[0]["arm"] == "machine_plus" and rows[0]["only_this"] is None
    assert rows[-1]["today"] == "machine" and rows[0]["today"] is None  # the last round runs every feature
    for before, row in pairwise(rows):  # the same dev users: the pair's wins are the difference
        assert row["dev_of"] == before["dev_of"] == 20
        assert row["only_this"] - row["only_before"] == row["dev"] - before["dev"]
    test = score_folder(DATA / "runs_test" / "qwen2.5-coder-1.5b", scenarios, users)
    assert [r["arm"] for r in rows if r["test"] is not None] == [a for a in test if a.startswith("machine_plus")]
    assert all(r["test"] == sum(s.adhered for s in test[r["arm"]]) for r in rows if r["test"] is not None)
    table = round_table(rows)
    assert table.count("\n") == len(rows) + 1 and "machine_plus_next" not in table
    assert "machine_plus_next" not in round_summary(rows)


def _round(number: int, feature: str, dev: int, wins: tuple[int, int] | None, test: int | None) -> dict[str, Any]:
    """One row as :func:`round_rows` gives it (``wins``: only this / only the round before; None for the start)."""
    return {"round": number, "feature": feature, "arm": f"arm{number}", "label": f"+ {feature}" if feature else "start",
            "today": "machine" if number == 4 else None, "dev": dev, "dev_of": 20,
            "only_this": wins[0] if wins else None, "only_before": wins[1] if wins else None,
            "test": test, "test_of": 30 if test is not None else None}


def test_the_rounds_table_and_its_sentence_say_what_the_rows_hold() -> None:
    rows = [_round(0, "", 10, None, 5), _round(1, "a", 12, (2, 0), 12), _round(2, "b", 11, (0, 1), None),
            _round(3, "c", 11, (0, 0), None), _round(4, "d", 13, (2, 0), 14)]  # c: a tie is no loss
    table = round_table(rows).splitlines()
    assert table[2] == "| start | none: `start`, where the rounds start | 10/20 | — | 5/30 |"
    assert table[4] == "| 2 | `b` | 11/20 | 0 / 1 | not recorded |"
    assert round_summary(rows) == (
        "Over 4 rounds, each adding one feature, the dev split's adherence went from 10/20 to 13/20; 1 round(s) lost "
        "more dev conversations than they won against the round before (+ b). 2 of the rounds were recorded on the "
        "test users too: from 5/30 (start) to 14/30 (+ d), the largest step between two of them with + a (5 → 12). "
        "The last round's features are today's `machine` arm.")


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
