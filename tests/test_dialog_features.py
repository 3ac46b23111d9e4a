"""The dialog machine's features and arms (issue 24, parts 2 and 3), each tested with a scripted backend.

No model runs here: every answer is scripted, so each test says exactly which answer the feature
is for. The old arms' recordings are replayed whole, byte for byte, to show that the features
changed nothing they send.
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from labkit.compare.features import Feature, FeatureTable, Part
from labkit.core.errors import LabkitError
from labkit.core.events import RunStarted, Transitioned
from labkit.core.reducer import replay
from labkit.core.store import JsonlLog, read_jsonl
from labkit.dialog import DialogBot, PromptOnlyBot, VariableChanged, load_scenario, parse_scenario, reduce_dialog
from labkit.dialog.arms import ABLATION, ARMS, NAMES, arm
from labkit.dialog.contract import Violation, differing_reask_prompt, grammar_schema, reask_prompt
from labkit.dialog.engine import NOT_UNDERSTOOD
from labkit.dialog.events import (
    BotSaid,
    CancelAnswered,
    CancelRequested,
    DialogState,
    ModelCalled,
    ValuesDropped,
)
from labkit.dialog.features import ALL, FEATURES, PARTS, checked
from labkit.dialog.floors import CopiesExamples, NeverMoves, floor_bot, floor_runs
from labkit.dialog.history import PLUS, ROUNDS, content_name, label, recorded_arm, without_rounds
from labkit.dialog.measure import score, summarize_scores
from labkit.dialog.scenario import Scenario, ScenarioError
from labkit.dialog.simulate import load_scenarios, run_user
from labkit.dialog.users import load_user_scripts
from labkit.llm.fake import ScriptedBackend

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data" / "dialog"
SCENARIOS = load_scenarios(DATA)
ANALYST, SUPPORT = SCENARIOS["analyst"], SCENARIOS["support"]
USERS = load_user_scripts(DATA / "users")
BY_NAME = {u.name: u for u in USERS}

MINI = """\
name: mini
initial: ask
steps:
  ask:
    instructions: Ask for a colour.
    results:
      colour: {type: string, description: the colour the user likes}
    signals:
      next: {to: done, needs: [colour]}
      stay: ask
  done:
    final: true
    message: Thanks.
"""


def answer(message: str, signal: str, results: dict | None = None, summary: str = "") -> str:
    return json.dumps({"message": message, "signal": signal, "results": results or {}, "summary": summary})


def bot(scenario, answers, *features: str, log=None) -> DialogBot:
    return DialogBot(scenario, ScriptedBackend(list(answers)), features=frozenset(features), clock=lambda: 0.0,
                     log=log)


# ----------------------------------------------------------------------------- declarations
def test_features_are_declared_once_and_unknown_names_are_refused() -> None:
    assert [f.name for f in FEATURES] == ["step_example", "results_grammar", "vars_memory", "cancel_confirm",
                                          "corrections", "grounded_values", "step_question", "carry_over",
                                          "differing_reask", "results_first", "more_examples", "split_values",
                                          "split_required", "split_cut", "move_cues", "correction_cues",
                                          "correction_question", "request_question",
                                          "correction_unseen"]
    assert checked(["vars_memory"]) == {"vars_memory"}
    with pytest.raises(LabkitError, match="unknown dialog machine feature") as err:
        checked(["vars_memroy"])
    assert "step_example" in err.value.hint
    with pytest.raises(LabkitError):
        DialogBot(ANALYST, ScriptedBackend([]), features={"nope"})


def test_arms_are_named_by_content_with_one_ablation_per_feature_and_part() -> None:
    assert NAMES[:4] == ("machine", "prompt_only_checked", "bare_machine", "prompt_only")
    assert arm("machine").features == ALL and arm("bare_machine").features == frozenset()
    assert arm("prompt_only_checked").checked and not arm("prompt_only").checked
    for f in FEATURES:
        assert arm(f"machine_without_{f.name}").features == ALL - {f.name}
    for part in PARTS:  # a part's ablation keeps every feature and switches the one rule off
        assert arm(f"machine_without_{part.name}").features == ALL
        assert arm(f"machine_without_{part.name}").without == {part.name}
    assert len(ABLATION) == len(ALL) + len(PARTS) + 1 and all(a.about for a in ARMS)
    assert not [n for n in NAMES if any(c.isdigit() for c in n)]  # no arm is named by a design round
    with pytest.raises(LabkitError, match="unknown dialog arm"):
        arm("machine_pluss")


def test_the_history_builds_each_recorded_arm_as_it_was_recorded() -> None:
    assert recorded_arm("machine").features == frozenset() and recorded_arm("machine_plus").features == PLUS
    assert recorded_arm("machine_plus_next").features == PLUS | {"results_first"}
    # each design round adds its one feature to the arm before it; the last round runs every feature
    assert {r.feature for r in ROUNDS} == ALL - PLUS and recorded_arm(ROUNDS[-1].name).features == ALL
    for r in ROUNDS:
        assert recorded_arm(r.name).features == recorded_arm(r.before).features | {r.feature}
        assert r.suffix.startswith("-next") and r.commit and r.added
    for f in FEATURES:
        if f.name in PLUS:
            assert recorded_arm(f"machine_plus_no_{f.name}").features == PLUS - {f.name}
    assert content_name("machine_plus_next10") == "machine" and content_name("machine") == "bare_machine"
    assert content_name("machine_plus") is None and content_name("prompt_only_checked") == "prompt_only_checked"
    with pytest.raises(LabkitError, match="no recorded dialog arm"):
        recorded_arm("machine_without_step_example")


def test_a_design_round_is_shown_by_the_feature_it_added_and_set_apart_from_the_other_arms() -> None:
    assert label("machine_plus_next3") == "+ split_values" and label(ROUNDS[-1].name) == "+ correction_unseen"
    assert label("machine_plus") == "machine_plus"
    assert label("machine_plus_no_carry_over") == "machine_plus_no_carry_over"
    assert not [r.name for r in ROUNDS if any(c.isdigit() for c in label(r.name))]  # no round number is shown
    recorded = {"machine_plus": 1, "machine_plus_next": 2, "prompt_only_checked": 3, "machine_plus_next10": 4}
    assert without_rounds(recorded) == {"machine_plus": 1, "prompt_only_checked": 3}


def test_the_old_arms_start_their_logs_as_recorded() -> None:
    for name, mode in (("machine", "machine"), ("prompt_only", "prompt_only")):
        made = recorded_arm(name).make(SUPPORT, ScriptedBackend([]), clock=lambda: 0.0)
        start = next(e for e in made.events if isinstance(e, RunStarted))
        assert set(start.params) == {"scenario", "mode", "model", "max_tokens"} and start.params["mode"] == mode
    plus = recorded_arm("machine_plus").make(SUPPORT, ScriptedBackend([]), clock=lambda: 0.0)
    start = next(e for e in plus.events if isinstance(e, RunStarted))
    assert start.params["arm"] == "machine_plus" and start.params["features"] == sorted(PLUS)
    today = arm("machine").make(SUPPORT, ScriptedBackend([]), clock=lambda: 0.0)
    start = next(e for e in today.events if isinstance(e, RunStarted))
    assert start.params["arm"] == "machine" and start.params["features"] == sorted(ALL)


@pytest.mark.parametrize("model", ["gemma3-270m", "qwen2.5-coder-1.5b"])
def test_the_old_recordings_replay_byte_for_byte(model: str, tmp_path: Path) -> None:
    from labkit.compare.runs import read_rows
    from labkit.dialog.comparison import replay

    run = DATA / "runs" / model
    assert replay(run, tmp_path / "again") == []  # every row and every event log
    rows = read_rows(run / "runs.jsonl")
    assert len(rows) == 44 and len(sorted((run / "logs").rglob("*.jsonl"))) == 44
    # the first recording's own check, kept in each row: 2/22 (270M) and 4/22 (1.5B) in both arms
    legacy = {arm: sum(not r["legacy_misses"] for r in rows if r["arm"] == arm) for arm in ("machine", "prompt_only")}
    assert legacy == ({"machine": 2, "prompt_only": 2} if model == "gemma3-270m" else {"machine": 4, "prompt_only": 4})


# ----------------------------------------------------------------------------- scenario declarations
def test_the_feature_declarations_leave_the_script_as_first_written() -> None:
    """They stand at the end of each file: the script's lines (which notebook 05 prints and cites) are unchanged."""
    import subprocess

    for name in ("analyst", "support"):
        path = DATA / name / "scenario.yaml"
        text = path.read_text(encoding="utf-8")
        head = text[:text.index("# Read only by the machine's features")]
        assert "corrections" not in head and "examples" not in head and "cancel_question" not in head
        first = subprocess.run(["git", "show", f"df4a15d:data/dialog/{name}/scenario.yaml"], cwd=ROOT,
                               capture_output=True, text=True)
        if first.returncode == 0:  # a shallow clone may lack the commit
            assert head.rstrip("\n") == first.stdout.rstrip("\n")


