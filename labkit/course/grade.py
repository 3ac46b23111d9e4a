"""Grading a class: ``labkit grade SUBMISSIONS_DIR --exercise N [--csv FILE]`` checks each learner's file
as ``labkit check`` does, in its own sandboxed process with a time limit, one row per learner."""

from __future__ import annotations

import csv
import io
import re
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from labkit.core.errors import LabkitError
from labkit.course.exercises import SubmissionError, check_file, find_exercise, read_submission

# Feedback that says the file never got as far as being checked (not a wrong answer: an error).
_ERROR_STARTS = ("importing ", "running ", "the checks stopped", "the result of the checks")
_ERROR_PARTS = ("did not finish within", "s of CPU time (an endless loop?)")


@dataclass(frozen=True)
class GradeRow:
    learner: str
    passed: bool
    failed: tuple[str, ...]  # the cases that failed, by name (the part of each feedback line before ':')
    error: str  # why the file could not be checked at all ("" when it was)
    seconds: float


def _case_name(item: str) -> str:
    return item.split(": ", 1)[0] if ": " in item else item


def grade_one(folder: Path, target: Path, timeout: float) -> GradeRow:
    start = time.monotonic()
    try:
        read_submission(target)
    except SubmissionError as exc:  # no file to check: the row's error, not a wrong answer
        return GradeRow(target.stem, False, (), f"{exc.message}; what to do: {exc.hint}",
                        round(time.monotonic() - start, 2))
    try:
        feedback = check_file(folder, target, timeout=timeout, hidden=(target.parent,))
    except Exception as exc:  # the checker itself failed on this file: one row, not the whole class
        feedback = [f"the checks stopped on {type(exc).__name__}: {exc}"]
    seconds = time.monotonic() - start
    errors = [f for f in feedback if f.startswith(_ERROR_STARTS) or any(p in f for p in _ERROR_PARTS)]
    failed = tuple(dict.fromkeys(_case_name(f) for f in feedback if f not in errors))
    return GradeRow(target.stem, not feedback, failed, " | ".join(errors), round(seconds, 2))


def grade(submissions: Path, exercise: str, *, timeout: float = 30.0, workers: int = 2) -> list[GradeRow]:
    """One row per ``*.py`` in ``submissions`` (sorted by learner), each checked in its own child."""
    folder = find_exercise(exercise, f"labkit grade {submissions} --exercise {{}}")
    if not submissions.is_dir():
        raise LabkitError(f"no folder at {submissions}", "give the folder that holds one .py file per learner.")
    files = sorted(p for p in submissions.glob("*.py") if p.is_file())
    if not files:
        raise LabkitError(f"no .py files in {submissions}", "put one file per learner there, named after them.")
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        return list(pool.map(lambda f: grade_one(folder, f, timeout), files))


def write_csv(rows: list[GradeRow], out: io.TextIOBase | io.StringIO) -> None:
    writer = csv.writer(out)
    writer.writerow(["learner", "passed", "failed_cases", "error", "seconds"])
    for row in rows:
        writer.writerow([row.learner, "yes" if row.passed else "no", "; ".join(row.failed), row.error, row.seconds])


def render(rows: list[GradeRow], exercise: str) -> str:
    def cut(text: str, n: int) -> str:
        text = re.sub(r"\s+", " ", text)
        return text if len(text) <= n else text[: n - 1] + "…"

    width = max([7, *(len(r.learner) for r in rows)])
    lines = [f"exercise {exercise}: {sum(r.passed for r in rows)} of {len(rows)} passed",
             f"{'learner':<{width}}  passed  failed  {'failed cases / error'}"]
    for r in rows:
        detail = cut(r.error, 90) if r.error else cut("; ".join(r.failed), 90)
        lines.append(f"{r.learner:<{width}}  {'yes' if r.passed else 'no':<6}  {len(r.failed):>6}  {detail}")
    return "\n".join(lines)
