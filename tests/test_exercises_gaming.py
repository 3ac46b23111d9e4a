"""Answers that game a checker are refused, and three plausible wrong answers per exercise fail.

A checker that a shortcut can satisfy teaches the shortcut. Each test here writes the answer a
learner in a hurry might write (or one a plausible misunderstanding produces) and checks that the
checker names what is wrong with it.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from labkit.course.exercises import exercise_number, exercises_root, run_check


def _mutated(folder: str, tmp_path: Path, *pairs: tuple[str, str]) -> Path:
    """The solution of ``folder`` with each ``old`` replaced by ``new``, written to a file."""
    text = (exercises_root() / folder / "solution.py").read_text(encoding="utf-8")
    for before, after in pairs:
        assert before in text, f"the mutation target is gone from {folder}/solution.py: {before!r}"
        text = text.replace(before, after)
    target = tmp_path / "mine.py"
    target.write_text(text, encoding="utf-8")
    return target


# ----------------------------------------------------------------------------- exercise 01a
SPEC = ", which is not where the specification ends this run"



def test_01_a_fix_that_declares_success_without_retesting_is_refused(tmp_path: Path):
    mine = _mutated("01a_transition_table", tmp_path, ('    Row("FIX", "give_up", "FAILED"),\n',
                                                      '    Row("FIX", "give_up", "FAILED"),\n'
                                                      '    Row("FIX", "tests_passed", "DONE"),\n'))
    report = run_check("01a", mine)
    assert report.feedback == [
        "row (FIX, tests_passed -> DONE) is not in the specification: the specification does not handle "
        "'tests_passed' in FIX; the machine must reject it"]


def test_01_a_guard_that_believes_the_payload_is_refused(tmp_path: Path):
    mine = _mutated("01a_transition_table", tmp_path, ("    return state.retries_used < MAX_RETRIES\n",
                                                      "    return payload.get(\"retries_left\", 1) > 0\n"))
    report = run_check("01a", mine)
    assert not report.passed
    assert "a third invalid plan fails, whatever its payload says: ended in PLAN" + SPEC in report.feedback


def test_01_a_reducer_that_never_counts_retries_fails(tmp_path: Path):
    mine = _mutated("01a_transition_table", tmp_path, ("retries_used=state.retries_used + retried",
                                                      "retries_used=state.retries_used"))
    report = run_check("01a", mine)
    assert "a third invalid plan fails, whatever its payload says: ended in PLAN" + SPEC in report.feedback


def test_01_counting_only_plan_retries_misses_the_shared_budget(tmp_path: Path):
    mine = _mutated("01a_transition_table", tmp_path, ('event.trigger in ("plan_invalid", "tests_failed")',
                                                      'event.trigger == "plan_invalid"'))
    report = run_check("01a", mine)
    assert [f for f in report.feedback if "hidden" not in f] == [
        "the budget is shared: an invalid plan and a failed test use it up: ended in FIX" + SPEC]


def test_01_a_patch_sent_back_to_editing_is_named(tmp_path: Path):
    mine = _mutated("01a_transition_table", tmp_path, ('Row("FIX", "patch_ready", "TEST")',
                                                      'Row("FIX", "patch_ready", "EDIT")'))
    report = run_check("01a", mine)
    assert [f for f in report.feedback if "hidden" not in f] == [
        "missing row (FIX, patch_ready -> TEST)",
        "row (FIX, patch_ready -> EDIT) is not in the specification: the specification sends this event elsewhere",
        "failing tests lead to a fix and back to testing: ended in EDIT" + SPEC,
        "the budget is shared: an invalid plan and a failed test use it up: event 'tests_failed' was refused in "
        "state 'EDIT'",
    ]


def test_01_an_off_by_one_budget_is_caught(tmp_path: Path):
    mine = _mutated("01a_transition_table", tmp_path, ("state.retries_used < MAX_RETRIES",
                                                      "state.retries_used <= MAX_RETRIES"))
    assert not run_check("01a", mine).passed


# ----------------------------------------------------------------------------- exercise 02b

EX03 = "02b_predict_states"
SPEC = ", which is not where the specification ends this run"
NOT_RIGHT = "not right yet: a predicted state or the outcome is wrong"


def _solution_predictions() -> str:
    return (exercises_root() / EX03 / "solution.py").read_text(encoding="utf-8")


def test_03_a_file_that_imports_the_runner_is_refused(tmp_path: Path):
    runner = exercises_root() / EX03 / "scenarios.py"
    cheat = (
        "import importlib.util\n"
        f"spec = importlib.util.spec_from_file_location('s', {str(runner)!r})\n"
        "s = importlib.util.module_from_spec(spec)\n"
        "spec.loader.exec_module(s)\n"
        "from labkit import Transitioned, replay\n"
        "from labkit.runtime import empty_run_state, reduce_run\n"
        "PREDICTIONS, OUTCOMES = {}, {}\n"
        "for name in s.SCENARIOS:\n"
        "    events = s.run_scenario(name)\n"
        "    result = replay(events, reduce_run, empty_run_state())\n"
        "    start, stop = s.window_bounds(events)\n"
        "    PREDICTIONS[name] = [result.states[i].status for i in range(start, stop)\n"
        "                         if isinstance(events[i], Transitioned)]\n"
        "    OUTCOMES[name] = result.state.outcome\n")
    (tmp_path / "mine.py").write_text(cheat, encoding="utf-8")
    report = run_check("02b", tmp_path / "mine.py")
    solution = run_check("02b", solution=True)
    assert solution.passed  # the cheat computes the right answers: only the refusal stops it
    assert report.feedback[0].startswith("mine.py must hold only your predictions")
    assert "line 1: an import" in report.feedback[0]


def test_03_computing_answers_with_a_call_is_refused_even_without_imports(tmp_path: Path):
    text = _solution_predictions().replace('"strict_denial": ["FAILED"]', '"strict_denial": list(["FAILED"])')
    assert text != _solution_predictions()
    (tmp_path / "mine.py").write_text(text, encoding="utf-8")
    report = run_check("02b", tmp_path / "mine.py")
    assert len(report.feedback) == 1 and "a call" in report.feedback[0]


def test_03_code_hidden_in_an_annotation_is_refused(tmp_path: Path):
    """An annotation is evaluated when the module runs, so `X: exec(...) = {}` would run code; it is refused."""
    text = _solution_predictions().replace("OUTCOMES: dict[str, str] = {", "OUTCOMES: exec('pass') = {")
    assert text != _solution_predictions()
    (tmp_path / "mine.py").write_text(text, encoding="utf-8")
    report = run_check("02b", tmp_path / "mine.py")
    assert len(report.feedback) == 1 and "a call" in report.feedback[0]


def test_03_feedback_does_not_give_the_true_state_away(tmp_path: Path):
    """A learner who copies states out of the feedback, round after round, never reaches a pass."""
    text = _solution_predictions()
    wrong = re.sub(r'("\w+": )\[[^\]]*\]', r'\1["PLANNING"]', text)
    wrong = re.sub(r'("\w+": )"(succeeded|failed|needs_review)"', r'\1"incomplete"', wrong)
    mine = tmp_path / "mine.py"
    mine.write_text(wrong, encoding="utf-8")
    for _ in range(8):  # each round: take every state or outcome the feedback names as "the truth"
        report = run_check("02b", mine)
        assert not report.passed
        assert not any("the replay says" in item or "the run ended" in item for item in report.feedback)
        before = mine.read_text(encoding="utf-8")
        after = before
        for item in report.feedback:
            told = re.search(r"^(\w+): .*(?:replay says|ended) '?(\w+)'?", item)
            if told:
                after = after.replace(f'"{told[1]}": ["PLANNING"]', f'"{told[1]}": ["{told[2]}"]')
        mine.write_text(after, encoding="utf-8")
        if after == before:
            break
    assert not run_check("02b", mine).passed


def test_03_a_wrong_state_is_reported_by_position_and_rows_only(tmp_path: Path):
    mine = _mutated(EX03, tmp_path, ('"lost_write": ["UNKNOWN", "EXECUTING", "OBSERVING", "COMMITTING", "SUCCEEDED"]',
                                     '"lost_write": ["FAILED", "EXECUTING", "OBSERVING", "COMMITTING", "SUCCEEDED"]'))
    report = run_check("02b", mine)
    assert len(report.feedback) == 1 and report.feedback[0].startswith(f"lost_write: {NOT_RIGHT}")
    assert "EXECUTING" not in report.feedback[0] and "transition 1" not in report.feedback[0]


@pytest.mark.parametrize(("old", "new", "expected_start"), [
    ('"strict_denial": ["FAILED"]', '"strict_denial": ["WAITING_HUMAN"]', f"strict_denial: {NOT_RIGHT}"),
    ('"status_blind": ["UNKNOWN", "UNKNOWN", "UNKNOWN", "UNKNOWN", "UNKNOWN", "FAILED"]',
     '"status_blind": ["UNKNOWN", "UNKNOWN", "UNKNOWN", "UNKNOWN", "FAILED"]',
     "status_blind: you predicted 5 state(s), but the window has 6"),
    ('"status_blind": "needs_review"', '"status_blind": "failed"', f"status_blind: {NOT_RIGHT}"),
])
def test_03_plausible_wrong_predictions_fail(tmp_path: Path, old: str, new: str, expected_start: str):
    report = run_check("02b", _mutated(EX03, tmp_path, (old, new)))
    assert len(report.feedback) == 1 and report.feedback[0].startswith(expected_start), report.feedback


# ----------------------------------------------------------------------------- exercises 02a, 03a, 04a
# (tests/test_exercises_runtime.py holds more mutations of these; each exercise has at least three in all)

WRONG_ANSWERS = [
    ("02a_validator", "the allowlist is skipped for a tool that has a schema",
     ("if action not in SCHEMAS or action not in policy.allowlist:", "if action not in SCHEMAS:"),
     "validate, a known tool outside the allowlist: returned a Token, but this proposal must be denied"),
    ("02a_validator", "an off-by-one budget lets the last call through",
     ("if tool_calls_left < 1:", "if tool_calls_left < 0:"),
     "validate, a proposal with no tool calls left: returned a Token, but this proposal must be denied"),
    ("02a_validator", "choose keeps only the last denial",
     ("    return denials\n", "    return denials[-1:]\n"),
     "choose, no candidate passes: returned ['bad_args']; when no candidate passes, return every "
     "candidate's denial, in order"),
    ("03a_replay_and_compare", "a log that lost its last event is called whole",
     ("    if len(recorded) > len(events):\n        return len(events)\n", ""),
     "first_divergence, the log lost its last event: returned None, which is not the first divergence"),
    ("03a_replay_and_compare", "timeouts are not counted as retries",
     ('        changes["retries"] = state.retries + 1\n', "        pass\n"),
     "reduce, run 'a read retried after timeouts': first wrong after #3 READING --timeout--> READING "
     "{'retries_left': 2}: retries is 0 (that is not what the README's rules give here)"),
    ("03a_replay_and_compare", "the divergence is reported one event early",
     ("            return event.seq\n", "            return position - 1\n"),
     "first_divergence, a reducer that forgets retries: returned 2, which is not the first divergence"),
    ("04a_free_loop_vs_machine", "every save counts as a repeat, the first one too",
     ("return sum(n - 1 for n in counts.values())", "return sum(n for n in counts.values())"),
     "repeated_side_effects(machine seed 0): returned 1, which is not the count in this run's logs"),
    ("04a_free_loop_vs_machine", "a status check that found the draft is not taken as success",
     ('''                               or (isinstance(e, StatusChecked) and e.action_id == action_id
                                   and e.outcome == "present") for e in run.events[:i])''',
      " for e in run.events[:i])"),
     "unknown_writes_as_success(machine seed 4): returned 1, which is not the count in this run's logs"),
    ("04a_free_loop_vs_machine", "the machine is assumed never to stop on the model's word",
     ('        return int(state.outcome == "succeeded" and not goal_met(run.task.goal, state))', "        return 0"),
     "stopped_on_models_word(doctored: write committed unobserved): returned 0, which is not the "
     "count in this run's logs"),
]


@pytest.mark.parametrize(("folder", "mistake", "change", "first_feedback"), WRONG_ANSWERS,
                         ids=[f"{exercise_number(w[0])}: {w[1]}" for w in WRONG_ANSWERS])
def test_a_plausible_wrong_answer_fails_with_a_precise_message(tmp_path: Path, folder: str, mistake: str,
                                                               change: tuple[str, str], first_feedback: str):
    report = run_check(exercise_number(folder), _mutated(folder, tmp_path, change))
    assert report.feedback and report.feedback[0] == first_feedback, (mistake, report.feedback)