def test_shipped_scenarios_declare_examples_corrections_and_a_cancel_question() -> None:
    for scenario in (ANALYST, SUPPORT):
        assert scenario.corrections is not None and scenario.corrections.signal == "correct"
        assert all(s.example is not None for s in scenario.steps.values() if not s.final)
    assert "help" in SUPPORT.cancel_question and "problem" in SUPPORT.cancel_question  # the issue step's keywords


@pytest.mark.parametrize(("extra", "needle"), [
    ("examples:\n  ask: {user: hi, message: ok, signal: jump}\n", "'jump', not a signal of the step"),
    ("examples:\n  ask: {user: red, message: ok, signal: next}\n", "emits 'next' without colour"),
    ("examples:\n  ask: {user: red, message: ok, signal: next, results: {size: 3}}\n", "results.size"),
    ("examples:\n  ask: [one]\n", "example of step 'ask' must be a mapping"),
    ("examples:\n  done: {user: a, message: b, signal: next}\n", "final step 'done' has an example"),
    ("examples:\n  asks: {user: a, message: b, signal: next}\n", "unknown step 'asks'"),
    ("examples: [ask]\n", "'examples' must be a mapping"),
])
def test_a_bad_example_names_the_place(extra: str, needle: str) -> None:
    with pytest.raises(ScenarioError) as err:
        parse_scenario(MINI + extra, "mini.yaml")
    assert needle in str(err.value) and "mini.yaml:" in str(err.value)


@pytest.mark.parametrize(("extra", "needle"), [
    ("corrections: {signal: correct, fields: [size]}\n", "unknown variable(s) ['size']"),
    ("corrections: [correct]\n", "'corrections' must be a mapping"),
    ("corrections: {signal: correct, undo: yes}\n", "unknown key 'undo'"),
    ("cancel_question: [a]\n", "'cancel_question' must be a string"),
    ("corrections: {signal: next}\n", "'next' is already a signal of step(s) ['ask']"),
])
def test_bad_corrections_or_cancel_question_name_the_place(extra: str, needle: str) -> None:
    with pytest.raises(ScenarioError) as err:
        parse_scenario(MINI.replace("initial: ask\n", extra + "initial: ask\n"), "mini.yaml")
    assert needle in str(err.value) and "mini.yaml:" in str(err.value)


# ----------------------------------------------------------------------------- step_example
def test_step_example_shows_the_declared_example_only_when_on() -> None:
    plain, shown = bot(ANALYST, []), bot(ANALYST, [], "step_example")
    step = ANALYST.step("goal")
    assert "Example of a correct answer" not in plain.prompt(step)
    prompt = shown.prompt(step)
    assert "User: I want an app that reminds my family to water the plants." in prompt
    assert '"signal": "next", "results": {"goal": "an app that reminds my family to water the plants"}' in prompt
    # a step without a declared example gets one built from its schema: the signal's needs filled
    mini = parse_scenario(MINI)
    built = bot(mini, [], "step_example").prompt(mini.step("ask"))
    assert '"signal": "next", "results": {"colour": "<in the user\'s words>"}' in built


def test_no_user_file_holds_an_example_value() -> None:
    examples = [json.dumps(s.example.results).lower() for sc in (ANALYST, SUPPORT) for s in sc.steps.values()
                if s.example is not None and s.example.results and s.name not in ("product", "severity")]
    user_text = " ".join(" ".join(u.turns).lower() for u in USERS)
    for example in examples:
        for value in json.loads(example).values():
            for item in value if isinstance(value, list) else [value]:
                assert item not in user_text


# ----------------------------------------------------------------------------- more_examples
def test_more_examples_show_split_values_and_a_correction_only_when_on() -> None:
    step = SUPPORT.step("issue")
    shown = recorded_arm("machine_plus_next2").make(SUPPORT, ScriptedBackend([]), clock=lambda: 0.0).prompt(step)
    without = recorded_arm("machine_plus_next").make(SUPPORT, ScriptedBackend([]), clock=lambda: 0.0).prompt(step)
    assert "More examples" not in without and shown.startswith(without.split("\n\nKnown so far")[0])
    split = ('JSON: {"results": {"issue": "the upload page freezes at 90 percent", "product": "website", '
             '"severity": "high", "email": "sam@example.invalid"}, "signal": "next"')
    assert split in shown and shown.index("Example of a correct answer") < shown.index("More examples")
    correction = SUPPORT.step("contact").more_examples[0]
    assert (correction.signal, correction.results) == ("correct", {"severity": "high"})
    contact = recorded_arm("machine_plus_next2").make(SUPPORT, ScriptedBackend([]), clock=lambda: 0.0)
    assert "More examples" not in contact.prompt(SUPPORT.step("contact"))  # nothing known yet: nothing to correct
    contact.state.variables["severity"] = "low"
    assert '"results": {"severity": "high"}, "signal": "correct"' in contact.prompt(SUPPORT.step("contact"))
    assert all(s.more_examples for sc in (ANALYST, SUPPORT) for s in sc.steps.values()
               if s.name in ("goal", "must_haves", "constraints", "issue", "contact"))


