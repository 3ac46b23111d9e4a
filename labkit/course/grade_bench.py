"""``labkit bench grade``: a generated class (right, wrong, crashing, looping and hostile files), graded and
timed, each row checked against what its kind calls for."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

from labkit.core.provenance import git_commit, machine
from labkit.course.exercises import exercise_number, find_exercise
from labkit.course.grade import GradeRow, grade

KINDS = ("right", "wrong", "crashing", "looping", "hostile_write", "hostile_modules")
WRONG = {"09a": ("return in_plan[-1] if in_plan else None", "return in_plan[0] if in_plan else None"),
         "01a": ("state.retries_used < MAX_RETRIES", "state.retries_used <= MAX_RETRIES")}


def submission(kind: str, exercise: str, outside: Path) -> str:
    """The text of one generated submission of ``kind`` for ``exercise``."""
    folder = find_exercise(exercise, "labkit bench grade --exercise {}")
    solution = (folder / "solution.py").read_text(encoding="utf-8")
    if kind == "right":
        return solution
    if kind == "wrong":
        before, after = WRONG[exercise_number(folder)]
        return solution.replace(before, after)
    if kind == "crashing":
        return solution + "\nraise RuntimeError('my file breaks on import')\n"
    if kind == "looping":
        return solution + "\nwhile True:\n    pass\n"
    if kind == "hostile_write":
        return solution + f"\nwith open({str(outside)!r}, 'w') as f:\n    f.write('pwned')\n"
    if kind == "hostile_modules":
        return ("import sys\n"
                "for name, mod in list(sys.modules.items()):\n"
                "    if 'check' in name or 'probe' in name:\n"
                "        mod.check = mod.judge = mod.probe = lambda *a: []\n")
    raise ValueError(kind)


def make_class(folder: Path, count: int, exercise: str, outside: Path) -> dict[str, str]:
    """Write ``count`` submissions into ``folder``; returns learner -> kind."""
    folder.mkdir(parents=True, exist_ok=True)
    kinds = {}
    for index in range(count):
        kind = KINDS[index % len(KINDS)]
        learner = f"learner{index + 1:02d}_{kind}"
        (folder / f"{learner}.py").write_text(submission(kind, exercise, outside), encoding="utf-8")
        kinds[learner] = kind
    return kinds


def row_is_right(row: GradeRow, kind: str) -> bool:
    """Whether a learner's row is the one its kind calls for."""
    if kind == "right":
        return row.passed and not row.error
    if kind == "wrong":
        return not row.passed and bool(row.failed) and not row.error
    if kind == "looping":
        return not row.passed and "did not finish within" in row.error
    if kind in ("crashing", "hostile_write"):
        return not row.passed and row.error.startswith("importing ")
    return not row.passed  # hostile_modules: refused, never a pass


def bench_grade(count: int = 30, exercise: str = "09a", workers: int = 2, timeout: float = 5.0) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="labkit-grade-bench-") as tmp:
        outside = Path(tmp) / "outside" / "pwned.txt"
        outside.parent.mkdir()
        kinds = make_class(Path(tmp) / "class", count, exercise, outside)
        start = time.monotonic()
        rows = grade(Path(tmp) / "class", exercise, timeout=timeout, workers=workers)
        seconds = time.monotonic() - start
        written_outside = outside.exists()
    wrong_rows = [r.learner for r in rows if not row_is_right(r, kinds[r.learner])]
    return {
        "exercise": exercise, "submissions": count, "workers": workers, "timeout_per_file_s": timeout,
        "seconds": round(seconds, 2), "seconds_per_submission": round(seconds / count, 3),
        "kinds": {k: sum(1 for v in kinds.values() if v == k) for k in KINDS},
        "all_rows_right": not wrong_rows and not written_outside, "wrong_rows": wrong_rows,
        "written_outside": written_outside,
        "rows": [{"learner": r.learner, "passed": r.passed, "failed": list(r.failed), "error": r.error[:160],
                  "seconds": r.seconds} for r in rows],
        "machine": machine(), "labkit_commit": git_commit(),
        "recorded_utc": time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime()),
    }
