"""The dialog engine: scenario loading and its errors, the contract, re-ask, variable history, replay."""

from __future__ import annotations

import json
import re
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

from labkit.core.drawio import to_drawio
from labkit.core.reducer import replay
from labkit.core.store import JsonlLog, read_jsonl
from labkit.dialog import (
    ChatViewer,
    DialogBot,
    PromptOnlyBot,
    ScenarioError,
    UserScript,
    VariableChanged,
    adherence,
    answer_schema,
    check_answer,
    conversation_view,
    load_scenario,
    load_user_scripts,
    parse_scenario,
    reask_prompt,
    reduce_dialog,
    run_user,
    summarize,
    wilson_interval,
)
from labkit.dialog.events import DialogState
from labkit.llm.fake import ScriptedBackend

ROOT = Path(__file__).resolve().parents[1]
ANALYST = ROOT / "data" / "dialog" / "analyst" / "scenario.yaml"
SUPPORT = ROOT / "data" / "dialog" / "support" / "scenario.yaml"

MINI = """\
name: mini
initial: ask
steps:
  ask:
    instructions: Ask for a colour.
    results:
      colour: {type: string}
    signals:
      next: {to: done, needs: [colour]}
      stay: ask
  done:
    final: true
    message: Thanks.
"""


def answer(message: str = "ok", signal: str = "stay", results: dict | None = None, summary: str = "s") -> str:
    return json.dumps({"message": message, "signal": signal, "results": results or {}, "summary": summary})


# ----------------------------------------------------------------------------- scenarios
@pytest.mark.parametrize("path", [ANALYST, SUPPORT])
def test_shipped_scenarios_compile_into_checked_tables(path: Path) -> None:
    scenario = load_scenario(path)
    table = scenario.table
    assert table.initial == scenario.initial
    assert table.reachable() == set(table.states)
    assert all(step.instructions for step in scenario.steps.values() if not step.final)
    assert {s for s in table.states if not table.allowed_events(s)} == set(table.terminal)


def test_bad_yaml_names_file_line_and_column() -> None:
    with pytest.raises(ScenarioError) as err:
        parse_scenario("name: x\nsteps:\n  a: [unclosed\n", "broken.yaml")
    assert re.search(r"broken\.yaml:\d+:\d+: not valid YAML", str(err.value))


@pytest.mark.parametrize("text,needle", [
    (MINI.replace("{type: string}", "{type: colourful}"), "unknown type 'colourful'"),
    (MINI.replace("to: done", "to: nowhere"), "unknown step 'nowhere'"),
    (MINI.replace("needs: [colour]", "needs: [shade]"), "needs 'shade'"),
    (MINI.replace("      stay: ask\n", "      stay: ask\n      lost: [1]\n"), "no target"),
    (MINI.replace("initial: ask", "initial: start"), "initial step 'start'"),
    (MINI.replace("    final: true", "    finl: true"), "unknown key 'finl'"),
])
def test_schema_errors_name_the_place(text: str, needle: str) -> None:
    with pytest.raises(ScenarioError) as err:
        parse_scenario(text, "mini.yaml")
    assert needle in str(err.value)
    assert re.search(r"mini\.yaml:\d+:\d+: ", str(err.value))


def test_table_checks_apply_to_scenarios() -> None:
    unreachable = MINI + "  island:\n    instructions: x\n    signals:\n      stay: island\n"
    with pytest.raises(ScenarioError) as err:
        parse_scenario(unreachable, "mini.yaml")
    assert "state 'island' is unreachable" in str(err.value)
    dead_end = (MINI.replace("      stay: ask\n", "      stay: ask\n      odd: limbo\n")
                + "  limbo:\n    instructions: x\n")
    with pytest.raises(ScenarioError) as err:
        parse_scenario(dead_end, "mini.yaml")
    assert "'limbo' has no outgoing rows" in str(err.value)


def test_missing_instruction_file_is_named(tmp_path: Path) -> None:
    (tmp_path / "s.yaml").write_text(MINI.replace("Ask for a colour.", "steps/ask.md"))
    with pytest.raises(ScenarioError) as err:
        load_scenario(tmp_path / "s.yaml")
    assert "no instructions file" in str(err.value) and "s.yaml:5:" in str(err.value)


# ----------------------------------------------------------------------------- contract
def test_contract_schema_limits_the_signal_to_the_step() -> None:
    step = load_scenario(ANALYST).step("users")
    schema = answer_schema(step)
    assert schema["properties"]["signal"] == {"enum": ["next", "stay", "back"]}
    assert set(schema["required"]) == {"message", "signal", "results", "summary"}