def test_no_user_file_holds_a_free_text_value_of_the_more_examples() -> None:
    user_text = " ".join(" ".join(u.turns).lower() for u in USERS)
    for scenario in (ANALYST, SUPPORT):
        enums = {f.name for f in scenario.variables if f.type == "enum"}
        for step in scenario.steps.values():
            for example in step.more_examples:
                for name, value in example.results.items():
                    for item in [] if name in enums else value if isinstance(value, list) else [value]:
                        assert item.lower() not in user_text, (step.name, item)


@pytest.mark.parametrize(("extra", "needle"), [
    ("more_examples:\n  ask: {user: hi, message: ok, signal: next}\n", "of step 'ask' must be a non-empty list"),
    ("more_examples:\n  ask: []\n", "of step 'ask' must be a non-empty list"),
    ("more_examples:\n  asks: [{user: a, message: b, signal: next}]\n", "'more_examples' names unknown step 'asks'"),
    ("more_examples:\n  ask: [{user: red, message: ok, signal: next, results: {size: 3}}]\n", "results.size"),
    ("more_examples:\n  ask: [{user: hi, message: ok, signal: correct}]\n", "'correct', not a signal of the step"),
    ("more_examples: [ask]\n", "'more_examples' must be a mapping"),
])
def test_bad_more_examples_name_the_place(extra: str, needle: str) -> None:
    with pytest.raises(ScenarioError) as err:
        parse_scenario(MINI + extra, "mini.yaml")
    assert needle in str(err.value) and "mini.yaml:" in str(err.value)


def test_a_more_example_may_correct_when_the_scenario_declares_corrections() -> None:
    text = MINI.replace("initial: ask\n", "corrections: {signal: correct}\ninitial: ask\n")
    mini = parse_scenario(text + "more_examples:\n  ask: [{user: I meant blue, message: ok, signal: correct, "
                                 "results: {colour: blue}}]\n", "mini.yaml")
    assert mini.step("ask").more_examples[0].results == {"colour": "blue"}


# ----------------------------------------------------------------------------- results_grammar
def test_the_grammar_of_next_requires_the_needed_values() -> None:
    schema = grammar_schema(ANALYST.step("goal"), {})
    ok = {"message": "Who will use it?", "signal": "next", "results": {"goal": "a tide app"}, "summary": ""}
    jsonschema.validate(ok, schema)
    for bad in ({}, {"goal": ""}, {"goal": None}, {"goal": "x", "users": "me"}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate({**ok, "results": bad}, schema)
    jsonschema.validate({**ok, "signal": "stay", "results": {}}, schema)  # staying needs nothing
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**ok, "signal": "jump"}, schema)
    # a value known from earlier is not required again
    jsonschema.validate({**ok, "results": {}}, grammar_schema(ANALYST.step("goal"), {"goal": "a tide app"}))
    # enums and lists are typed: a product outside the enum, an empty must-have list cannot be decoded
    product = grammar_schema(SUPPORT.step("product"), {})
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**ok, "results": {"product": "phone"}}, product)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**ok, "results": {"must_haves": []}}, grammar_schema(ANALYST.step("must_haves"), {}))


def test_the_grammar_compiles_for_every_step() -> None:
    from labkit.llm.grammar import compile_schema

    for scenario in (ANALYST, SUPPORT):
        for step in scenario.steps.values():
            if not step.final:
                plus = DialogBot(scenario, ScriptedBackend([]), features=ALL)
                assert compile_schema(grammar_schema(plus.contract_step(step), {})).gbnf


def test_the_machine_sends_the_grammar_only_when_on() -> None:
    plain = bot(ANALYST, [answer("Goal?", "stay")])
    plain.respond("hello")
    constrained = bot(ANALYST, [answer("Goal?", "stay")], "results_grammar")
    constrained.respond("hello")
    assert "oneOf" not in plain.backend.requests[0].schema
    assert constrained.backend.requests[0].schema == grammar_schema(ANALYST.step("goal"), {})


# ----------------------------------------------------------------------------- vars_memory
def test_values_for_later_steps_are_kept_and_never_asked_for() -> None:
    user = BY_NAME["a12_goal_and_users"]
    b = bot(ANALYST, [answer("Noted.", "next", {"goal": "a tool that plans my running training",
                                                "users": "just me"})], "vars_memory")
    b.respond(user.turns[0])
    assert b.state.status == "must_haves" and b.state.calls == 1  # users was never asked: one call, two moves
    memory = [e for e in b.events if isinstance(e, VariableChanged) and e.who == "memory"]
    assert [(e.name, e.new, e.step) for e in memory] == [("users", "just me", "goal")]
    moves = [e for e in b.events if isinstance(e, Transitioned)]
    assert [(m.source, m.dest) for m in moves] == [("goal", "users"), ("users", "must_haves")]
    assert moves[1].payload["reason"].startswith("vars_memory")
    said = [e.text for e in b.events if isinstance(e, BotSaid)]
    assert "features the first version cannot ship without" in said[-1]  # it asks for the next missing value
    assert "who" not in said[-1].lower()
    # the prompt of the next step lists users as known
    assert 'users="just me"' in b.prompt(ANALYST.step("must_haves"))


def test_without_vars_memory_later_values_are_refused() -> None:
    b = bot(ANALYST, [answer("Noted.", "next", {"goal": "g", "users": "me"}), answer("Noted.", "next", {"goal": "g"})])
    b.respond("g and me")
    assert b.state.status == "users" and "users" not in b.state.variables  # the first answer was refused


def test_a_back_move_is_not_skipped_forward() -> None:
    b = bot(ANALYST, [answer("Users?", "next", {"goal": "g"}), answer("Change it.", "back")], "vars_memory")
    b.respond("g")
    b.respond("go back, I want to change the goal")
    assert b.state.status == "goal"


# ----------------------------------------------------------------------------- cancel_confirm
def test_a_cancel_without_confirmation_does_not_end() -> None:
    b = bot(SUPPORT, [answer("Bye.", "cancel"), answer("Closing.", "cancel")], "cancel_confirm")
    outcome = b.respond("I no longer need help.")
    assert not b.finished and b.state.status == "issue" and b.state.pending_cancel
    assert outcome.reply == SUPPORT.cancel_question
    assert [type(e) for e in b.events].count(CancelRequested) == 1
    assert "Emit cancel only if the user confirms" in b.prompt(SUPPORT.step("issue"))
    b.respond("Yes, close it.")
    assert b.finished and b.state.status == "cancelled" and not b.state.pending_cancel
    assert [e.confirmed for e in b.events if isinstance(e, CancelAnswered)] == [True]


