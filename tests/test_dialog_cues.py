"""``move_cues`` and ``correction_cues``: declared words in the user's message decide which moves the grammar offers.

Scripted answers only (no model): each test reads the schema the machine sent with its call. The dev users'
own failures under ``machine_plus_next5`` are the cases: s09 ("Hmm, wait, not yet." read as a move back) and
a13 ("Sorry, not the whole team, only the two team leads will use it." written as a must-have).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from labkit.dialog import DialogBot, parse_scenario
from labkit.dialog.history import recorded_arm
from labkit.dialog.scenario import Scenario, ScenarioError
from labkit.dialog.simulate import load_scenarios
from labkit.dialog.users import load_user_scripts
from labkit.llm.fake import ScriptedBackend
from tests.test_dialog_features import MINI, _in_contact, answer
from tests.test_dialog_features import bot as _bot

DATA = Path(__file__).resolve().parents[1] / "data" / "dialog"
SCENARIOS = load_scenarios(DATA)
ANALYST, SUPPORT = SCENARIOS["analyst"], SCENARIOS["support"]
BASE = ("results_grammar", "corrections", "vars_memory")


def bot(scenario, answers: list[str], *features: str) -> DialogBot:
    return _bot(scenario, answers, *BASE, *features)


def offered(schema: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The signals a results_grammar schema lets the model write, each with its results object."""
    alternatives = schema.get("oneOf", [schema])
    return {a["properties"]["signal"]["const"]: a["properties"]["results"] for a in alternatives}


def in_confirm(*features: str, then: list[str], scenario: Scenario = SUPPORT) -> DialogBot:
    """A support conversation that reached the confirmation with every value given."""
    return _in_contact(*BASE, *features, answers=then, scenario=scenario)


def last_schema(b: DialogBot) -> dict[str, Any]:
    return b.backend.requests[-1].schema


# ----------------------------------------------------------------------------- declarations
def test_the_shipped_scenarios_declare_move_and_correction_cues() -> None:
    for scenario in (ANALYST, SUPPORT):
        assert set(scenario.move_cues) == {"back"} and "back" in scenario.move_cues["back"]
        assert scenario.corrections is not None and "actually" in scenario.corrections.cues
    assert {"move_cues", "correction_cues"} <= recorded_arm("machine_plus_next7").features
    assert "correction_cues" not in recorded_arm("machine_plus_next6").features
    assert "move_cues" not in recorded_arm("machine_plus_next5").features


def test_the_dev_messages_holding_a_back_cue_are_the_ones_the_cues_were_chosen_for() -> None:
    # the cue words were chosen on the dev users; this pins what they match there, so a new cue is a decision
    from labkit.dialog.splitting import cued

    holding = {(u.name, t) for u in load_user_scripts(DATA / "users") if u.split == "dev" for t in u.turns
               if cued(t, SCENARIOS[u.scenario].move_cues)}
    assert holding == {
        ("a03_correction", "Actually not June, I meant July. Please go back and change the deadline."),
        # in the first step, which has no move back: the cue changes nothing there
        ("s13_all_at_once", "My invoice shows the wrong VAT, it is a billing problem, medium urgency, write to me "
                            "at ivo@example.com"),
        ("s15_smalltalk_then_cancel", "Actually I no longer need help, it works now."),
    }


@pytest.mark.parametrize(("extra", "needle"), [
    ("move_cues: {jump: [go]}\n", "'move_cues' names unknown signal 'jump'"),
    ("move_cues: {next: []}\n", "the move_cues of 'next' must be a non-empty list"),
    ("move_cues: [next]\n", "'move_cues' must be a mapping of signal names"),
    ("corrections: {signal: correct, cues: []}\n", "'corrections': 'cues' must be a non-empty list"),
    ("corrections: {signal: correct, cues: [' ']}\n", "'corrections': 'cues' must be a non-empty list"),
    ("request_openers: please\n", "'request_openers' must be a non-empty list"),
    ("request_openers: []\n", "'request_openers' must be a non-empty list"),
])
def test_bad_cues_name_the_place(extra: str, needle: str) -> None:
    with pytest.raises(ScenarioError) as err:
        parse_scenario(MINI + extra, "mini.yaml")
    assert needle in str(err.value) and f"mini.yaml:{MINI.count(chr(10)) + 1}:" in str(err.value)
    good = parse_scenario(MINI + "move_cues: {next: [blue, red]}\ncorrections: {signal: correct, cues: [actually]}\n",
                          "mini.yaml")
    assert good.move_cues == {"next": ("blue", "red")} and good.corrections.cues == ("actually",)