@pytest.mark.parametrize("raw,code", [
    ("not json {", "not_json"),
    ('{"message": "hi"}', "wrong_shape"),
    (answer(signal="jump"), "unknown_signal"),
    (answer(signal="next", results={"colour": 5}), "invalid_results"),
    (answer(signal="next", results={"shade": "red"}), "invalid_results"),
    (answer(signal="next"), "missing_results"),
])
def test_contract_violations_are_named(raw: str, code: str) -> None:
    step = parse_scenario(MINI).step("ask")
    checked = check_answer(raw, step, {})
    assert not checked.ok and checked.violation is not None
    assert checked.violation.code == code
    assert code in {"not_json", "wrong_shape"} or checked.violation.detail


def test_contract_accepts_needs_met_now_or_earlier() -> None:
    step = parse_scenario(MINI).step("ask")
    assert check_answer(answer(signal="next", results={"colour": "red"}), step, {}).ok
    assert check_answer(answer(signal="next"), step, {"colour": "blue"}).ok


def test_reask_prompt_names_the_violation_and_the_signals() -> None:
    step = parse_scenario(MINI).step("ask")
    violation = check_answer(answer(signal="next"), step, {}).violation
    assert violation is not None
    text = reask_prompt("PROMPT ", '{"bad": 1}', violation, step)
    assert text.startswith("PROMPT ") and "needs colour" in text and "next, stay" in text and '{"bad": 1}' in text


# ----------------------------------------------------------------------------- engine
def test_reask_once_then_continue() -> None:
    backend = ScriptedBackend(["{broken", answer("Red it is.", "next", {"colour": "red"})])
    bot = DialogBot(parse_scenario(MINI), backend, clock=lambda: 0.0)
    outcome = bot.respond("red")
    assert outcome.outcome == "reasked" and outcome.calls == 2
    assert bot.state.status == "done" and bot.finished
    assert bot.state.variables == {"colour": "red"}
    assert "not valid JSON" in backend.requests[1].prompt  # the re-ask names the violation
    assert outcome.reply.endswith("Thanks.")


def test_second_failure_is_a_typed_outcome_not_a_crash() -> None:
    backend = ScriptedBackend([answer(signal="next"), answer(signal="next")])
    bot = DialogBot(parse_scenario(MINI), backend, clock=lambda: 0.0)
    outcome = bot.respond("hmm")
    assert outcome.outcome == "contract_failed" and outcome.step_after == "ask"
    assert bot.state.failures == 1 and bot.state.reasks == 1 and bot.state.contract_violations == 2
    assert [e.type for e in bot.events][-2:] == ["dialog_contract_failed", "dialog_bot"]


def test_prompt_is_small_and_holds_only_the_current_step() -> None:
    scenario = load_scenario(ANALYST)
    backend = ScriptedBackend(lambda r: answer("Who uses it?", "next", {"goal": "an invoice tool"}))
    bot = DialogBot(scenario, backend, clock=lambda: 0.0)
    bot.respond("An invoice tool")
    first = backend.requests[0].prompt
    assert scenario.step("goal").instructions.strip() in first
    assert scenario.step("deadline").instructions.strip() not in first
    backend2 = ScriptedBackend(lambda r: answer("ok", "stay"))
    bot2 = DialogBot(scenario, backend2, clock=lambda: 0.0, recent_turns=2)
    for i in range(6):
        bot2.respond(f"message number {i}")
    last = backend2.requests[-1].prompt
    assert "message number 5" in last and "message number 3" not in last  # only the last few turns
    assert len(last) < len(scenario.full_script()) + 600


def test_variable_history_replays_and_resumes(tmp_path: Path) -> None:
    scenario = load_scenario(ANALYST)
    answers = iter([answer("Users?", "next", {"goal": "tool"}), answer("ok", "back"),
                    answer("Users?", "next", {"goal": "better tool"}), answer("Must-haves?", "next", {"users": "me"})])
    log_path = tmp_path / "c.jsonl"
    bot = DialogBot(scenario, ScriptedBackend(lambda r: next(answers)), log=JsonlLog(log_path), clock=lambda: 0.0)
    for text in ["tool", "go back", "better tool"]:
        bot.respond(text)
    changes = [e for e in bot.events if isinstance(e, VariableChanged)]
    assert [(c.name, c.old, c.new, c.step) for c in changes] == [("goal", None, "tool", "goal"),
                                                                  ("goal", "tool", "better tool", "goal")]
    # the state is a fold over the log alone
    events = read_jsonl(log_path).events
    rebuilt = replay(events, reduce_dialog, DialogState(), table=scenario.table).state
    assert rebuilt == bot.state
    # a new process resumes from the file where the conversation was
    resumed = DialogBot(scenario, ScriptedBackend(lambda r: next(answers)), log=JsonlLog(log_path),
                        clock=lambda: 0.0)
    assert resumed.state.status == "users" and resumed.state.variables == {"goal": "better tool"}
    resumed.respond("me")
    assert resumed.state.status == "must_haves"


