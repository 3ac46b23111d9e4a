"""The course holds together: every lesson and exercise is on the map, and the lessons the map calls complete
have what a self-study learner needs (objectives, prerequisites, time, predictions, a tested quiz, take-aways).

The map (docs/course.md) is the one place that says in which order to take the lessons; a notebook or exercise
missing from it is one a learner never finds. A quiz without an answer key in tests/test_notebook_quizzes.py is
a quiz nobody has shown to be passable.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from test_notebook_quizzes import KEYS

ROOT = Path(__file__).resolve().parent.parent
MAP = (ROOT / "docs" / "course.md").read_text(encoding="utf-8")
SOURCES = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.py"))
EXERCISES = sorted(p.name for p in (ROOT / "exercises").glob("[0-9][0-9]_*") if p.is_dir())
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
    assert f"exercise **{name[:2]} — " in MAP, f"docs/course.md does not place exercise {name}"


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
