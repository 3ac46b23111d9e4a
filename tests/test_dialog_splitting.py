"""``split_values``: a free-text value that mixes in another variable's part is refused once, and re-asked.

Scripted answers only (no model): each test says which answer the check is for. The dev users' own
failures (a12, a15, s13 under ``machine_plus_next2``) are the cases.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from labkit.dialog import DialogBot, parse_scenario
from labkit.dialog.events import ModelCalled, ValuesCut
from labkit.dialog.history import recorded_arm
from labkit.dialog.scenario import ScenarioError
from labkit.dialog.simulate import load_scenarios
from labkit.dialog.splitting import cued, cut_parts, foreign_parts, parts, split_reasks
from labkit.dialog.users import load_user_scripts
from labkit.llm.fake import ScriptedBackend
from tests.test_dialog_features import MINI, answer  # the same mini scenario and answer writer

DATA = Path(__file__).resolve().parents[1] / "data" / "dialog"
SCENARIOS = load_scenarios(DATA)
ANALYST, SUPPORT = SCENARIOS["analyst"], SCENARIOS["support"]


def test_a_value_is_cut_into_parts_at_commas_sentence_ends_and_and() -> None:
    assert parts("a tool that plans my running training, just for me.") == [
        "a tool that plans my running training", "just for me"]
    assert parts(["it must use Python and be done by Friday", "free; offline"]) == [
        "it must use Python", "be done by Friday", "free", "offline"]
    assert parts("write to sam@example.com") == ["write to sam@example.com"]  # an address keeps its dots


def test_cues_match_whole_words_and_an_at_sign_anywhere() -> None:
    cues = {"users": ["for me"], "deadline": ["Friday"], "email": ["@"]}
    assert cued("just for me", cues) == ["users"]
    assert cued("forme", cues) == [] and cued("fridays off", cues) == []
    assert cued("mail me at jo@example.com by friday", cues) == ["deadline", "email"]


def test_only_a_later_part_with_one_other_variables_cue_is_foreign() -> None:
    assert foreign_parts({"goal": "a tool that plans my running training, just for me"}, ANALYST.cues) == {
        "goal": [("just for me", "users")]}
    assert foreign_parts({"constraints": ["it must use Python", "it must be done by Friday"]}, ANALYST.cues) == {
        "constraints": [("it must be done by Friday", "deadline")]}
    issue = "my invoice shows the wrong VAT, it is a billing problem, medium urgency, write to me at ivo@example.com"
    assert foreign_parts({"issue": issue}, SUPPORT.cues) == {"issue": [
        ("it is a billing problem", "product"), ("medium urgency", "severity"),
        ("write to me at ivo@example.com", "email")]}
    # the first part is the answer to the question asked, even when it names another variable
    assert foreign_parts({"issue": "the app logs me out every few minutes"}, SUPPORT.cues) == {}
    # a part with its own variable's cue too, or two other variables' cues, is left alone
    assert foreign_parts({"users": "my team, only me on Friday"}, ANALYST.cues) == {}
    assert foreign_parts({"goal": "a planner, for me by Friday"}, ANALYST.cues) == {}
    assert foreign_parts({"severity": "high", "n": 3}, SUPPORT.cues) == {}  # enums and numbers are not cut


def test_no_dev_users_expected_value_is_foreign() -> None:
    """The cues were written from the dev users: none of their accepted phrasings would be refused."""
    checked = 0
    for user in load_user_scripts(DATA / "users", "dev"):
        for name, expected in (user.expect_values or {}).items():
            value = [options[0] for options in expected.items] if expected.is_list else list(expected.items[0])
            for item in value if not expected.is_list else [value]:
                assert foreign_parts({name: item}, SCENARIOS[user.scenario].cues) == {}, (user.name, name, item)
                checked += 1
    assert checked >= 60


def test_a_mixed_value_is_reasked_once_naming_each_part_and_whose_it_is() -> None:
    mixed = answer("Nice. Who will use it?", "next", {"goal": "a tool that plans my running training, just for me"})
    split = answer("Nice.", "next", {"goal": "a tool that plans my running training", "users": "just me"})
    bot = DialogBot(ANALYST, ScriptedBackend([mixed, split]), features={"split_values", "vars_memory"},
                    clock=lambda: 0.0)
    bot.respond("A tool that plans my running training, just for me.")
    calls = [e for e in bot.events if isinstance(e, ModelCalled)]
    assert [c.violation for c in calls] == ["mixed_values", ""]
    assert "goal also holds 'just for me' (that is users)" in calls[0].detail
    assert "just for me' (that is users)" in calls[1].prompt
    assert bot.state.variables["goal"] == "a tool that plans my running training"
    assert bot.state.variables["users"] == "just me" and bot.state.status == "must_haves"


def test_a_second_mixed_answer_is_kept_as_the_model_wrote_it() -> None:
    """The check only refuses, once: it never edits a value, and the turn is not lost to it."""
    mixed = answer("Nice.", "next", {"goal": "a tool that plans my running training, just for me"})
    bot = DialogBot(ANALYST, ScriptedBackend([mixed, mixed]), features={"split_values"}, clock=lambda: 0.0)
    bot.respond("A tool that plans my running training, just for me.")
    assert bot.state.variables["goal"] == "a tool that plans my running training, just for me"
    assert bot.state.status == "users"
    without = DialogBot(ANALYST, ScriptedBackend([mixed]), features={"vars_memory"}, clock=lambda: 0.0)
    without.respond("A tool that plans my running training, just for me.")
    assert [e.violation for e in without.events if isinstance(e, ModelCalled)] == [""]


def test_the_third_candidate_is_its_own_arm_on_top_of_the_second() -> None:
    assert recorded_arm("machine_plus_next3").features == recorded_arm("machine_plus_next2").features | {"split_values"}
    assert "split_values" not in recorded_arm("machine_plus_next2").features


@pytest.mark.parametrize(("extra", "needle"), [
    ("cues: [red]\n", "'cues' must be a mapping"),
    ("cues: {size: [big]}\n", "'cues' names unknown variable 'size'"),
    ("cues: {colour: red}\n", "the cues of 'colour' must be a non-empty list"),
    ("cues: {colour: []}\n", "the cues of 'colour' must be a non-empty list"),
    ("cues: {colour: ['']}\n", "the cues of 'colour' must be a non-empty list"),
])
def test_bad_cues_name_the_place(extra: str, needle: str) -> None:
    with pytest.raises(ScenarioError) as err:
        parse_scenario(MINI + extra, "mini.yaml")
    assert needle in str(err.value) and "mini.yaml:" in str(err.value)
    assert parse_scenario(MINI + "cues: {colour: [red, blue]}\n", "mini.yaml").cues == {"colour": ("red", "blue")}


def test_split_reasks_says_whether_the_reask_wrote_the_same_results() -> None:
    mixed = answer("Nice.", "next", {"goal": "a tool that plans my running training, just for me"})
    split = answer("Nice.", "next", {"goal": "a tool that plans my running training", "users": "just me"})
    for second, same in ((mixed, True), (split, False)):
        bot = DialogBot(ANALYST, ScriptedBackend([mixed, second]), features={"split_values", "vars_memory"},
                        clock=lambda: 0.0)
        bot.respond("A tool that plans my running training, just for me.")
        assert split_reasks(bot.events) == [(1, "goal", same)]
    plain = DialogBot(ANALYST, ScriptedBackend([split]), features={"split_values", "vars_memory"}, clock=lambda: 0.0)
    plain.respond("A tool that plans my running training, just for me.")
    assert split_reasks(plain.events) == []


def test_split_required_makes_the_reasks_grammar_write_the_named_field_first() -> None:
    mixed = answer("Nice.", "next", {"goal": "a tool that plans my running training, just for me"})
    split = answer("Nice.", "next", {"users": "me", "goal": "a tool that plans my running training"})
    backend = ScriptedBackend([mixed, split])
    bot = DialogBot(ANALYST, backend, features={"split_values", "split_required", "vars_memory", "results_grammar"},
                    clock=lambda: 0.0)
    bot.respond("A tool that plans my running training, just for me.")
    first, reask = (r.schema for r in backend.requests)
    forward = next(a for a in reask["oneOf"] if a["properties"]["signal"] == {"const": "next"})
    assert next(iter(forward["properties"]["results"]["properties"])) == "users"
    assert "users" in forward["properties"]["results"]["required"]
    assert forward["properties"]["results"]["properties"]["users"]["minLength"] == 1
    before = next(a for a in first["oneOf"] if a["properties"]["signal"] == {"const": "next"})
    assert "users" not in before["properties"]["results"]["required"]
    assert bot.state.variables["users"] == "me" and bot.state.status == "must_haves"
    # without split_required the re-ask's grammar is the first call's
    backend = ScriptedBackend([mixed, split])
    DialogBot(ANALYST, backend, features={"split_values", "vars_memory", "results_grammar"},
              clock=lambda: 0.0).respond("A tool that plans my running training, just for me.")
    assert backend.requests[0].schema == backend.requests[1].schema


def test_the_fourth_candidate_is_its_own_arm_on_top_of_the_third() -> None:
    before = recorded_arm("machine_plus_next3").features
    assert recorded_arm("machine_plus_next4").features == before | {"split_required"}


def test_split_cut_cuts_the_parts_out_at_once_when_the_other_variable_is_known() -> None:
    """No re-ask where asking cannot help: the users are known, so the goal's ', just for me' is cut by code,
    and the log says what was cut and what the model wrote."""
    mixed = answer("Nice.", "next", {"users": "me", "goal": "a tool that plans my running training, just for me"})
    bot = DialogBot(ANALYST, ScriptedBackend([mixed]), features={"split_values", "split_cut", "vars_memory"},
                    clock=lambda: 0.0)
    bot.respond("A tool that plans my running training, just for me.")
    assert bot.state.variables["goal"] == "a tool that plans my running training"
    assert bot.state.variables["users"] == "me"
    (cut,) = [e for e in bot.events if isinstance(e, ValuesCut)]
    assert cut.cut == {"goal": ["just for me"]} and cut.written["goal"].endswith("just for me")


def test_split_cut_keeps_the_cut_answer_and_asks_only_for_the_named_values() -> None:
    issue = "my invoice shows the wrong VAT, it is a billing problem, medium urgency, write to me at ivo@example.com"
    mixed = answer("Noted.", "next", {"issue": issue})
    # the second call's own move, message and issue are not taken: only the values named in the refusal
    second = answer("What else?", "stay", {"product": "billing", "severity": "medium", "email": "ivo@example.com",
                                           "issue": "something else"})
    features = {"split_values", "split_required", "split_cut", "vars_memory", "results_grammar"}
    backend = ScriptedBackend([mixed, second])
    bot = DialogBot(SUPPORT, backend, features=features, clock=lambda: 0.0)
    bot.respond(issue)
    assert [e.violation for e in bot.events if isinstance(e, ModelCalled)] == ["mixed_values", ""]
    assert bot.state.variables == {"issue": "my invoice shows the wrong VAT", "product": "billing",
                                   "severity": "medium", "email": "ivo@example.com"}
    assert bot.state.status == "confirm"  # the first answer's next, then the known steps skipped
    (cut,) = [e for e in bot.events if isinstance(e, ValuesCut)]
    assert cut.cut == {"issue": ["it is a billing problem", "medium urgency", "write to me at ivo@example.com"]}
    # a second call that breaks the contract loses nothing: the cut answer is kept, the named values stay unknown
    broken = DialogBot(SUPPORT, ScriptedBackend([mixed, "not json"]), features=features, clock=lambda: 0.0)
    broken.respond(issue)
    assert broken.state.variables["issue"] == "my invoice shows the wrong VAT"
    assert "email" not in broken.state.variables and broken.state.status == "product"
    # without split_cut the second answer is the turn's answer, as the model wrote it
    plain = DialogBot(SUPPORT, ScriptedBackend([mixed, second]), features={"split_values", "vars_memory"},
                      clock=lambda: 0.0)
    plain.respond(issue)
    assert plain.state.variables["issue"] == "something else" and plain.state.status == "issue"


def test_cut_parts_keeps_the_rest_as_written() -> None:
    assert cut_parts("a tool that plans my running training, just for me.", {"just for me"}) == (
        "a tool that plans my running training")
    assert cut_parts("It must build a weekly plan and track my distance, just for me", {"just for me"}) == (
        "It must build a weekly plan and track my distance")
    assert cut_parts(["it must use Python", "it must be done by Friday"], {"it must be done by Friday"}) == [
        "it must use Python"]
    assert cut_parts("It must use Python and be done by Friday.", {"be done by Friday"}) == "It must use Python"


def test_the_fifth_candidate_is_its_own_arm_on_top_of_the_fourth() -> None:
    assert recorded_arm("machine_plus_next5").features == recorded_arm("machine_plus_next4").features | {"split_cut"}