def test_going_on_after_a_cancel_question_withdraws_it() -> None:
    b = bot(SUPPORT, [answer("Bye.", "cancel"), answer("Where?", "next", {"issue": "the app crashes"})],
            "cancel_confirm")
    b.respond("Never mind.")
    b.respond("No wait, the app crashes.")
    assert b.state.status == "product" and not b.state.pending_cancel
    assert [e.confirmed for e in b.events if isinstance(e, CancelAnswered)] == [False]


def test_without_cancel_confirm_a_cancel_ends_at_once() -> None:
    b = bot(SUPPORT, [answer("Bye.", "cancel")])
    b.respond("I no longer need help.")
    assert b.finished and b.state.status == "cancelled"


# ----------------------------------------------------------------------------- corrections
def _in_contact(*features: str, answers: list[str], scenario: Scenario = SUPPORT) -> DialogBot:
    b = bot(scenario, [answer("Product?", "next", {"issue": "the invoice PDF is empty"}),
                      answer("Severity?", "next", {"product": "billing"}),
                      answer("Email?", "next", {"severity": "low"}),
                      answer("Shall I file it?", "next", {"email": "lea@example.com"}), *answers], *features)
    for text in ["The invoice PDF is empty.", "Billing.", "Low.", "lea@example.com"]:
        b.respond(text)
    assert b.state.status == "confirm"
    return b


def test_a_correction_changes_the_variable_through_a_logged_event() -> None:
    b = _in_contact("corrections", answers=[answer("Changed it.", "correct", {"email": "lena@example.com"})])
    assert "- correct: the user changes a value given earlier" in b.prompt(SUPPORT.step("confirm"))
    moves = len([e for e in b.events if isinstance(e, Transitioned)])
    b.respond("Sorry, typo, it is lena@example.com")
    change = [e for e in b.events if isinstance(e, VariableChanged)][-1]
    assert (change.name, change.old, change.new, change.who, change.step) == (
        "email", "lea@example.com", "lena@example.com", "correction", "confirm")
    assert b.state.status == "confirm" and len([e for e in b.events if isinstance(e, Transitioned)]) == moves
    assert b.state.variables["email"] == "lena@example.com"


def test_a_correction_that_changes_nothing_is_refused_and_reasked() -> None:
    b = _in_contact("corrections", answers=[answer("Changed.", "correct", {}),
                                            answer("Changed.", "correct", {"email": "lena@example.com"})])
    outcome = b.respond("it is lena@example.com")
    assert outcome.outcome == "reasked" and b.state.variables["email"] == "lena@example.com"
    calls = [e for e in b.events if isinstance(e, ModelCalled)]
    assert calls[-2].violation == "missing_results"


def test_without_the_feature_the_correction_signal_is_unknown() -> None:
    b = _in_contact(answers=[answer("Changed.", "correct", {"email": "x@y.z"}), answer("Changed.", "correct")])
    outcome = b.respond("it is x@y.z")
    assert outcome.outcome == "contract_failed" and b.state.variables["email"] == "lea@example.com"
    with pytest.raises(LabkitError, match="declares no corrections"):
        DialogBot(parse_scenario(MINI), ScriptedBackend([]), features={"corrections"})


# ----------------------------------------------------------------------------- differing_reask
def test_a_reask_names_the_violation_and_shows_the_previous_answer() -> None:
    first = answer("Who will use it?", "next", {})
    b = bot(ANALYST, [first, answer("Who will use it?", "next", {"goal": "a tide app"})], "differing_reask")
    b.respond("A tide app.")
    calls = [e for e in b.events if isinstance(e, ModelCalled)]
    reask = calls[1].prompt
    assert "refused (missing_results)" in reask and "signal 'next' needs goal" in reask
    assert f"Previous answer (do not repeat it): {first}" in reask and reask.endswith("Corrected JSON: ")
    assert "put goal into results" in reask
    # the legacy re-ask is unchanged: the broken answer continues the prompt as if the model wrote it
    legacy = reask_prompt("P\nJSON: ", first, Violation("missing_results", "x"), ANALYST.step("goal"))
    assert legacy.startswith("P\nJSON: " + first) and legacy.endswith("\nJSON: ")
    assert differing_reask_prompt("P\nJSON: ", first, Violation("not_json", "y"), ANALYST.step("goal"), {}) != legacy


# ----------------------------------------------------------------------------- prompt_only_checked
def test_the_checked_prompt_only_bot_is_held_to_the_script_moves_and_needs() -> None:
    jump = answer("Which severity?", "severity", {"issue": "the app crashes"})
    unchecked = PromptOnlyBot(SUPPORT, ScriptedBackend([jump]), clock=lambda: 0.0)
    unchecked.respond("The app crashes.")
    assert unchecked.state.claimed_step == "severity"  # the old arm: any claim goes
    fine = answer("Which product?", "product", {"issue": "the app crashes"})
    checked_bot = arm("prompt_only_checked").make(SUPPORT, ScriptedBackend([jump, fine]), clock=lambda: 0.0)
    outcome = checked_bot.respond("The app crashes.")
    assert outcome.outcome == "reasked" and checked_bot.state.claimed_step == "product"
    calls = [e for e in checked_bot.events if isinstance(e, ModelCalled)]
    assert calls[0].violation == "unknown_signal" and "allowed: issue, product, cancelled" in calls[0].detail
    empty = answer("Which product?", "product", {})
    needs = arm("prompt_only_checked").make(SUPPORT, ScriptedBackend([empty, empty]), clock=lambda: 0.0)
    assert needs.respond("hello").outcome == "contract_failed"
    assert [e.violation for e in needs.events if isinstance(e, ModelCalled)] == ["missing_results"] * 2
    start = next(e for e in needs.events if isinstance(e, RunStarted))
    assert start.params["mode"] == "prompt_only" and start.params["checked"] is True


# ----------------------------------------------------------------------------- floors, replay, measure
@pytest.mark.parametrize("floor", [NeverMoves, CopiesExamples])
@pytest.mark.parametrize("arm_name", [n for n in NAMES if n not in ("bare_machine", "prompt_only")])
def test_floor_bots_score_zero_under_every_new_arm(floor: type, arm_name: str) -> None:
    scores = [s for s, _ in floor_runs(floor, SCENARIOS, USERS, arm_name)]
    assert len(scores) == 50 and [s.user for s in scores if s.adhered] == []
    assert summarize_scores(scores)["adhered"]["count"] == 0


def _plus_answers() -> list[str]:
    return [answer("Noted. Must-haves?", "next", {"goal": "a tool that plans my running training",
                                                  "users": "just me"}),
            answer("Limits?", "next", {"must_haves": ["build a weekly plan", "track my distance"]}),
            answer("Deadline?", "next", {"constraints": ["it has to be free"]}),
            answer("Is the brief right?", "next", {"deadline": "before the marathon in May"}),
            answer("Done.", "confirm")]


