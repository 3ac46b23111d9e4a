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


# ----------------------------------------------------------------------------- student files from solutions
BEGIN_MARK, END_MARK, STUB_MARK = "# BEGIN SOLUTION", "# END SOLUTION", "# STUB:"
UNUSED_IMPORT_NOTE = "  # noqa: F401 - your answer needs it"


def student_text(solution: str, source: str = "solution.py") -> str:
    """The student file made from a solution's text: one source per exercise, no hand-kept copies.

    A region from a ``# BEGIN SOLUTION`` line to a ``# END SOLUTION`` line is the answer. It is
    replaced by the region's ``# STUB: text`` lines, written as ``text`` at the stub's indentation
    (the given skeleton: a ``return`` that type-checks, a ``TODO`` saying what to do), or by a
    single ``# TODO`` when it has none. Imports that only the answer used keep working in the
    student file, with a note saying the answer will need them, so lint stays clean in both.
    """
    out: list[str] = []
    region_start: int | None = None
    stubs: list[str] = []
    for number, line in enumerate(solution.splitlines(keepends=True), 1):
        stripped = line.strip()
        indent = line[: len(line) - len(line.lstrip())]
        if stripped == BEGIN_MARK:
            if region_start is not None:
                raise LabkitError(f"{source}:{number}: '{BEGIN_MARK}' inside the region opened at line "
                                  f"{region_start}", f"close that region with '{END_MARK}' first.")
            region_start, stubs = number, []
        elif stripped == END_MARK:
            if region_start is None:
                raise LabkitError(f"{source}:{number}: '{END_MARK}' without a '{BEGIN_MARK}'",
                                  "open each solution region before closing it.")
            out.extend(stubs or [f"{indent}# TODO\n"])
            region_start = None
        elif region_start is not None:
            if stripped.startswith(STUB_MARK):
                text = stripped[len(STUB_MARK):].removeprefix(" ")
                stubs.append(f"{indent}{text}\n" if text else "\n")
        else:
            out.append(line)
    if region_start is not None:
        raise LabkitError(f"{source}:{region_start}: '{BEGIN_MARK}' is never closed",
                          f"end the region with a '{END_MARK}' line.")
    return _note_unused_imports("".join(out))


def _note_unused_imports(text: str) -> str:
    """Mark imports the stripped file no longer uses, so the student keeps them without a lint error."""
    import ast

    tree = ast.parse(text)
    used = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    used |= {node.value.id for node in ast.walk(tree)
             if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)}
    lines = text.splitlines(keepends=True)
    unused_lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom) and not (
                isinstance(node, ast.ImportFrom) and node.module == "__future__"):
            for alias in node.names:
                name = (alias.asname or alias.name).split(".")[0]
                if name not in used:
                    unused_lines.add(getattr(alias, "lineno", node.lineno))
    for index in sorted(unused_lines):
        line = lines[index - 1].rstrip("\n")
        if "# noqa" not in line:
            lines[index - 1] = f"{line.rstrip()}{UNUSED_IMPORT_NOTE}\n"
    return "".join(lines)


def has_solution_regions(solution: str) -> bool:
    """Whether a solution file marks its answer, so that its student file is generated from it."""
    return any(line.strip() == BEGIN_MARK for line in solution.splitlines())


def stale_student_files(root: Path | None = None) -> list[Path]:
    """Student files that differ from what their solution generates (only exercises that mark regions)."""
    stale = []
    for folder in sorted((root or exercises_root()).glob("[0-9][0-9]_*")):
        solution = folder / "solution.py"
        if solution.is_file() and has_solution_regions(text := solution.read_text(encoding="utf-8")):
            student = folder / "student.py"
            expected = student_text(text, f"{folder.name}/solution.py")
            if not student.is_file() or student.read_text(encoding="utf-8") != expected:
                stale.append(student)
    return stale


def write_student_files(root: Path | None = None) -> list[Path]:
    """Regenerate every stale student file from its solution; returns the files written."""
    written = []
    for student in stale_student_files(root):
        solution = student.parent / "solution.py"
        student.write_text(student_text(solution.read_text(encoding="utf-8"),
                                        f"{student.parent.name}/solution.py"), encoding="utf-8")
        written.append(student)
    return written
