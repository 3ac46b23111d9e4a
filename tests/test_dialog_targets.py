"""`labkit.dialog.targets`: the targets judged on the committed test recording, and on made-up arms at the edges."""

from __future__ import annotations

from pathlib import Path

from labkit.dialog.measure import PARTS, Score
from labkit.dialog.rescore import counts, score_runs
from labkit.dialog.simulate import load_scenarios
from labkit.dialog.targets import check_targets
from labkit.dialog.users import load_user_scripts

DATA = Path(__file__).resolve().parents[1] / "data" / "dialog"
QWEN = "qwen2.5-coder-1.5b"


def _score(user: str, arm: str, adhered: bool, *, invented: bool = False, false: bool = False) -> Score:
    parts = {part: True for part in PARTS} | ({"values": False} if not adhered else {})
    parts |= {"no_invented": False} if invented else {}
    return Score(user, "support", arm, "test", "done", "done", parts, false_completion=false)


def test_the_targets_of_the_first_candidate_on_the_test_users() -> None:
    scored = score_runs(DATA / "runs_test", load_scenarios(DATA), load_user_scripts(DATA / "users"))[QWEN]
    targets = check_targets(scored, counts(DATA / "runs_test" / QWEN), "machine_plus_next")
    assert [t.met for t in targets] == [False, True, True, True, True, False]
    assert targets[0].what == "machine_plus_next adherence at least 60% (14/30)"
    assert targets[5].what == "no invented value (in 1 conversation(s))" and targets[5].line().startswith("- MISSED")


def test_the_targets_of_both_candidates_on_the_test_users() -> None:
    scored = score_runs(DATA / "runs_test", load_scenarios(DATA), load_user_scripts(DATA / "users"))[QWEN]
    targets = check_targets(scored, counts(DATA / "runs_test" / QWEN), "machine_plus_next2")
    assert [t.met for t in targets] == [False, True, True, True, True, True]
    assert targets[0].what == "machine_plus_next2 adherence at least 60% (15/30)"
    assert targets[5].what == "no invented value (in 0 conversation(s))" and targets[5].line().startswith("- met")


def test_the_targets_of_the_splitting_rounds_on_the_test_users() -> None:
    scored = score_runs(DATA / "runs_test", load_scenarios(DATA), load_user_scripts(DATA / "users"))[QWEN]
    targets = check_targets(scored, counts(DATA / "runs_test" / QWEN), "machine_plus_next5")
    assert [t.met for t in targets] == [False, True, True, True, True, True]
    assert targets[0].what == "machine_plus_next5 adherence at least 60% (16/30)"


def test_the_targets_of_the_tenth_round_on_the_test_users() -> None:
    # chosen on the dev users (18/20 against split_cut's 17/20) and recorded on the test users: one short of 60%
    scored = score_runs(DATA / "runs_test", load_scenarios(DATA), load_user_scripts(DATA / "users"))[QWEN]
    targets = check_targets(scored, counts(DATA / "runs_test" / QWEN), "machine_plus_next10")
    assert [t.met for t in targets] == [False, True, True, True, True, True]
    assert targets[0].what == "machine_plus_next10 adherence at least 60% (17/30)"


def test_each_target_is_met_exactly_at_its_bound() -> None:
    users = [f"u{i:02d}" for i in range(10)]
    arm = [_score(u, "m", i < 6) for i, u in enumerate(users)]  # 6/10: the 60% bound itself
    base = [_score(u, "b", i < 3) for i, u in enumerate(users)]  # 3/10: exactly half
    met = check_targets({"m": arm, "b": base}, {"m": {"calls_per_message": 1.10}}, "m", "b")
    assert [t.met for t in met] == [True, True, False, True, True, True]  # 3 better, 0 worse: p = 0.25
    worse = [*arm[:-1], _score("u09", "m", False, invented=True, false=True)]
    more_calls = check_targets({"m": worse, "b": [*base[:-1], _score("u09", "b", True)]},
                               {"m": {"calls_per_message": 1.11}}, "m", "b")
    assert [t.met for t in more_calls] == [True, False, False, False, False, False]