def test_a_machine_plus_conversation_replays_and_resumes_after_a_kill(tmp_path: Path) -> None:
    user = BY_NAME["a12_goal_and_users"]
    log_path = tmp_path / "a12.jsonl"
    answers = iter(_plus_answers())
    b = recorded_arm("machine_plus").make(ANALYST, ScriptedBackend(lambda r: next(answers)), log=JsonlLog(log_path),
                                 clock=lambda: 0.0)
    for text in user.turns[:2]:
        b.respond(text)
    # the log alone rebuilds the state, hash chain checked on reading
    rebuilt = replay(read_jsonl(log_path).events, reduce_dialog, DialogState(), table=ANALYST.table).state
    assert rebuilt == b.state and rebuilt.status == "constraints"
    # a new process resumes where the killed one stood, and the conversation adheres on the measure
    resumed = recorded_arm("machine_plus").make(ANALYST, ScriptedBackend(lambda r: next(answers)),
                                                log=JsonlLog(log_path), clock=lambda: 0.0)
    for text in user.turns[2:]:
        resumed.respond(text)
    result = score(resumed.events, ANALYST, user, "machine_plus")
    assert result.adhered, result.misses
    assert resumed.state.calls == len(user.turns)  # one call per user message


def test_new_arms_record_and_replay_through_the_runner(tmp_path: Path) -> None:
    from labkit.compare.runs import Answers
    from labkit.dialog.comparison import DialogConfig, read_config, record, replay

    plus = iter(_plus_answers())
    only = iter([answer("Who?", "users", {"goal": "a tool that plans my running training"})] * 5)

    def scripted(request) -> str:
        return next(plus) if "Current step:" in request.prompt else next(only)

    settings = DialogConfig(model="scripted", arms=("machine_plus", "prompt_only_checked"), split="dev",
                            scenarios=str(DATA), users_dir=str(DATA / "users"), arm_names="rounds")
    rows = record(settings, Answers(live=ScriptedBackend(scripted)), tmp_path / "rec", only=["a12"])
    assert rows[0]["end_step"] == "brief" and rows[0]["passed"], rows[0]["misses"]
    assert read_config(tmp_path / "rec") == settings
    assert "arm_names" not in json.loads((tmp_path / "rec" / "dialog.json").read_text(encoding="utf-8"))
    assert replay(tmp_path / "rec", tmp_path / "again") == []


def test_a_new_recording_names_its_arms_by_content_and_replays(tmp_path: Path) -> None:
    from labkit.compare.runs import Answers
    from labkit.dialog.comparison import DialogConfig, read_config, record, replay

    settings = DialogConfig(model="scripted", arms=("machine", "bare_machine"), split="dev", scenarios=str(DATA),
                            users_dir=str(DATA / "users"))
    stay = answer("What is the goal?", "stay")
    record(settings, Answers(live=ScriptedBackend(lambda request: stay)), tmp_path / "rec", only=["a01"])
    assert json.loads((tmp_path / "rec" / "dialog.json").read_text(encoding="utf-8"))["arm_names"] == "content"
    assert read_config(tmp_path / "rec").arm_names == "content"
    start = next(e for e in read_jsonl(tmp_path / "rec" / "logs" / "machine" / "a01_happy.jsonl").events
                 if isinstance(e, RunStarted))
    assert start.params["arm"] == "machine" and start.params["features"] == sorted(ALL)
    assert replay(tmp_path / "rec", tmp_path / "again") == []
    with pytest.raises(LabkitError, match="no recorded dialog arm"):  # an old-name recording knows no new arm
        DialogConfig(model="scripted", arms=("bare_machine",), arm_names="rounds").arm("bare_machine")


def test_the_cli_offers_the_declared_arms_and_a_split(capsys: pytest.CaptureFixture) -> None:
    from labkit.cli import main

    with pytest.raises(SystemExit):
        main(["compare", "dialog", "--help"])
    out = capsys.readouterr().out
    assert "machine_without_vars_memory" in out and "bare_machine" in out and "--split" in out
    assert "machine_plus" not in out
    script = DATA / "users" / "s03_cancel.yaml"
    assert load_scenario(DATA / "support" / "scenario.yaml").cancel_question
    assert script.exists()


def test_a_user_who_confirms_a_cancel_adheres_under_machine_plus() -> None:
    user = BY_NAME["s25_cancel_with_reason"]
    b = recorded_arm("machine_plus").make(SUPPORT, ScriptedBackend([answer("Closing.", "cancel")] * 2),
                                          clock=lambda: 0.0)
    run_user(b, user, "machine_plus")
    result = score(b.events, SUPPORT, user, "machine_plus")
    assert result.adhered and result.cancelled and not result.false_completion, result.misses
    # the same first message without the confirming turn stays open: the cancel is not taken on one message
    one = recorded_arm("machine_plus").make(SUPPORT, ScriptedBackend([answer("Closing.", "cancel")]), clock=lambda: 0.0)
    run_user(one, BY_NAME["s03_cancel"], "machine_plus")
    assert one.state.status == "issue" and not score(one.events, SUPPORT, BY_NAME["s03_cancel"], "m").adhered


def test_the_report_pairs_the_new_arms(tmp_path: Path) -> None:
    from labkit.dialog.rescore import report

    def scores(arm_name: str) -> list:
        out = []
        for user in [u for u in USERS if u.scenario == "support"][:5]:
            b = floor_bot(NeverMoves, SUPPORT, arm_name)
            run_user(b, user, arm_name)
            out.append(score(b.events, SUPPORT, user, arm_name))
        return out

    out = report({"m": {name: scores(name) for name in ("machine", "bare_machine", "prompt_only_checked")}})
    assert set(out["paired_arms"]["m"]) == {"machine vs prompt_only_checked", "machine vs bare_machine"}
    assert out["paired"] == {} and "| m | machine | 5 |" in out["table"]