def test_prompt_only_bot_claims_steps_under_the_same_contract() -> None:
    scenario = parse_scenario(MINI)
    backend = ScriptedBackend([answer("Which colour?", "ask"), answer("Thanks", "done", {"colour": "red"})])
    bot = PromptOnlyBot(scenario, backend, clock=lambda: 0.0)
    bot.respond("hi")
    assert not bot.finished
    bot.respond("red")
    assert bot.finished and bot.state.claimed_step == "done" and bot.state.variables == {"colour": "red"}
    assert "Ask for a colour." in backend.requests[0].prompt and "User: hi" in backend.requests[1].prompt


# ----------------------------------------------------------------------------- simulations, stats
def test_user_scripts_cover_both_scenarios_with_expectations() -> None:
    users = load_user_scripts(ROOT / "data" / "dialog" / "users")
    assert len(users) >= 20
    assert {u.scenario for u in users} == {"analyst", "support"}
    scenarios = {"analyst": load_scenario(ANALYST), "support": load_scenario(SUPPORT)}
    for user in users:
        scenario = scenarios[user.scenario]
        assert user.expect_step in scenario.steps, user.name
        assert set(user.expect_variables) <= {f.name for f in scenario.variables}, user.name


def test_adherence_checks_step_and_words() -> None:
    user = UserScript("u", "mini", ("x",), "done", {"colour": ("red",), "tags": ("a", "b")})
    assert adherence(user, "done", {"colour": "Dark RED", "tags": ["A", "b"]}) == []
    misses = adherence(user, "ask", {"colour": "blue", "tags": ["a"]})
    assert len(misses) == 3


def test_run_user_and_summary_count_calls() -> None:
    backend = ScriptedBackend(["{", answer("ok", "stay"), answer("Thanks", "next", {"colour": "red"})])
    bot = DialogBot(parse_scenario(MINI), backend, clock=lambda: 0.0)
    result = run_user(bot, UserScript("u", "mini", ("hi", "red", "ignored"), "done", {"colour": ("red",)}), "machine")
    assert result.adhered and result.user_messages == 2 and result.calls == 3 and result.reasks == 1
    row = summarize([result])
    assert row["calls_per_message"] == 1.5 and row["adhered"] == 1 and row["reasks_repaired"] == 1


def test_wilson_interval_matches_hand_computed_values() -> None:
    assert wilson_interval(0, 10) == (0.0, 0.2775)
    assert wilson_interval(10, 10) == (0.7225, 1.0)
    assert wilson_interval(5, 10) == (0.2366, 0.7634)
    assert wilson_interval(0, 0) == (0.0, 1.0)
    with pytest.raises(ValueError):
        wilson_interval(3, 2)


# ----------------------------------------------------------------------------- diagram, viewer
def test_drawio_export_is_valid_mxgraph() -> None:
    table = load_scenario(SUPPORT).table
    root = ET.fromstring(to_drawio(table))
    assert root.tag == "mxfile"
    cells = root.findall("./diagram/mxGraphModel/root/mxCell")
    vertices = {c.get("id"): c for c in cells if c.get("vertex") == "1"}
    edges = [c for c in cells if c.get("edge") == "1"]
    assert {v.get("value") for v in vertices.values()} == set(table.states)
    assert len(edges) == len(table.rows)
    for edge, row in zip(edges, table.rows, strict=True):
        assert edge.get("source") in vertices and edge.get("target") in vertices
        source, target = vertices[edge.get("source")], vertices[edge.get("target")]
        assert (source.get("value"), edge.get("value"), target.get("value")) == (row.source, row.event, row.dest)
        assert edge.find("mxGeometry").get("as") == "geometry"
    assert len({c.get("id") for c in cells}) == len(cells)


