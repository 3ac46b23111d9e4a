"""How long a lesson takes a careful learner, estimated from its content (prose words, code cells and lines,
predictions, questions; rounded to 5 minutes), so docs/course.md and the notebook headers cannot drift."""

from __future__ import annotations

import re
from pathlib import Path

import jupytext

WORDS_PER_MINUTE = 150
MINUTES_PER_CELL = 0.75
MINUTES_PER_CODE_LINE = 0.05
MINUTES_PER_PREDICTION = 2.0
MINUTES_PER_QUESTION = 1.5
_PREDICTION = re.compile(r"\bpredict\(")
_QUESTION = re.compile(r"\b(?:Choice|CodeLine)\(")


def lesson_minutes(source: str | Path) -> int:
    """The estimated minutes of the lesson whose py:percent source is ``source``, a multiple of 5."""
    cells = jupytext.read(Path(source), fmt="py:percent").cells
    words = sum(len(c.source.split()) for c in cells if c.cell_type == "markdown")
    code = [c.source for c in cells if c.cell_type == "code"]
    minutes = (words / WORDS_PER_MINUTE + len(code) * MINUTES_PER_CELL
               + sum(len(c.splitlines()) for c in code) * MINUTES_PER_CODE_LINE
               + sum(len(_PREDICTION.findall(c)) for c in code) * MINUTES_PER_PREDICTION
               + sum(len(_QUESTION.findall(c)) for c in code) * MINUTES_PER_QUESTION)
    return max(5, 5 * round(minutes / 5))
