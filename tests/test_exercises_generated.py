"""Student files are generated from their solutions, and a stale one fails CI.

The given code of an exercise (helpers, data, signatures, docstrings) lives once, in solution.py;
student.py is that file with the answer regions replaced by their stubs. A solution edited without
regenerating its student file would hand learners a different exercise from the one checked.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from labkit.core.errors import LabkitError
from labkit.course.exercises import (
    exercise_folders,
    exercises_root,
    has_solution_regions,
    stale_student_files,
    student_text,
)

EXERCISES = [p.name for p in exercise_folders()]


@pytest.mark.parametrize("name", EXERCISES)
def test_every_exercise_marks_its_answer_regions(name: str):
    """An exercise without regions would keep a hand-written student file that nothing checks for staleness."""
    solution = (exercises_root() / name / "solution.py").read_text(encoding="utf-8")
    assert has_solution_regions(solution), f"{name}/solution.py marks no '# BEGIN SOLUTION' region"


def test_no_committed_student_file_is_stale():
    stale = stale_student_files()
    assert not stale, f"regenerate with `python scripts/make_student_files.py`: {[str(p) for p in stale]}"


def test_an_edited_solution_makes_its_student_file_stale(tmp_path: Path):
    folder = tmp_path / "01a_demo"
    folder.mkdir()
    (folder / "solution.py").write_text("X = 1\n# BEGIN SOLUTION\nY = 2\n# STUB: Y = 0  # TODO\n# END SOLUTION\n")
    (folder / "student.py").write_text("X = 1\nY = 0  # TODO\n")
    assert stale_student_files(tmp_path) == []
    (folder / "solution.py").write_text("X = 5\n# BEGIN SOLUTION\nY = 2\n# STUB: Y = 0  # TODO\n# END SOLUTION\n")
    assert stale_student_files(tmp_path) == [folder / "student.py"]


def test_the_script_check_mode_exits_1_on_a_stale_file():
    script = Path(__file__).resolve().parent.parent / "scripts" / "make_student_files.py"
    result = subprocess.run([sys.executable, str(script), "--check"], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_region_becomes_its_stubs_at_their_indentation():
    solution = ("def f(x: int) -> int:\n"
                "    \"\"\"Double x.\"\"\"\n"
                "    # BEGIN SOLUTION\n"
                "    return 2 * x\n"
                "    # STUB: # TODO: double it\n"
                "    # STUB: return 0\n"
                "    # END SOLUTION\n")
    assert student_text(solution) == ("def f(x: int) -> int:\n"
                                      "    \"\"\"Double x.\"\"\"\n"
                                      "    # TODO: double it\n"
                                      "    return 0\n")


def test_a_region_without_stubs_becomes_a_todo_and_answer_only_imports_get_a_note():
    solution = "import json\n\nDATA = {\n    # BEGIN SOLUTION\n    'a': json.dumps(1),\n    # END SOLUTION\n}\n"
    assert student_text(solution) == ("import json  # noqa: F401 - your answer needs it\n\n"
                                      "DATA = {\n    # TODO\n}\n")


@pytest.mark.parametrize(("text", "message"), [
    ("# BEGIN SOLUTION\nx = 1\n", "solution.py:1: '# BEGIN SOLUTION' is never closed"),
    ("x = 1\n# END SOLUTION\n", "solution.py:2: '# END SOLUTION' without a '# BEGIN SOLUTION'"),
    ("# BEGIN SOLUTION\n# BEGIN SOLUTION\n", "solution.py:2: '# BEGIN SOLUTION' inside the region opened at line 1"),
])
def test_unbalanced_markers_are_refused_with_the_line(text: str, message: str):
    with pytest.raises(LabkitError) as caught:
        student_text(text)
    assert caught.value.message == message