def test_viewer_data_shows_calls_reasks_and_changes_live() -> None:
    viewer = ChatViewer()
    backend = ScriptedBackend(["{", answer("Thanks", "next", {"colour": "red"})])
    bot = DialogBot(parse_scenario(MINI), backend, clock=lambda: 0.0, on_event=viewer.push)
    bot.respond("red")
    turns = viewer.turns
    assert len(turns) == 1
    view = turns[0]
    assert view.user == "red" and view.step_before == "ask" and view.step_after == "done"
    assert view.calls == 2 and view.reasked
    kinds = [e.kind for e in view.log]
    assert kinds == ["call", "call", "variable", "transition"]
    assert view.log[0].details["violation"] == "not_json" and view.log[0].details["prompt"]
    assert view.bot == ["Thanks", "Thanks."]
    assert "re-asked" in viewer.html.value and "&lt;" not in view.user
    assert conversation_view(bot.events) == turns


# ----------------------------------------------------------------------------- command line
def test_diagram_command_reads_a_scenario_and_writes_drawio(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from labkit.cli import main

    target = tmp_path / "analyst.drawio"
    assert main(["diagram", str(ANALYST), "--drawio", str(target)]) == 0
    assert "goal --> users : next" in capsys.readouterr().out
    assert ET.parse(target).getroot().tag == "mxfile"


def test_a_broken_scenario_is_a_clear_cli_error(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from labkit.cli import main

    bad = tmp_path / "bad.yaml"
    bad.write_text(MINI.replace("to: done", "to: nowhere"))
    assert main(["diagram", str(bad)]) == 2
    assert f"{bad}:9:7: signal 'next' of step 'ask' leads to unknown step 'nowhere'" \
        in capsys.readouterr().err


def test_models_list_shows_kind_and_presence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture) -> None:
    from labkit.cli import main

    monkeypatch.setenv("LABKIT_CACHE", str(tmp_path))
    assert main(["models", "list"]) == 0
    out = capsys.readouterr().out
    rows = {line.split()[0]: line.split()[1:4] for line in out.splitlines()[1:]}
    assert rows["qwen2.5-coder-1.5b"] == ["chat", "1,117,320,768", "no"]
    assert rows["gemma3-270m"][0] == "base"


def test_chat_script_replays_a_recorded_conversation(capsys: pytest.CaptureFixture) -> None:
    from labkit.cli import main
    from labkit.compare.runs import read_rows

    run = ROOT / "data" / "dialog" / "runs" / "gemma3-270m"
    cassette = run / "cassettes" / "machine.jsonl"
    expected = next(r for r in read_rows(run / "runs.jsonl") if r["arm"] == "machine" and r["task"] == "s01_happy")
    assert main(["chat", str(SUPPORT), "--script", str(ROOT / "data" / "dialog" / "users" / "s01_happy.yaml"),
                 "--arm", "bare_machine", "--replay", str(cassette)]) == 0
    out = capsys.readouterr().out
    assert "[1] user: The app crashes every time I open my profile page." in out
    assert f"-- ended in step {expected['end_step']}; {expected['calls']} model call(s)" in out


def test_a_crash_mid_turn_resumes_without_repeating_the_user_message(tmp_path: Path) -> None:
    from labkit.llm.errors import BackendError

    scenario = parse_scenario(MINI)
    log_path = tmp_path / "c.jsonl"

    def down(request):
        raise BackendError("the model process died")

    bot = DialogBot(scenario, ScriptedBackend(down), log=JsonlLog(log_path), clock=lambda: 0.0)
    with pytest.raises(BackendError):
        bot.respond("red")
    resumed = DialogBot(scenario, ScriptedBackend([answer("Red.", "next", {"colour": "red"})]), log=JsonlLog(log_path),
                        clock=lambda: 0.0)
    assert resumed.state.pending_user and resumed.state.user_messages == 1
    resumed.respond("red")
    assert resumed.state.status == "done" and resumed.state.user_messages == 1
    assert [e.type for e in resumed.events].count("dialog_user") == 1


def test_rows_read_back_give_the_legacy_summary() -> None:
    from labkit.compare.runs import read_rows
    from labkit.dialog.simulate import result_from_dict

    recorded = [r for r in read_rows(ROOT / "data" / "dialog" / "runs" / "gemma3-270m" / "runs.jsonl")
                if r["arm"] == "machine"]
    machine = [result_from_dict(r) for r in recorded]
    assert [r.misses for r in machine] == [tuple(r["legacy_misses"]) for r in recorded]
    summary = summarize(machine)
    assert summary["calls"] == sum(r["calls"] for r in recorded) and summary["adhered"] == 2  # the legacy 2/22