# ----------------------------------------------------------------------------- move_cues
def test_a_message_without_a_back_cue_is_not_offered_back() -> None:
    b = in_confirm("move_cues", then=[answer("Take your time.", "stay")])
    b.respond("Hmm, wait, not yet.")
    assert set(offered(last_schema(b))) == {"confirm", "stay", "correct"}
    assert b.state.status == "confirm"


def test_a_message_with_a_back_cue_is_offered_back() -> None:
    b = in_confirm("move_cues", then=[answer("Which email?", "back")])
    b.respond("No, the email is wrong.")
    assert "back" in offered(last_schema(b)) and b.state.status == "contact"


def test_without_move_cues_back_is_offered_whatever_the_message() -> None:
    b = in_confirm(then=[answer("Which email?", "back")])
    b.respond("Hmm, wait, not yet.")
    assert "back" in offered(last_schema(b)) and b.state.status == "contact"  # s09's failure under next5


def test_the_grammar_never_bars_every_move() -> None:
    mini = parse_scenario(MINI + "move_cues: {next: [blue], stay: [later]}\n", "mini.yaml")
    b = DialogBot(mini, ScriptedBackend([answer("Which colour?", "stay")]),
                  features=frozenset({"results_grammar", "move_cues"}), clock=lambda: 0.0)
    b.respond("Hmm.")  # holds neither cue: barring both would leave the grammar nothing to decode
    assert set(offered(last_schema(b))) == {"next", "stay"}
    b2 = DialogBot(mini, ScriptedBackend([answer("Which colour?", "stay")]),
                   features=frozenset({"results_grammar", "move_cues"}), clock=lambda: 0.0)
    b2.respond("Later.")
    assert set(offered(last_schema(b2))) == {"stay"}


# ----------------------------------------------------------------------------- correction_cues
def in_must_haves(*features: str, then: list[str]) -> DialogBot:
    b = bot(ANALYST, [answer("Who will use it?", "next", {"goal": "an app where my team can book the meeting room"}),
                      answer("Which features?", "next", {"users": "my team at work"}), *then], *features)
    for text in ["An app where my team can book the meeting room.", "My team at work."]:
        b.respond(text)
    assert b.state.status == "must_haves"
    return b


A13 = "Sorry, not the whole team, only the two team leads will use it."


def test_a_cued_correction_is_answered_under_the_correction_alone_its_value_required() -> None:
    b = in_must_haves("correction_cues", then=[answer("Changed.", "correct", {"users": "only the two team leads"})])
    b.respond(A13)
    signals = offered(last_schema(b))
    assert list(signals) == ["correct"]
    assert signals["correct"]["required"] == ["users"] and next(iter(signals["correct"]["properties"])) == "users"
    assert b.state.variables["users"] == "only the two team leads" and b.state.status == "must_haves"


def test_without_correction_cues_the_model_chooses_as_before() -> None:
    b = in_must_haves(then=[answer("Noted.", "next", {"must_haves": ["two team leads will use it"]})])
    b.respond(A13)
    assert {"next", "stay", "correct"} <= set(offered(last_schema(b)))


@pytest.mark.parametrize("text", [
    "The two team leads will use it.",  # a cue of the users, but no cue of a correction
    "Actually it must show free slots.",  # a correction's cue, but no earlier value's
])
def test_only_a_correction_cue_beside_one_known_values_cue_forces_the_correction(text: str) -> None:
    b = in_must_haves("correction_cues", then=[answer("Noted.", "stay")])
    b.respond(text)
    assert len(offered(last_schema(b))) > 1


def test_a_correction_cue_beside_two_known_values_cues_forces_nothing() -> None:
    b = in_confirm("correction_cues", then=[answer("Changed.", "stay")])
    b.respond("Actually it is the website, and it is low.")  # which one is corrected is the model's call
    assert len(offered(last_schema(b))) > 1


def test_a_cue_of_a_value_not_known_yet_forces_nothing() -> None:
    fresh = bot(SUPPORT, [answer("Which product?", "next", {"issue": "the app is slow, actually"})],
                "correction_cues")
    fresh.respond("Actually the app is slow.")  # nothing is known yet: nothing to correct
    assert len(offered(last_schema(fresh))) > 1


def test_the_reask_after_a_cued_correction_is_not_forced_again() -> None:
    b = in_must_haves("correction_cues", then=[answer("Changed.", "correct", {"users": ""}),
                                               answer("Noted.", "stay")])
    b.respond(A13)
    first, second = b.backend.requests[-2:]
    assert list(offered(first.schema)) == ["correct"] and len(offered(second.schema)) > 1


