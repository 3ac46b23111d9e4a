"""The times the course states are the declared estimate (labkit.course.lesson_time), in the map and in each lesson."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from labkit.course.lesson_time import lesson_minutes

ROOT = Path(__file__).resolve().parents[1]
LESSONS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.py"))


@pytest.mark.parametrize("source", LESSONS, ids=lambda p: p.stem)
def test_the_map_and_the_lessons_header_state_the_estimate(source: Path) -> None:
    minutes = lesson_minutes(source)
    header = re.search(r"\*\*Time:\*\* about (\d+) minutes", source.read_text(encoding="utf-8"))
    assert header is not None, f"{source.name} states no time"
    assert int(header.group(1)) == minutes, f"{source.name} says {header.group(1)} min, the estimate is {minutes}"
    course = (ROOT / "docs" / "course.md").read_text(encoding="utf-8")
    row = next(line for line in course.splitlines() if line.startswith("|") and f"**{source.name[:2]} — " in line)
    assert f"| {minutes} min |" in row, f"docs/course.md's row for {source.name[:2]}: {row[:80]}…"


def test_the_estimate_counts_what_a_learner_does(tmp_path: Path) -> None:
    text = ("# %% [markdown]\n# " + "word " * 300 + "\n\n# %%\nx = 1\n\n# %%\npredict('q', ['a'], 'a', 'why')\n"
            "\n# %%\nquiz = Quiz([Choice('q', ['a'], 'a', 'why'), CodeLine('q', len)])\n")
    lesson = tmp_path / "lesson.py"
    lesson.write_text(text, encoding="utf-8")
    # 300 words: 2 min; 3 cells of 1 line: 2.25 + 0.15; one prediction: 2; two questions: 3 -> 9.4, rounded to 10
    assert lesson_minutes(lesson) == 10
    lesson.write_text(text + "\n# %%\npredict('q2', ['a'], 'a', 'why')\n", encoding="utf-8")
    assert lesson_minutes(lesson) == 10  # 12.2 rounds down to 10: the rule is coarse on purpose


def test_the_maps_total_is_the_sum_of_its_rows() -> None:
    course = (ROOT / "docs" / "course.md").read_text(encoding="utf-8")
    lessons = sum(lesson_minutes(source) for source in LESSONS)
    exercises = sum(int(m) for m in re.findall(r"^\| \| exercise \*\*.*\| (\d+) min \|", course, flags=re.M))
    hours = f"{(lessons + exercises) / 60:.0f} h"
    stated = (f"about {lessons} min ({lessons / 60:.1f} h) of lessons and {exercises} min ({exercises / 60:.1f} h) "
              f"of exercises: {hours}.")
    assert stated in " ".join(course.split()), f"docs/course.md should say: {stated}"
