"""Classroom exercises: a student file with gaps, a reference solution, and a checker.

Each exercise lives in ``exercises/NN_topic/`` with ``student.py`` (gaps marked ``TODO``),
``solution.py`` and ``check.py``. The checker defines ``check(module) -> list[str]``: the
module is the imported file under test; each returned string is one piece of feedback, and an
empty list means the exercise is solved. CI runs every checker against the solution (must pass)
and against the untouched student file (must fail), so neither can rot unnoticed.
"""

from __future__ import annotations

import importlib.util
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from labkit.errors import LabkitError


def exercises_root() -> Path:
    """The ``exercises/`` folder of this checkout (labkit is installed in editable mode)."""
    return Path(__file__).resolve().parent.parent / "exercises"


def find_exercise(number: str) -> Path:
    root = exercises_root()
    matches = sorted(p for p in root.glob(f"{number.zfill(2)}_*") if p.is_dir()) if root.exists() else []
    if not matches:
        known = ", ".join(p.name for p in sorted(root.glob("[0-9][0-9]_*"))) if root.exists() else "none"
        raise LabkitError(f"no exercise numbered {number}", f"known exercises: {known}.")
    return matches[0]


def _import_file(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise LabkitError(f"cannot import {path}", "give a Python file.")
    module = importlib.util.module_from_spec(spec)
    # dataclasses (and pydantic) resolve string annotations through sys.modules, so the module must
    # be registered while it runs; a re-check replaces the previous copy under the same name.
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def _line_in(target: Path, exc: BaseException) -> int | str:
    """The line of ``target`` where importing it failed (not a line inside importlib)."""
    if isinstance(exc, SyntaxError) and exc.lineno:
        return exc.lineno
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if Path(f.filename) == target.resolve()]
    return frames[-1].lineno if frames and frames[-1].lineno else "?"


@dataclass(frozen=True)
class CheckReport:
    exercise: str
    file: Path
    feedback: list[str]

    @property
    def passed(self) -> bool:
        return not self.feedback

    def render(self) -> str:
        head = f"exercise {self.exercise} — {self.file}"
        if self.passed:
            return f"{head}\n  PASSED: every check holds."
        items = "\n".join(f"  ✗ {item}" for item in self.feedback)
        return f"{head}\n  NOT YET: {len(self.feedback)} thing(s) to fix:\n{items}"


def run_check(number: str, file: str | Path | None = None, *, solution: bool = False) -> CheckReport:
    """Import the file under test and run the exercise's checker on it."""
    folder = find_exercise(number)
    target = Path(file) if file else folder / ("solution.py" if solution else "student.py")
    if not target.exists():
        raise LabkitError(f"no file at {target}", "give the path of your solution file.")
    checker = _import_file(folder / "check.py", f"labkit_check_{folder.name}")
    try:
        module = _import_file(target, f"labkit_exercise_{folder.name}_{target.stem}")
    except Exception as exc:
        return CheckReport(folder.name, target, [
            f"importing {target.name} failed at line {_line_in(target, exc)}: {type(exc).__name__}: {exc}"])
    try:
        feedback = list(checker.check(module))
    except Exception as exc:
        feedback = [f"the checks stopped on {type(exc).__name__}: {exc}"]
    return CheckReport(folder.name, target, feedback)