# ----------------------------------------------------------------------------- correction_question
def test_a_correction_that_changed_a_value_ends_with_the_steps_question() -> None:
    said = answer("Email updated to lena@example.com.", "correct", {"email": "lena@example.com"})
    asked = in_confirm("step_question", "correction_question", then=[said]).respond(
        "Sorry, typo, it is lena@example.com")
    assert asked.reply.startswith("Email updated to lena@example.com. Here is the ticket:")
    assert "email: lena@example.com" in asked.reply and asked.reply.endswith("Shall I file it?")
    # s05 under machine_plus_next6: without the rule, the turn ended without asking for the confirmation
    plain = in_confirm("step_question", then=[said]).respond("Sorry, typo, it is lena@example.com")
    assert plain.reply == "Email updated to lena@example.com."


def test_a_stay_that_changed_nothing_gets_no_question_added() -> None:
    # the floor: a bot that does nothing must not be made to ask by the machine
    outcome = in_confirm("step_question", "correction_question",
                         then=[answer("Take your time.", "stay")]).respond("Hmm, wait.")
    assert outcome.reply == "Take your time."


# ----------------------------------------------------------------------------- request_question
S09 = "Please provide the email address you want to use for the ticket."


def test_a_request_without_a_question_mark_is_replaced_by_the_steps_question() -> None:
    asked = in_confirm("step_question", "request_question", then=[answer(S09, "stay")]).respond("Hmm, wait, not yet.")
    assert asked.reply.startswith("Here is the ticket:") and asked.reply.endswith("Shall I file it?")
    # s09 under machine_plus_next8: without the rule the request for a known email was kept, and nothing asked
    plain = in_confirm("step_question", then=[answer(S09, "stay")]).respond("Hmm, wait, not yet.")
    assert plain.reply == S09


@pytest.mark.parametrize(("said", "kept"), [
    ("Thanks. Tell me when you are ready.", "Thanks."),
    ("Noted, your email is kept. Could you confirm", "Noted, your email is kept."),
])
def test_only_the_request_sentences_are_replaced(said: str, kept: str) -> None:
    asked = in_confirm("step_question", "request_question", then=[answer(said, "stay")]).respond("Hmm.")
    assert asked.reply.startswith(kept + " Here is the ticket:")


def test_the_request_openers_are_the_scenarios_own() -> None:
    assert {"please", "could you", "tell me"} <= set(SUPPORT.request_openers)
    # a scenario that declares none: with request_question on, only a question mark asks
    none = in_confirm("step_question", "request_question", then=[answer(S09, "stay")],
                      scenario=dataclasses.replace(SUPPORT, request_openers=()))
    assert none.respond("Hmm, wait, not yet.").reply == S09


@pytest.mark.parametrize("said", ["OK.", "Take your time.", "Provided you agree, I will file it."])
def test_a_message_that_requests_nothing_is_kept(said: str) -> None:
    # the floor: a do-nothing bot's acknowledgement is not made to ask; a word inside a sentence is no request
    outcome = in_confirm("step_question", "request_question", then=[answer(said, "stay")]).respond("Hmm, wait.")
    assert outcome.reply == said


# ----------------------------------------------------------------------------- correction_unseen
ROUND10 = sorted(recorded_arm("machine_plus_next10").features)
ROUND9 = sorted(recorded_arm("machine_plus_next9").features)


def summarised(*features: str) -> DialogBot:
    """a13 after two answers with summaries (as the model writes them), at its correction."""
    b = bot(ANALYST, [answer("Who will use it?", "next", {"goal": "an app where my team can book the meeting room"},
                             "goal given"),
                      answer("Which features?", "next", {"users": "my team at work"}, "users: my team at work"),
                      answer("Changed.", "correct", {"users": "only the two team leads"})], *features)
    for text in ["An app where my team can book the meeting room.", "My team at work.", A13]:
        b.respond(text)
    return b


def test_a_forced_correction_does_not_show_the_value_it_corrects() -> None:
    unseen = summarised(*ROUND10)
    prompt = unseen.backend.requests[-1].prompt
    known = prompt[prompt.rindex("Known so far:"):].splitlines()
    assert known[0] == ('Known so far: goal="an app where my team can book the meeting room"; '
                        "users=(being corrected: the new value from the user's latest message)")
    assert known[1] == "Earlier steps: goal: goal given"  # the users step's summary held the old value
    assert unseen.state.variables["users"] == "only the two team leads"
    # a13 under machine_plus_next9: the prompt showed the old value, and the model wrote it back
    shown = summarised(*ROUND9).backend.requests[-1].prompt
    assert 'users="my team at work"' in shown and "users: users: my team at work" in shown


def test_a_message_that_forces_no_correction_shows_every_value() -> None:
    b = in_must_haves(*ROUND10, then=[answer("Noted.", "stay")])
    b.respond("The two team leads will use it.")  # a cue of the users, but no cue of a correction
    assert 'users="my team at work"' in b.backend.requests[-1].prompt
