"""Mutation tests for exercises 05a and 05b: plausible wrong solutions fail with a message naming the mistake."""

from __future__ import annotations

from pathlib import Path

import pytest

from labkit.course.exercises import exercises_root, run_check


def _mutated(folder: str, old: str, new: str, tmp_path: Path) -> Path:
    text = (exercises_root() / folder / "solution.py").read_text(encoding="utf-8")
    assert old in text, f"the mutation target is gone from {folder}/solution.py: {old!r}"
    target = tmp_path / "mine.py"
    target.write_text(text.replace(old, new), encoding="utf-8")
    return target


@pytest.mark.parametrize("old,new,expected", [
    # forgetting `needs`: the eager model leaves the step without a date
    ("next: {to: done, needs: [date], when: the guest gave a date}", "next: {to: done, when: the guest gave a date}",
     "a guest who does not know the date yet (Anna / no idea yet / maybe later): the dialog ended in 'done', "
     "which is not where this conversation must be"),
    # `back` pointing at the wrong step
    ("back: {to: name, when: the guest wants to change the name}",
     "back: {to: date, when: the guest wants to change the name}",
     "step 'date': signal 'back' leads to 'date', which is not where the README sends it"),
    # no way back at all
    ("      back: {to: name, when: the guest wants to change the name}\n", "",
     "step 'date': signal 'back' is missing"),
    # `needs` naming the result of the step before: it is known, so the eager model moves on without a date
    ("next: {to: done, needs: [date], when: the guest gave a date}",
     "next: {to: done, needs: [name], when: the guest gave a date}",
     "a guest who does not know the date yet (Anna / no idea yet / maybe later): the dialog ended in 'done', "
     "which is not where this conversation must be"),
    # the result declared as a list
    ("date: {type: string, description: the day of the booking}", "date: {type: list}",
     "step 'date': results must hold 'date' of type string, got {'date': 'list'}"),
])
def test_06_wrong_steps_are_named(tmp_path: Path, old: str, new: str, expected: str) -> None:
    report = run_check("05a", _mutated("05a_dialog_step", old, new, tmp_path))
    assert not report.passed
    assert expected in report.feedback


@pytest.mark.parametrize("old,new,expected", [
    # needs checked against this answer's results only, forgetting what was known before
    ("if _empty(data[\"results\"].get(n)) and _empty(known.get(n))]", "if _empty(data[\"results\"].get(n))]",
     "check_answer, a next whose goal was given earlier: got missing_results, which is not the "
     "contract's verdict (this answer keeps the contract)"),
    # no unknown-signal check
    ("    if data[\"signal\"] not in signals:\n", "    if False:\n",
     "check_answer, a signal the step does not have: got a pass, which is not the contract's verdict"),
    # extra fields tolerated
    ("    if set(data) != set(FIELDS):\n", "    if not set(FIELDS) <= set(data):\n",
     "check_answer, an extra field: got a pass, which is not the contract's verdict"),
    # a truthiness test for "missing" lets an empty goal through? no: it refuses an empty summary instead
    ("    if not data[\"message\"].strip():\n", "    if not data[\"message\"].strip() or not data[\"summary\"]:\n",
     "check_answer, a back with an empty summary: got wrong_shape, which is not the contract's "
     "verdict (this answer keeps the contract)"),
    # a re-ask that does not say what was wrong
    ("f\"Your answer broke the contract: {violation.detail}. ", "f\"Your answer broke the contract. ",
     "reask_message: quote the violation's detail, so the model knows what was wrong"),
])
def test_07_wrong_validators_are_named(tmp_path: Path, old: str, new: str, expected: str) -> None:
    report = run_check("05b", _mutated("05b_contract_validator", old, new, tmp_path))
    assert not report.passed
    assert expected in report.feedback
