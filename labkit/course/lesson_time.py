"""How long a lesson takes a careful learner, estimated from what is in it — so the course map cannot drift.

The course map (``docs/course.md``) and each notebook's header state a time. Typed by hand, they fell behind
as lessons grew (a review found 11¼ h stated where a careful learner needs 13–16 h). The estimate is now a
declared rule over the lesson's source, and a test holds the map and the headers to it:

- prose: technical Markdown read carefully, with a look back, at :data:`WORDS_PER_MINUTE`;
- each code cell: run it and read its output, :data:`MINUTES_PER_CELL`, plus :data:`MINUTES_PER_CODE_LINE` per
  line of code read;
- each prediction (``predict(``): think, choose, check, read the reveal, :data:`MINUTES_PER_PREDICTION`;
- each quiz question (``Choice(``, ``CodeLine(``): :data:`MINUTES_PER_QUESTION`;

rounded to 5 minutes. It is a model of a read-through, not a timing of learners: the constants are a stated
assumption, chosen so the whole course comes out inside the 13–16 h a reviewer's careful read-through took.
Exercises keep their own estimates in the map (their time is writing code, which words do not count).
"""

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
