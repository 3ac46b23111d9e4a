"""`labkit grade`: a generated class (right, wrong, crashing, looping, hostile) gets the right row for each."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

from labkit.core.sandbox import MODE_ENV, sandbox_mode
from labkit.course.grade import grade
from labkit.course.grade_bench import KINDS, make_class, row_is_right


def test_every_kind_of_submission_gets_its_row_and_none_stops_the_others(tmp_path: Path) -> None:
    outside = tmp_path / "outside" / "pwned.txt"
    outside.parent.mkdir()
    kinds = make_class(tmp_path / "class", len(KINDS), "09a", outside)
    rows = grade(tmp_path / "class", "09a", timeout=4)
    assert [r.learner for r in rows] == sorted(kinds)
    contained = sandbox_mode() == "bwrap"  # limits-only cannot stop a write: labkit grade says so (next tests)
    for row in rows:
        if kinds[row.learner] != "hostile_write" or contained:
            assert row_is_right(row, kinds[row.learner]), row
    by_kind = {kinds[r.learner]: r for r in rows}
    assert by_kind["right"].passed and by_kind["right"].failed == ()
    assert "blame, the deepest planned frame" in by_kind["wrong"].failed
    assert "did not finish within 4 s" in by_kind["looping"].error
    assert by_kind["crashing"].error.startswith("importing learner03_crashing.py failed at line")
    assert not outside.exists() or not contained  # the hostile write reached nothing outside its sandbox
    assert by_kind["hostile_modules"].failed and not by_kind["hostile_modules"].passed


def test_the_command_says_before_grading_when_the_sandbox_cannot_contain_a_file(tmp_path: Path) -> None:
    folder = tmp_path / "class"
    make_class(folder, 1, "09a", tmp_path / "x.txt")
    command = [sys.executable, "-m", "labkit", "grade", str(folder), "--exercise", "09a"]
    limited = subprocess.run(command, capture_output=True, text=True, timeout=120,
                             env={**os.environ, MODE_ENV: "limits-only"})
    assert limited.returncode == 0, limited.stderr
    assert "the sandbox is limits-only here (LABKIT_SANDBOX=limits-only asks for it)" in limited.stderr
    assert "could read and write your files" in limited.stderr and f"Fix: unset {MODE_ENV}" in limited.stderr
    if sandbox_mode() == "bwrap":
        full = subprocess.run(command, capture_output=True, text=True, timeout=120,
                              env={k: v for k, v in os.environ.items() if k != MODE_ENV})
        assert full.returncode == 0 and "limits-only" not in full.stderr, full.stderr


def test_the_command_prints_a_table_and_writes_the_csv(tmp_path: Path) -> None:
    folder = tmp_path / "class"
    make_class(folder, 2, "09a", tmp_path / "x.txt")  # a right and a wrong submission
    out = tmp_path / "grades.csv"
    proc = subprocess.run([sys.executable, "-m", "labkit", "grade", str(folder), "--exercise", "09a",
                           "--csv", str(out)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "exercise 09a: 1 of 2 passed" in proc.stdout
    rows = list(csv.DictReader(out.open(encoding="utf-8")))
    assert [(r["learner"], r["passed"]) for r in rows] == [("learner01_right", "yes"), ("learner02_wrong", "no")]
    assert "blame, the deepest planned frame" in rows[1]["failed_cases"] and rows[1]["error"] == ""


def test_an_empty_or_missing_folder_is_a_clear_error(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "labkit", "grade", str(tmp_path), "--exercise", "09a"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "no .py files in" in proc.stderr


def test_an_old_exercise_number_says_the_new_one_in_the_grade_command(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "labkit", "grade", str(tmp_path), "--exercise", "09"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert f"exercise 09 is now 09a (test routing): run `labkit grade {tmp_path} --exercise 09a`" in proc.stderr