def test_dialog_measure_replay_checks_and_prints_the_new_measure(capsys: pytest.CaptureFixture) -> None:
    from labkit.cli import main

    assert main(["compare", "dialog", "--replay", str(DATA / "runs" / "gemma3-270m"), "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert "every row reproduced" in printed and "machine (today bare_machine): adhered 0/22" in printed
    assert "false completions 3" in printed  # the 270M machine's three cancels on the first message


def test_a_known_value_of_another_step_changes_only_through_a_correction() -> None:
    b = bot(ANALYST, [answer("Users?", "next", {"goal": "a tide app"}),
                      answer("Must-haves?", "next", {"users": "sailors", "goal": "an app for tides"}),
                      answer("Changed.", "correct", {"goal": "an app for tides"})], "vars_memory", "corrections")
    b.respond("A tide app.")
    b.respond("Sailors.")
    assert b.state.variables == {"goal": "a tide app", "users": "sailors"}
    assert "- goal (string)" not in b.prompt(ANALYST.step("must_haves")).split("Signals:")[0].split("Other values")[-1]
    b.respond("Actually the goal is an app for tides.")
    assert b.state.variables["goal"] == "an app for tides"
    assert [e.who for e in b.events if isinstance(e, VariableChanged)] == ["model", "model", "correction"]


def test_a_log_resumes_only_under_the_arm_that_wrote_it(tmp_path: Path) -> None:
    log_path = tmp_path / "c.jsonl"
    first = recorded_arm("machine_plus").make(SUPPORT, ScriptedBackend([answer("Where?", "stay")]),
                                              log=JsonlLog(log_path), clock=lambda: 0.0)
    first.respond("hello")
    with pytest.raises(LabkitError, match="written by another arm"):
        arm("machine").make(SUPPORT, ScriptedBackend([]), log=JsonlLog(log_path), clock=lambda: 0.0)
    again = recorded_arm("machine_plus").make(SUPPORT, ScriptedBackend([]), log=JsonlLog(log_path), clock=lambda: 0.0)
    assert again.state == first.state


# ----------------------------------------------------------------------------- grounded_values, step_question
def test_an_ungrounded_value_a_move_needs_is_reasked_without_the_example() -> None:
    copied = answer("Got it. Who will use it?", "next", {"goal": "an app that reminds my accountant"})
    own = answer("Got it.", "next", {"goal": "a tool that plans my running training"})
    b = bot(ANALYST, [copied, own], "grounded_values", "step_example")
    outcome = b.respond("A tool that plans my running training, just for me.")
    calls = [e for e in b.events if isinstance(e, ModelCalled)]
    assert outcome.outcome == "reasked" and calls[0].violation == "ungrounded_results"
    assert "'app', 'reminds', 'accountant'" in calls[0].detail
    assert "Example of a correct answer" in calls[0].prompt and "Example of a correct answer" not in calls[1].prompt
    assert b.state.variables["goal"] == "a tool that plans my running training" and b.state.status == "users"
    without = bot(ANALYST, [copied], "vars_memory")
    without.respond("A tool that plans my running training, just for me.")
    assert without.state.variables["goal"] == "an app that reminds my accountant"


def test_the_reask_after_an_ungrounded_move_cannot_take_that_move_again() -> None:
    copied = answer("Noted.", "next", {"must_haves": ["a reminder on the phone"]})
    b = bot(ANALYST, [answer("Who?", "next", {"goal": "a room booking app"}),
                      answer("Which features?", "next", {"users": "my team"}),
                      copied, answer("Updated. Which features?", "correct", {"users": "the two team leads"})],
            "grounded_values", "results_grammar", "corrections")
    for text in ("A room booking app.", "My team.", "Sorry, only the two team leads will use it."):
        b.respond(text)
    first, reask = b.backend.requests[2:]
    signals = [a["properties"]["signal"]["const"] for a in first.schema["oneOf"]]
    assert "next" in signals and "next" not in [a["properties"]["signal"]["const"] for a in reask.schema["oneOf"]]
    assert b.state.variables["users"] == "the two team leads" and b.state.status == "must_haves"
    plain = bot(ANALYST, [answer("Who?", "next", {"goal": "a room booking app"}), copied, copied],
                "grounded_values", "results_grammar")
    plain.respond("A room booking app.")
    plain.respond("Nobody yet.")  # refused for a missing value, not an ungrounded one: the re-ask keeps next
    assert [a["properties"]["signal"]["const"] for a in plain.backend.requests[2].schema["oneOf"]].count("next") == 1


def test_a_message_the_step_recorded_late_is_read_again_by_the_next_step(tmp_path: Path) -> None:
    answers = [answer("What should it achieve?", "stay"),
               answer("Who will use it?", "next", {"goal": "a shop"}),  # the goal, from the first message
               answer("Noted.", "next", {"users": "me"})]  # the users step reads "Me." again
    log = JsonlLog(tmp_path / "carried.jsonl")
    b = DialogBot(ANALYST, ScriptedBackend(answers), features=frozenset({"carry_over", "step_question"}),
                  clock=lambda: 0.0, log=log)
    b.respond("A shop.")
    outcome = b.respond("Me.")
    assert (outcome.calls, outcome.outcome, b.state.status) == (2, "carried", "must_haves")
    assert b.state.variables == {"goal": "a shop", "users": "me"}
    said = [e.text for e in b.events if isinstance(e, BotSaid)]
    assert said[-2:] == ["", "Noted. Which features must the first version have?"]  # no question for the users
    assert outcome.reply == "Noted. Which features must the first version have?"
    assert replay(read_jsonl(tmp_path / "carried.jsonl").events, reduce_dialog, DialogState(),
                  table=ANALYST.table).state == b.state
    on_time = bot(ANALYST, [answer("Who?", "next", {"goal": "a shop"})], "carry_over")
    assert on_time.respond("A shop.").calls == 1 and on_time.state.status == "users"  # the latest message's words
    off = bot(ANALYST, answers[:2], "step_question")
    off.respond("A shop.")
    assert off.respond("Me.").calls == 1 and off.state.status == "users"


def test_an_ungrounded_reask_keeps_the_step_and_the_bot_asks_nothing_itself() -> None:
    copied = answer("Got it. Who will use it?", "next", {"goal": "an app that reminds my accountant"})
    b = bot(ANALYST, [copied, copied], "grounded_values", "step_question")
    outcome = b.respond("A tool that plans my running training, just for me.")
    dropped = [e for e in b.events if isinstance(e, ValuesDropped)]
    assert len(dropped) == 1 and dropped[0].unsaid == {"goal": ["app", "reminds", "accountant"]}
    assert (dropped[0].signal, dropped[0].kept_signal) == ("next", "stay")
    assert "goal" not in b.state.variables and b.state.status == "goal"
    assert outcome.reply == NOT_UNDERSTOOD and "?" not in outcome.reply  # not the step's question: see the floors


def test_a_dropped_value_the_move_does_not_need_keeps_the_move() -> None:
    b = bot(SUPPORT, [answer("Which product?", "next", {"issue": "the app crashes", "email": "user@example.com"})],
            "grounded_values", "vars_memory")
    b.respond("The app crashes every time I open my profile page.")
    assert b.state.status == "product" and b.state.variables["issue"] == "the app crashes"
    assert "email" not in b.state.variables
    early = bot(SUPPORT, [answer("Where?", "next", {"issue": "the app logs me out", "severity": "medium",
                                                   "product": "app"})], "grounded_values", "vars_memory")
    early.respond("The app logs me out every few minutes.")
    assert early.state.variables["product"] == "app" and "severity" not in early.state.variables  # never said
    assert replay(b.events, reduce_dialog, DialogState(), table=SUPPORT.table).state == b.state


def test_grounding_ignores_case_function_words_enums_and_word_endings() -> None:
    from labkit.dialog.grounding import ungrounded, unsaid_words

    assert unsaid_words(["the weekly plans", "none"], ["It must build a weekly PLAN."]) == []
    assert unsaid_words("May 1st", ["Before the marathon in May."]) == ["1st"]
    assert unsaid_words("anna@example.com", ["My email is anna@example.com"]) == []
    fields = SUPPORT.step("product").results + SUPPORT.step("issue").results
    assert ungrounded({"product": "billing", "issue": "a crash"}, fields, ["It crashes."]) == {}  # crash ~ crashes
    assert ungrounded({"issue": "a login crash"}, fields, ["It crashes."]) == {"issue": ["login"]}
    assert ungrounded({"product": "billing"}, fields, ["hello"]) == {}  # an enum value is the script's word
    assert ungrounded({"product": "billing"}, fields, ["hello"], enums=["product"]) == {"product": ["billing"]}
    assert ungrounded({"product": "app"}, fields, ["the mobile app"], enums=["product"]) == {}


def test_a_correction_of_the_steps_own_value_is_the_steps_answer() -> None:
    b = bot(ANALYST, [answer("Noted.", "next", {"goal": "a shop"}),
                      answer("Updated.", "correct", {"users": "my fans"})], "corrections")
    b.respond("A shop.")
    outcome = b.respond("My fans.")
    assert outcome.calls == 1 and b.state.status == "must_haves" and b.state.variables["users"] == "my fans"
    assert not any(isinstance(e, VariableChanged) and e.who == "correction" for e in b.events)
    assert [e.signal for e in b.events if isinstance(e, BotSaid)][-1] == "next"  # the log says what was kept
    refused = bot(ANALYST, [answer("Noted.", "next", {"goal": "a shop"}),
                            answer("Updated.", "correct", {"deadline": "May"}),
                            answer("Updated.", "correct", {"goal": "a bakery"})], "corrections")
    refused.respond("A shop.")
    refused.respond("Actually a bakery.")
    calls = [e for e in refused.events if isinstance(e, ModelCalled)]
    assert calls[1].violation == "invalid_results" and "may not change deadline: it may change goal" in calls[1].detail
    assert refused.state.variables["goal"] == "a bakery" and refused.state.status == "users"


def test_the_correction_signal_is_offered_only_for_known_values_of_earlier_steps() -> None:
    b = bot(ANALYST, [answer("Noted.", "next", {"goal": "a shop"})], "corrections", "results_grammar")
    assert "correct" not in b.contract_step(ANALYST.step("goal")).signal_names  # nothing known yet to correct
    b.respond("A shop.")
    users = b.contract_step(ANALYST.step("users"))
    assert "correct" in users.signal_names
    alternatives = b._schema(users)["oneOf"]
    correct = next(a for a in alternatives if a["properties"]["signal"] == {"const": "correct"})
    # goal only: never a later step's value, and the unknown users is what the move on needs (a staying signal
    # cannot write it); a known own value may be re-given under it (see the test above)
    assert set(correct["properties"]["results"]["properties"]) == {"goal"}


def test_step_question_replaces_the_models_question_and_asks_after_a_move_only() -> None:
    b = bot(ANALYST, [answer("Great idea! Who else will use the project?", "next", {"goal": "a shop"}),
                      answer("Noted.", "next", {"users": "me"})], "step_question")
    assert b.respond("A shop.").reply == "Great idea! Who will use it?"
    assert b.respond("Me.").reply == "Noted. Which features must the first version have?"  # moved: the step asks
    stays = bot(ANALYST, [answer("Noted.", "stay", {})], "step_question")
    assert stays.respond("Hello.").reply == "Noted."  # the model stayed and asked nothing: nothing is added
    said = [e for e in b.events if isinstance(e, BotSaid)]
    assert said[0].text == "Great idea! Who will use it?"  # the log records what the user read
    plain = bot(ANALYST, [answer("Great idea! Who else will use the project?", "next", {"goal": "a shop"})])
    assert plain.respond("A shop.").reply == "Great idea! Who else will use the project?"


def test_the_review_question_reads_the_known_values_back() -> None:
    b = bot(SUPPORT, [answer("Product?", "next", {"issue": "the invoice PDF is empty"}),
                      answer("Severity?", "next", {"product": "billing"}),
                      answer("Email?", "next", {"severity": "low"}),
                      answer("Thanks. Shall I file it?", "next", {"email": "lea@example.com"})], "step_question")
    for text in ["The invoice PDF is empty.", "Billing.", "Low."]:
        b.respond(text)
    assert b.respond("lea@example.com").reply == (
        "Thanks. Here is the ticket: issue: the invoice PDF is empty; product: billing; severity: low; "
        "email: lea@example.com. Shall I file it?")


@pytest.mark.parametrize(("extra", "needle"), [
    ("questions: [a]\n", "'questions' must be a mapping"),
    ("questions: {nowhere: Why}\n", "names unknown step 'nowhere'"),
    ("questions: {done: Why}\n", "final step 'done' has a question"),
    ("questions: {ask: ''}\n", "must be a non-empty string"),
])
def test_a_bad_question_names_the_place(extra: str, needle: str) -> None:
    with pytest.raises(ScenarioError, match=needle) as caught:
        parse_scenario(MINI + extra, "mini.yaml")
    assert "mini.yaml:" in str(caught.value)


def test_the_grammar_of_a_stay_cannot_write_a_value_the_move_on_needs() -> None:
    deadline = ANALYST.step("deadline")
    schema = grammar_schema(deadline, {})
    stay = next(a for a in schema["oneOf"] if a["properties"]["signal"] == {"const": "stay"})
    forward = next(a for a in schema["oneOf"] if a["properties"]["signal"] == {"const": "next"})
    assert "deadline" not in stay["properties"]["results"]["properties"]
    assert forward["properties"]["results"]["required"] == ["deadline"]
    bad = {"message": "When?", "signal": "stay", "results": {"deadline": "June"}, "summary": ""}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schema)
    known = grammar_schema(deadline, {"deadline": "June"})  # a known value may be changed while staying
    stay = next(a for a in known["oneOf"] if a["properties"]["signal"] == {"const": "stay"})
    assert "deadline" in stay["properties"]["results"]["properties"]


# ----------------------------------------------------------------------------- parts: one rule of a feature off
def test_a_part_is_recorded_only_when_switched_off_and_a_resume_keeps_it(tmp_path: Path) -> None:
    plus = recorded_arm("machine_plus").make(SUPPORT, ScriptedBackend([]), clock=lambda: 0.0)
    start = next(e for e in plus.events if isinstance(e, RunStarted))
    assert "without" not in start.params  # machine_plus says what it said before parts existed
    log_path = tmp_path / "part.jsonl"
    off = recorded_arm("machine_plus_no_refused_move_barred").make(SUPPORT, ScriptedBackend([]), log=JsonlLog(log_path),
                                                           clock=lambda: 0.0)
    start = next(e for e in off.events if isinstance(e, RunStarted))
    assert start.params["without"] == ["refused_move_barred"]
    with pytest.raises(LabkitError, match="written by another arm"):
        DialogBot(SUPPORT, ScriptedBackend([]), features=ALL, arm="machine_plus_no_refused_move_barred",
                  log=JsonlLog(log_path), clock=lambda: 0.0)  # the part on again: another contract
    with pytest.raises(LabkitError, match="unknown dialog machine part"):
        DialogBot(SUPPORT, ScriptedBackend([]), features=ALL, without={"refused_move"})
    with pytest.raises(LabkitError, match="belong to no declared feature"):
        FeatureTable("toy", (Feature("a", "x"),), (Part("p", "b", "y"),))


def test_without_the_barred_move_the_reask_may_take_the_refused_move_again() -> None:
    copied = answer("Noted.", "next", {"must_haves": ["a reminder on the phone"]})
    b = DialogBot(ANALYST, ScriptedBackend([answer("Who?", "next", {"goal": "a room booking app"}),
                                            answer("Which features?", "next", {"users": "my team"}), copied, copied]),
                  features=frozenset({"grounded_values", "results_grammar"}), without={"refused_move_barred"},
                  clock=lambda: 0.0)
    for text in ("A room booking app.", "My team.", "Sorry, only the two team leads will use it."):
        b.respond(text)
    reask = b.backend.requests[3]
    assert "next" in [a["properties"]["signal"]["const"] for a in reask.schema["oneOf"]]


def test_without_the_stay_rule_a_stay_may_write_the_value_the_move_on_needs() -> None:
    schema = grammar_schema(ANALYST.step("deadline"), {}, stay_keeps_needs=False)
    stay = next(a for a in schema["oneOf"] if a["properties"]["signal"] == {"const": "stay"})
    assert "deadline" in stay["properties"]["results"]["properties"]
    for without, writes in ((set(), False), ({"stay_keeps_needs"}, True)):
        b = DialogBot(ANALYST, ScriptedBackend([answer("What should it do?", "stay")]),
                      features=frozenset({"results_grammar"}), without=without, clock=lambda: 0.0)
        b.respond("Hello.")
        sent = next(a for a in b.backend.requests[0].schema["oneOf"] if a["properties"]["signal"] == {"const": "stay"})
        assert ("goal" in sent["properties"]["results"]["properties"]) is writes


def test_results_first_puts_the_results_before_the_move_in_the_grammar_the_prompt_and_the_example() -> None:
    from labkit.dialog.contract import RESULTS_FIRST, in_order
    from labkit.llm.grammar import compile_schema

    nxt = recorded_arm("machine_plus_next").make(SUPPORT, ScriptedBackend([]), clock=lambda: 0.0)
    plus = recorded_arm("machine_plus").make(SUPPORT, ScriptedBackend([]), clock=lambda: 0.0)
    step = SUPPORT.step(SUPPORT.initial)
    schema = nxt._schema(nxt.contract_step(step))
    alternatives = schema.get("oneOf", [schema])
    assert all(tuple(a["properties"]) == RESULTS_FIRST == tuple(a["required"]) for a in alternatives)
    assert [a["properties"]["signal"] for a in alternatives] == \
        [a["properties"]["signal"] for a in plus._schema(plus.contract_step(step)).get("oneOf", [])]
    gbnf = compile_schema(schema).gbnf
    first = next(line for line in gbnf.splitlines() if line.startswith("alternative-0 ::="))
    assert first.index("results-kv") < first.index("signal-kv") < first.index("message-kv")  # decoded in this order
    prompt = nxt.prompt(step)
    assert prompt.endswith("Reply with one JSON object: results (only values the user's messages give, in their "
                           "words; {} when they give none), signal, message (to the user), summary (one line).\nJSON: ")
    for alt in alternatives:  # the issue the move on needs: only under the signal that needs it
        needs = next(s for s in step.signals if s.name == alt["properties"]["signal"]["const"]).needs
        assert ("issue" in alt["properties"]["results"]["properties"]) == ("issue" in needs), needs
    assert 'JSON: {"results":' in prompt and 'JSON: {"message":' in plus.prompt(step)
    plain = plus._schema(plus.contract_step(step))
    reordered = in_order(plain)["oneOf"]  # the same properties (dicts compare without order), in the new order
    assert [a["properties"] for a in reordered] == [a["properties"] for a in plain["oneOf"]]
    assert all(tuple(a["properties"]) == RESULTS_FIRST for a in reordered)
    assert not any(tuple(a["properties"]) == RESULTS_FIRST for a in plain["oneOf"])


def test_a_misspelt_feature_name_is_an_error_not_off() -> None:
    bot = DialogBot(SUPPORT, ScriptedBackend([]), features=ALL, arm="x", clock=lambda: 0.0)
    assert bot.has("step_example") and bot.has_part("stay_keeps_needs")
    with pytest.raises(LabkitError, match=r"unknown dialog machine feature\(s\) \['step_exampel'\]") as err:
        bot.has("step_exampel")
    assert "step_example" in err.value.hint and "results_grammar" in err.value.hint
    with pytest.raises(LabkitError, match=r"unknown dialog machine part\(s\) \['stay_keeps_need'\]") as err:
        bot.has_part("stay_keeps_need")
    assert "stay_keeps_needs" in err.value.hint


def test_an_arm_with_a_misspelt_feature_is_refused_when_built() -> None:
    from labkit.dialog.arms import Arm

    with pytest.raises(LabkitError, match=r"\['carry_ovre'\]") as err:
        Arm("mine", "machine", frozenset({"step_example", "carry_ovre"}))
    assert "carry_over" in err.value.hint
    with pytest.raises(LabkitError, match=r"part\(s\) \['no_such_rule'\]"):
        Arm("mine", "machine", ALL, without=frozenset({"no_such_rule"}))
    with pytest.raises(LabkitError, match="prompt-only arm with machine features"):
        Arm("mine", "prompt_only", frozenset({"step_example"}))
    assert Arm("mine", "machine", frozenset({"step_example"})).features == {"step_example"}


# the DialogBot methods each hook of labkit.dialog.features.HOOKS names
HOOK_METHODS = {"contract": ("contract_step", "_correctable", "__init__"), "schema": ("_schema", "_signal_schema"),
                "prompt": ("prompt", "_feature_prompt"), "check": ("_check", "_grounded", "_split", "_merge_split"),
                "reask": ("_reask",), "results": ("_apply_results", "_who"),
                "after_answer": ("_after_answer", "_late", "_asking", "_asks", "_skip_known")}


def test_each_feature_declares_the_hooks_the_engine_checks_it_in() -> None:
    import ast
    import inspect
    import re

    from labkit.dialog import engine
    from labkit.dialog.features import HOOKS

    assert set(HOOK_METHODS) == set(HOOKS)
    source = inspect.getsource(engine.DialogBot)
    tree = ast.parse(source)
    methods = {f.name: ast.get_source_segment(source, f) or "" for f in ast.walk(tree)
               if isinstance(f, ast.FunctionDef)}
    found: dict[str, set[str]] = {}
    for hook, names in HOOK_METHODS.items():
        for name in names:
            for feature in re.findall(r'self\.has\("([a-z_]+)"\)', methods[name]):
                found.setdefault(feature, set()).add(hook)
    assert set(found) == ALL  # every declared feature is checked somewhere, and nothing else is
    for f in FEATURES:
        assert f.about and "\n" not in f.about and set(f.hooks) <= set(HOOKS), f.name
        assert found[f.name] == set(f.hooks), f.name
