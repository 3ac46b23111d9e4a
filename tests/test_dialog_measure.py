"""The measure a do-nothing bot cannot pass: value matching, the five parts, the floors, the recordings."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from labkit.compare.runs import read_rows
from labkit.dialog import DialogBot, PromptOnlyBot
from labkit.dialog.floors import CopiesExamples, NeverMoves, floor_runs
from labkit.dialog.measure import (
    PARTS,
    asks_for,
    compare_arms,
    false_completions,
    normalise,
    score,
    summarize_scores,
    value_misses,
)
from labkit.dialog.rescore import report, score_runs
from labkit.dialog.simulate import load_scenarios, run_user
from labkit.dialog.users import ExpectedValue, check_users, load_user_scripts
from labkit.llm.fake import ScriptedBackend

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data" / "dialog"
SCENARIOS = load_scenarios(DATA)
USERS = load_user_scripts(DATA / "users")
BY_NAME = {u.name: u for u in USERS}


def answer(message: str, signal: str, results: dict | None = None) -> str:
    return json.dumps({"message": message, "signal": signal, "results": results or {}, "summary": ""})


# ----------------------------------------------------------------------------- matching
def test_values_match_normalised_exactly_not_as_substrings() -> None:
    me = ExpectedValue((("me", "just me"),), False)
    assert value_misses(me, "  Just   ME. ") == ""
    assert value_misses(me, "my team")  # "me" is contained, but it is not the value
    assert value_misses(me, None) == "not set"
    june = ExpectedValue((("July",),), False)
    assert value_misses(june, "not June but July")
    assert normalise("The end of March!") == "the end of march"


def test_list_values_match_item_by_item() -> None:
    must = ExpectedValue((("import PDF invoices", "PDF import"), ("export a CSV file",)), True)
    assert value_misses(must, ["pdf import", "Export a CSV file."]) == ""
    assert "lacks export a CSV file" in value_misses(must, ["PDF import"])
    assert "unexpected" in value_misses(must, ["PDF import", "export a CSV file", "dark mode"])
    assert value_misses(must, ["It must import PDF invoices and export a CSV file"])


def test_asks_for_matches_whole_words() -> None:
    assert asks_for("Who will use it?", ["who"])
    assert not asks_for("The whole thing is fine.", ["who"])
    assert asks_for("What is your e-mail address?", ["e-mail"])


# ----------------------------------------------------------------------------- the parts
def _perfect_s01() -> list[str]:
    return [answer("Which product is it: app, website, billing or other?", "next",
                   {"issue": "The app crashes every time I open my profile page."}),
            answer("How badly does it block you: low, medium or high?", "next", {"product": "app"}),
            answer("Which email address can we reach you at?", "next", {"severity": "high"}),
            answer("Shall I file the ticket?", "next", {"email": "anna@example.com"}),
            answer("Filing it.", "confirm")]


def test_a_bot_that_follows_the_script_adheres() -> None:
    user, scenario = BY_NAME["s01_happy"], SCENARIOS["support"]
    bot = DialogBot(scenario, ScriptedBackend(_perfect_s01()), clock=lambda: 0.0)
    run_user(bot, user, "machine")
    result = score(bot.events, scenario, user, "machine")
    assert result.adhered and result.misses == [] and not result.false_completion


def test_each_part_fails_on_its_own() -> None:
    user, scenario = BY_NAME["s01_happy"], SCENARIOS["support"]
    answers = _perfect_s01()
    answers[0] = answer("Which product is it?", "next", {"issue": "The app crashes."})  # wrong value
    answers[2] = answer("OK.", "next", {"severity": "high"})  # asks nothing in contact
    bot = DialogBot(scenario, ScriptedBackend(answers), clock=lambda: 0.0)
    run_user(bot, user, "machine")
    result = score(bot.events, scenario, user, "machine")
    assert result.parts == {"end_step": True, "values": False, "no_invented": True, "moves": True, "asks": False}
    assert any(m.startswith("did not ask: turn 3 in contact") for m in result.misses)


def test_prompt_only_jumps_and_inventions_count() -> None:
    user, scenario = BY_NAME["s08_stops_midway"], SCENARIOS["support"]
    answers = [answer("Severity?", "severity", {"issue": "Search on the website returns no results for any word"}),
               answer("Email?", "contact", {"product": "website", "email": "x@example.com"}),
               answer("Email?", "contact", {"severity": "medium"})]
    bot = PromptOnlyBot(scenario, ScriptedBackend(answers), clock=lambda: 0.0)
    run_user(bot, user, "prompt_only")
    result = score(bot.events, scenario, user, "prompt_only")
    assert result.end_step == "contact" and result.parts["end_step"]
    assert not result.parts["moves"] and "issue -> severity" in result.forbidden_moves[0]
    assert result.invented == ("email",) and not result.parts["no_invented"]


def test_a_cancel_the_user_did_not_ask_for_is_a_false_completion() -> None:
    user, scenario = BY_NAME["s01_happy"], SCENARIOS["support"]
    bot = DialogBot(scenario, ScriptedBackend([answer("Bye.", "cancel")]), clock=lambda: 0.0)
    run_user(bot, user, "machine")
    result = score(bot.events, scenario, user, "machine")
    assert result.cancelled and result.false_completion and false_completions([result]) == 1


# ----------------------------------------------------------------------------- floors
@pytest.mark.parametrize("floor", [NeverMoves, CopiesExamples])
def test_floor_bots_score_zero_on_every_user(floor: type) -> None:
    runs = floor_runs(floor, SCENARIOS, USERS)
    scores = [s for s, _ in runs]
    assert len(scores) == 50
    assert [s.user for s in scores if s.adhered] == []
    assert summarize_scores(scores)["adhered"]["count"] == 0
    if floor is NeverMoves:  # it fails the users who should stay put through the asks part
        stay_put = [s for s in scores if s.user in ("a07_vague_goal", "s07_no_issue")]
        assert all(s.parts["end_step"] and s.parts["values"] and not s.parts["asks"] for s in stay_put)
        # the first recording's legacy check passed it on exactly those two: the do-nothing floor of 2/22
        assert sorted(r.user for _, r in runs if r.adhered) == ["a07_vague_goal", "s07_no_issue"]
    else:  # it moves with example phrases: invented or wrong values everywhere
        assert all(not (s.parts["values"] and s.parts["no_invented"]) for s in scores)


# ----------------------------------------------------------------------------- users
def test_users_are_25_per_scenario_split_10_dev_15_test() -> None:
    check_users(USERS, SCENARIOS)
    assert Counter((u.scenario, u.split) for u in USERS) == {("analyst", "dev"): 10, ("analyst", "test"): 15,
                                                             ("support", "dev"): 10, ("support", "test"): 15}
    assert all(u.expect_values is not None and u.expect_step for u in USERS)
    several = ["a12_goal_and_users", "a15_constraints_and_deadline", "a16_everything_at_once",
               "a24_users_and_must_haves", "s12_issue_names_product", "s13_all_at_once", "s16_email_first"]
    corrections = ["a03_correction", "a13_correct_users", "a17_correct_must_haves", "a18_correct_goal_in_review",
                   "a25_deadline_corrected_at_once", "s05_email_correction", "s14_correct_severity",
                   "s18_product_corrected_at_once", "s23_corrects_then_waits"]
    assert set(several + corrections) <= set(BY_NAME)
    assert {BY_NAME[n].split for n in several} == {BY_NAME[n].split for n in corrections} == {"dev", "test"}


# ----------------------------------------------------------------------------- the recordings
def test_recordings_rescore_from_their_logs() -> None:
    scored = score_runs(DATA / "runs", SCENARIOS, USERS)
    assert set(scored) == {"gemma3-270m", "qwen2.5-coder-1.5b"}
    for model, arms in scored.items():
        recorded = read_rows(DATA / "runs" / model / "runs.jsonl")
        ends = {(r["arm"], r["task"]): r["end_step"] for r in recorded}
        for arm, scores in arms.items():
            assert len(scores) == 22
            # the log-read trace agrees with the end steps recorded by the live run
            assert all(s.end_step == ends[(arm, s.user)] for s in scores), (model, arm)
    out = report(scored)
    adhered = {key: row["adhered"]["count"] for key, row in out["summaries"].items()}
    assert adhered == {("gemma3-270m", "machine"): 0, ("gemma3-270m", "prompt_only"): 0,
                       ("qwen2.5-coder-1.5b", "machine"): 0, ("qwen2.5-coder-1.5b", "prompt_only"): 1}
    falses = {key: row["false_completions"]["count"] for key, row in out["summaries"].items()}
    assert falses[("gemma3-270m", "machine")] == 3 and falses[("qwen2.5-coder-1.5b", "machine")] == 0
    assert all(row["moves"]["count"] == 22 for (m, arm), row in out["summaries"].items() if arm == "machine")
    assert out["table"].count("\n") == 5 and "| gemma3-270m | machine | 22 |" in out["table"]
    tests = compare_arms(scored["qwen2.5-coder-1.5b"]["machine"], scored["qwen2.5-coder-1.5b"]["prompt_only"])
    assert set(tests) == {*PARTS, "adhered"} and tests["moves"].p_value < 0.001


def test_rescoring_can_keep_one_split() -> None:
    dev = score_runs(DATA / "runs", SCENARIOS, USERS, split="dev")
    assert {len(s) for arms in dev.values() for s in arms.values()} == {12}
