"""The course holds together: every lesson and exercise is on the map, and the lessons the map calls complete
have what a self-study learner needs (objectives, prerequisites, time, predictions, a tested quiz, take-aways).

The map (docs/course.md) is the one place that says in which order to take the lessons; a notebook or exercise
missing from it is one a learner never finds. A quiz without an answer key in tests/test_notebook_quizzes.py is
a quiz nobody has shown to be passable.

One numbering: notebooks are numbered in the map's order, and an exercise is named after the notebook it
practises (``05a`` is notebook 05's first). The map, the READMEs, the folders and every ``labkit check`` a
learner is told to run must agree on it, or a learner follows one number to the wrong lesson.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from test_notebook_quizzes import KEYS

from labkit.course.exercises import exercise_folders, exercise_number

ROOT = Path(__file__).resolve().parent.parent
MAP = (ROOT / "docs" / "course.md").read_text(encoding="utf-8")
SOURCES = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.py"))
EXERCISES = [p.name for p in exercise_folders()]
# every lesson has the full course form
COMPLETE = [s.name[:2] for s in SOURCES]
PARTS = {
    "objectives": r"\*\*After this notebook you can\*\*",
    "prerequisites": r"\*\*Prerequisites:\*\*",
    "a time estimate": r"\*\*Time:\*\* about \d+ minutes",
    "a predict-then-see box": r"^predict\w*\(",
    "a wrap-up quiz": r"^quiz = Quiz\(",
    "take-aways": r"^# ## Take-aways$",
    "a link to the glossary": r"\]\(\.\./docs/glossary\.md\)",
}


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.name)
def test_every_notebook_is_on_the_course_map(source: Path):
    assert f"**{source.name[:2]} — " in MAP, f"docs/course.md does not place notebook {source.name}"


@pytest.mark.parametrize("name", EXERCISES)
def test_every_exercise_is_on_the_course_map(name: str):
    assert f"exercise **{exercise_number(name)} — " in MAP, f"docs/course.md does not place exercise {name}"


@pytest.mark.parametrize("number", COMPLETE)
def test_a_complete_lesson_has_every_part(number: str):
    (source,) = [s for s in SOURCES if s.name.startswith(f"{number}_")]
    text = source.read_text(encoding="utf-8")
    missing = [part for part, pattern in PARTS.items() if not re.search(pattern, text, re.M)]
    assert not missing, f"{source.name} lacks {', '.join(missing)}"


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.name)
def test_every_quiz_has_an_answer_key(source: Path):
    if re.search(PARTS["a wrap-up quiz"], source.read_text(encoding="utf-8"), re.M):
        assert source.name in KEYS, f"{source.name} has a quiz but tests/test_notebook_quizzes.py has no key for it"


# ----------------------------------------------------------------------------- one numbering
NOTEBOOK_ROW = re.compile(r"^\| (\d+) \| \*\*(\d\d) — (.+?)\*\* \|")
EXERCISE_ROW = re.compile(r"^\| \| exercise \*\*(\d\d[a-z]) — ")
CHECK = re.compile(r"labkit(?: check| grade [^`\n]*?--exercise) (\d+[a-z]?)\b")
# Where a learner or a teacher is told what to run: every Markdown page and every lesson and exercise file.
INSTRUCTIONS = sorted({*ROOT.glob("*.md"), *(ROOT / "docs").rglob("*.md"), *(ROOT / "notebooks").glob("*.md"),
                       *SOURCES, *(ROOT / "exercises").rglob("*.md"), *(ROOT / "exercises").rglob("*.py")})


def course_map() -> list[tuple[str, list[str]]]:
    """The map's path as (notebook number, the exercises listed under it), in the map's order."""
    path: list[tuple[str, list[str]]] = []
    for line in MAP.splitlines():
        if row := NOTEBOOK_ROW.match(line):
            step, number, _ = row.groups()
            assert int(step) == int(number), f"docs/course.md: step {step} is notebook {number}; they must agree"
            path.append((number, []))
        elif row := EXERCISE_ROW.match(line):
            assert path, f"docs/course.md lists exercise {row.group(1)} before any notebook"
            path[-1][1].append(row.group(1))
    return path


def test_the_map_lists_the_notebooks_in_numeric_order_and_each_under_its_own_number():
    numbers = [number for number, _ in course_map()]
    assert numbers == sorted(numbers), f"docs/course.md takes the notebooks in the order {numbers}, not by number"
    assert numbers == [s.name[:2] for s in SOURCES], "the map's notebooks are not the ones in notebooks/"
    for line in MAP.splitlines():
        if row := NOTEBOOK_ROW.match(line):
            _, number, title = row.groups()
            (source,) = [s for s in SOURCES if s.name.startswith(f"{number}_")]
            heading = source.read_text(encoding="utf-8").splitlines()[1]
            assert heading.startswith(f"# # {number} — {title}"), \
                f"docs/course.md calls notebook {number} '{title}', but {source.name} is headed {heading!r}"


def test_each_exercise_is_numbered_after_the_notebook_it_is_listed_under():
    listed = []
    for notebook, exercises in course_map():
        assert exercises == sorted(exercises), f"notebook {notebook}'s exercises are out of order: {exercises}"
        for number in exercises:
            assert number[:2] == notebook, f"exercise {number} is listed under notebook {notebook} in docs/course.md"
        listed += exercises
    assert listed == [exercise_number(name) for name in EXERCISES], \
        f"docs/course.md lists the exercises {listed}; exercises/ holds {EXERCISES}"
    letters = {}
    for name in EXERCISES:
        letters.setdefault(name[:2], []).append(exercise_number(name)[2])
    for notebook, used in letters.items():
        assert used == [chr(ord("a") + i) for i in range(len(used))], f"notebook {notebook}'s exercises skip a letter"


def test_every_notebook_points_to_its_own_exercises_and_checks_no_other():
    for source in SOURCES:
        text = source.read_text(encoding="utf-8")
        own = [exercise_number(name) for name in EXERCISES if name[:2] == source.name[:2]]
        missing = [number for number in own if not re.search(rf"(?<![0-9a-z]){number}(?![0-9a-z])", text)]
        assert not missing, f"{source.name} never points to its exercise(s) {missing}"
        foreign = [number for number in CHECK.findall(text) if number not in own]
        assert not foreign, f"{source.name} tells the learner to check {foreign}, which practise other notebooks"


def test_the_readme_lists_the_notebooks_in_their_numbered_order():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    (row,) = [line for line in readme.splitlines() if line.startswith("| `notebooks/` |")]
    assert re.findall(r"`(\d\d)` ", row) == [s.name[:2] for s in SOURCES], f"README.md's notebook list: {row}"
    lessons = (ROOT / "notebooks" / "README.md").read_text(encoding="utf-8")
    assert "course.md" in lessons and CHECK.search(lessons), "notebooks/README.md must point to the map and the check"


@pytest.mark.parametrize("document", INSTRUCTIONS, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_instruction_names_an_exercise_that_does_not_exist(document: Path):
    known = {exercise_number(name) for name in EXERCISES}
    wrong = sorted(set(CHECK.findall(document.read_text(encoding="utf-8"))) - known)
    assert not wrong, f"{document.relative_to(ROOT)} says to check exercise(s) {wrong}; there are {sorted(known)}"
