"""Every exercise's checker passes its solution and fails its untouched student file.

Both directions matter: a checker that fails the solution is broken, and one that passes the
student file as handed out is toothless.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from labkit.core.errors import LabkitError
from labkit.course.exercises import RENAMED, exercise_folders, exercise_number, exercises_root, find_exercise, run_check

EXERCISES = [p.name for p in exercise_folders()]


def test_there_are_exercises():
    assert EXERCISES, "exercises/ holds no NNx_topic folders"


@pytest.mark.parametrize("name", EXERCISES)
def test_each_exercise_is_complete(name):
    folder = exercises_root() / name
    for part in ("README.md", "student.py", "solution.py", "probe.py", "check.py"):
        assert (folder / part).is_file(), f"{name} lacks {part}"


@pytest.mark.parametrize("name", EXERCISES)
def test_the_solution_passes(name):
    report = run_check(exercise_number(name), solution=True)
    assert report.passed, report.render()


@pytest.mark.parametrize("name", EXERCISES)
def test_the_untouched_student_file_fails(name):
    report = run_check(exercise_number(name))
    assert not report.passed
    assert all(item.strip() for item in report.feedback)


def test_the_command_line_reports_and_sets_the_exit_code():
    ok = subprocess.run([sys.executable, "-m", "labkit", "check", "01a", "--solution"], capture_output=True, text=True)
    assert ok.returncode == 0 and "PASSED" in ok.stdout
    todo = subprocess.run([sys.executable, "-m", "labkit", "check", "01a"], capture_output=True, text=True)
    assert todo.returncode == 1 and "NOT YET" in todo.stdout
    missing = subprocess.run([sys.executable, "-m", "labkit", "check", "99a"], capture_output=True, text=True)
    assert missing.returncode == 2 and "no exercise numbered 99a" in missing.stderr


def test_exercise_01a_names_a_missing_row_precisely(tmp_path: Path):
    solution = (exercises_root() / "01a_transition_table" / "solution.py").read_text()
    broken = solution.replace('for state in ("DISCOVER", "PLAN", "EDIT", "TEST", "FIX")',
                              'for state in ("DISCOVER", "PLAN", "EDIT", "TEST")')
    assert broken != solution
    (tmp_path / "mine.py").write_text(broken)
    report = run_check("01a", tmp_path / "mine.py")
    assert [f for f in report.feedback if "hidden" not in f] == ["missing row (FIX, timeout -> FAILED)",
                               "a timeout in FIX fails: event 'timeout' was refused in state 'FIX'"]


def test_a_file_that_does_not_import_gets_the_line_and_error(tmp_path: Path):
    (tmp_path / "mine.py").write_text("from labkit import Row\n\nROWS = [Row('A', 'b')\n")
    report = run_check("01a", tmp_path / "mine.py")
    assert len(report.feedback) == 1
    assert report.feedback[0].startswith("importing mine.py failed at line 3: SyntaxError")


def test_an_exercise_file_may_use_postponed_annotations_in_dataclasses(tmp_path: Path):
    solution = (exercises_root() / "01a_transition_table" / "solution.py").read_text()
    extra = "\n\nfrom dataclasses import dataclass\n\n\n@dataclass\nclass Note:\n    text: 'str'\n"
    (tmp_path / "mine.py").write_text("from __future__ import annotations\n" + solution + extra)
    assert run_check("01a", tmp_path / "mine.py").passed


@pytest.mark.parametrize(("old", "new"), sorted(RENAMED.items()))
def test_an_old_exercise_number_names_the_exercise_it_became(old: str, new: str):
    folder = find_exercise(new)
    topic = folder.name.split("_", 1)[1].replace("_", " ")
    for given in (old, old.lstrip("0")):
        with pytest.raises(LabkitError) as refused:
            find_exercise(given)
        assert refused.value.message.startswith(f"exercise {old} is now {new} ({topic}): run `labkit check {new}`")


def test_the_old_names_cover_every_old_number_once_and_point_at_real_exercises():
    assert sorted(RENAMED) == [f"{n:02d}" for n in range(1, 10)]
    assert sorted(RENAMED.values()) == [exercise_number(name) for name in EXERCISES]


def test_an_old_number_that_is_also_a_notebook_with_several_exercises_names_them_all():
    """02 was the validator; it is also notebook 02, whose exercises are 02a and 02b: the old name wins, saying so."""
    with pytest.raises(LabkitError) as refused:
        find_exercise("02")
    message = refused.value.message
    assert message.startswith("exercise 02 is now 02a (validator): run `labkit check 02a`")
    assert "notebook 02's exercises are 02a (validator) and 02b (predict states)" in message
    with pytest.raises(LabkitError) as single:
        find_exercise("06")
    assert "notebook 06" not in single.value.message  # 06 is only an old exercise number: nothing to add


@pytest.mark.parametrize("given", ["05a", "5a", "5A", " 05a "])
def test_a_new_number_is_found_with_or_without_its_leading_zero(given: str):
    assert find_exercise(given).name == "05a_dialog_step"


@pytest.mark.parametrize("given", ["10", "10a", "05c", "dialog", "5-a"])
def test_a_number_that_is_no_exercise_lists_the_known_ones(given: str):
    with pytest.raises(LabkitError, match="known exercises: 01a_transition_table, 02a_validator"):
        find_exercise(given)


def test_the_command_line_points_from_an_old_number_to_the_new_one():
    old = subprocess.run([sys.executable, "-m", "labkit", "check", "06"], capture_output=True, text=True)
    assert old.returncode == 2
    assert "exercise 06 is now 05a (dialog step): run `labkit check 05a`" in old.stderr
