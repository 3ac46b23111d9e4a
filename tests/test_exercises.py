"""Every exercise's checker passes its solution and fails its untouched student file.

Both directions matter: a checker that fails the solution is broken, and one that passes the
student file as handed out is toothless.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from labkit.exercises import exercises_root, run_check

EXERCISES = sorted(p.name for p in exercises_root().glob("[0-9][0-9]_*") if p.is_dir())


def test_there_are_exercises():
    assert EXERCISES, "exercises/ holds no NN_topic folders"


@pytest.mark.parametrize("name", EXERCISES)
def test_each_exercise_is_complete(name):
    folder = exercises_root() / name
    for part in ("README.md", "student.py", "solution.py", "probe.py", "check.py"):
        assert (folder / part).is_file(), f"{name} lacks {part}"


@pytest.mark.parametrize("name", EXERCISES)
def test_the_solution_passes(name):
    report = run_check(name[:2], solution=True)
    assert report.passed, report.render()


@pytest.mark.parametrize("name", EXERCISES)
def test_the_untouched_student_file_fails(name):
    report = run_check(name[:2])
    assert not report.passed
    assert all(item.strip() for item in report.feedback)


def test_the_command_line_reports_and_sets_the_exit_code():
    ok = subprocess.run([sys.executable, "-m", "labkit", "check", "01", "--solution"], capture_output=True, text=True)
    assert ok.returncode == 0 and "PASSED" in ok.stdout
    todo = subprocess.run([sys.executable, "-m", "labkit", "check", "01"], capture_output=True, text=True)
    assert todo.returncode == 1 and "NOT YET" in todo.stdout
    missing = subprocess.run([sys.executable, "-m", "labkit", "check", "99"], capture_output=True, text=True)
    assert missing.returncode == 2 and "no exercise numbered 99" in missing.stderr


def test_exercise_01_names_a_missing_row_precisely(tmp_path: Path):
    solution = (exercises_root() / "01_transition_table" / "solution.py").read_text()
    broken = solution.replace('for state in ("DISCOVER", "PLAN", "EDIT", "TEST", "FIX")',
                              'for state in ("DISCOVER", "PLAN", "EDIT", "TEST")')
    assert broken != solution
    (tmp_path / "mine.py").write_text(broken)
    report = run_check("01", tmp_path / "mine.py")
    assert [f for f in report.feedback if "hidden" not in f] == ["missing row (FIX, timeout -> FAILED)",
                               "a timeout in FIX fails: event 'timeout' was refused in state 'FIX'"]


def test_a_file_that_does_not_import_gets_the_line_and_error(tmp_path: Path):
    (tmp_path / "mine.py").write_text("from labkit import Row\n\nROWS = [Row('A', 'b')\n")
    report = run_check("01", tmp_path / "mine.py")
    assert len(report.feedback) == 1
    assert report.feedback[0].startswith("importing mine.py failed at line 3: SyntaxError")


def test_an_exercise_file_may_use_postponed_annotations_in_dataclasses(tmp_path: Path):
    solution = (exercises_root() / "01_transition_table" / "solution.py").read_text()
    extra = "\n\nfrom dataclasses import dataclass\n\n\n@dataclass\nclass Note:\n    text: 'str'\n"
    (tmp_path / "mine.py").write_text("from __future__ import annotations\n" + solution + extra)
    assert run_check("01", tmp_path / "mine.py").passed
