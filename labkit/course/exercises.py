"""Classroom exercises: a student file with gaps, a reference solution, probes and a judge.

Each ``exercises/NNx_topic/`` holds ``student.py``, ``solution.py``, ``probe.py`` and ``check.py``; the
learner's file runs only in a sandboxed child (:func:`run_probes`) that returns one JSON line."""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import random
import re
import secrets
import shutil
import sys
import tempfile
import traceback
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from labkit.core.errors import LabkitError
from labkit.core.python_source import parse
from labkit.core.sandbox import GIB, MIB, SandboxLimits, run_sandboxed
from labkit.course.exercise_child import MARKER


def exercises_root() -> Path:
    """The ``exercises/`` folder of this checkout (labkit is installed in editable mode)."""
    return Path(__file__).resolve().parents[2] / "exercises"


EXERCISE_GLOB = "[0-9][0-9][a-z]_*"
"""An exercise folder: its notebook's two-digit number, a letter for its place there, then its topic."""
RENAMED = {"01": "01a", "02": "02a", "03": "02b", "04": "03a", "05": "04a",
           "06": "05a", "07": "05b", "08": "08a", "09": "09a"}
"""Old exercise number -> new: ``labkit check 06`` is answered with the exercise it became (every old number
is also a notebook number, so a bare two-digit number always means the old name)."""
_NUMBER = re.compile(r"(\d{1,2})([a-z]?)")


def exercise_folders(root: Path | None = None) -> list[Path]:
    """Every exercise folder, in course order (their names sort that way)."""
    root = root or exercises_root()
    return sorted(p for p in root.glob(EXERCISE_GLOB) if p.is_dir()) if root.exists() else []


def exercise_number(folder: Path | str) -> str:
    """An exercise folder's number, such as ``05a`` for ``exercises/05a_dialog_step``."""
    return Path(folder).name.split("_", 1)[0]


def _topic(folder: Path) -> str:
    return folder.name.split("_", 1)[1].replace("_", " ")


def find_exercise(number: str, command: str = "labkit check {}") -> Path:
    """The folder of exercise ``number`` (``05a`` or ``5a``); ``command`` names it in errors, and an old
    number (:data:`RENAMED`) is refused with the one it became."""
    root = exercises_root()
    text = number.strip().lower()
    folders = exercise_folders(root)
    known = ", ".join(f.name for f in folders) or "none"
    match = _NUMBER.fullmatch(text)
    if match is None:
        raise LabkitError(f"{number!r} is not an exercise number",
                          f"give a number like 05a (notebook 05, its first exercise); known exercises: {known}.")
    wanted = match.group(1).zfill(2) + match.group(2)
    if not match.group(2):
        if wanted in RENAMED:
            raise LabkitError(*_renamed(wanted, command, folders))
        raise LabkitError(f"no exercise numbered {number}: exercises are numbered by notebook and letter",
                          f"known exercises: {known}.")
    found = [f for f in folders if exercise_number(f) == wanted]
    if not found:
        raise LabkitError(f"no exercise numbered {number}", f"known exercises: {known}.")
    return found[0]


def _renamed(old: str, command: str, folders: list[Path]) -> tuple[str, str]:
    """What an old exercise number is now, and the command to run instead."""
    new = RENAMED[old]
    topics = {exercise_number(f): _topic(f) for f in folders}
    message = f"exercise {old} is now {new} ({topics.get(new, 'missing from this checkout')}): " \
              f"run `{command.format(new)}`"
    siblings = [number for number in topics if number[:2] == old]
    if len(siblings) > 1:  # the learner may have meant the notebook: name all of its exercises
        listed = " and ".join(f"{number} ({topics[number]})" for number in siblings)
        message += f" ({old} was its number before; notebook {old}'s exercises are {listed})"
    return message, ("exercises are now named after the notebook they practise, with a letter for their order "
                     "there; docs/course.md lists them.")


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


PROBE_TIMEOUT = 60.0  # seconds for one child: importing the learner's file and running every probe
PROBE_LIMITS = SandboxLimits(cpu_seconds=60, memory_bytes=2 * GIB, file_size_bytes=8 * MIB, processes=32,
                             output_bytes=2 * MIB)
# What a learner's file may not use: each reaches for code the file does not hold (the answer, the
# checker, another module's internals) instead of being the answer.
REFUSED_MODULES = {"solution", "check", "probe", "scenarios", "importlib", "runpy", "ctypes", "gc", "inspect"}
REFUSED_NAMES = {"__import__", "exec", "eval", "compile", "globals", "breakpoint", "__builtins__"}
REFUSED_ATTRIBUTES = {"modules", "_getframe", "settrace", "setprofile", "meta_path", "path_hooks", "f_back",
                      "f_globals", "f_locals", "__code__", "__globals__"}


@dataclass(frozen=True)
class ProbeOutcome:
    """What came back from the child: the probes' data, or why there is none."""

    results: Any = None
    error: str | None = None


def _refusal(tree: ast.AST, name: str, refused_imports: dict[str, str]) -> str | None:
    """Why the learner's file reaches for code it does not hold, or None (read from its source, here)."""
    for node in ast.walk(tree):
        line = getattr(node, "lineno", "?")
        modules: list[str] = []
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            modules = [node.module or ""]
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                if full in refused_imports:
                    return f"{name} line {line}: {alias.name} is imported from {node.module}; " \
                           f"{refused_imports[full]}"
        for module in modules:
            if module.split(".")[0] in REFUSED_MODULES or module in refused_imports:
                why = refused_imports.get(module, "your answer must be written in this file, not loaded from another")
                return f"{name} line {line}: it imports {module or 'from a relative path'}; {why}"
        if isinstance(node, ast.ImportFrom) and node.level:
            return f"{name} line {line}: a relative import; your answer must be written in this file"
        if isinstance(node, ast.Name) and node.id in REFUSED_NAMES:
            return f"{name} line {line}: it uses {node.id}; an answer file holds its answer as plain code"
        if isinstance(node, ast.Attribute) and node.attr in REFUSED_ATTRIBUTES:
            return f"{name} line {line}: it reaches into .{node.attr}; an answer file must not touch the " \
                   "interpreter's machinery"
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and (
                "solution.py" in node.value or "check.py" in node.value):
            return f"{name} line {line}: it names another exercise file; your answer must be written in this file"
    return None


def _hideable(folders: tuple[Path, ...]) -> list[Path]:
    """The folders the child may be kept out of: never one that holds labkit or the interpreter."""
    needed = [Path(__file__).resolve().parents[1], Path(sys.prefix).resolve(), Path(sys.executable).resolve()]
    out = []
    for folder in folders:
        folder = Path(folder).resolve()
        if not any(path == folder or folder in path.parents for path in needed):
            out.append(folder)
    return out


def run_probes(folder: Path, target: Path, cases: Any, *, timeout: float = PROBE_TIMEOUT,
               hidden: tuple[Path, ...] = ()) -> ProbeOutcome:
    """Run ``folder/probe.py``'s ``probe(module, cases)`` on ``target`` in a sandboxed child that sees only
    private copies; return its one JSON line of data."""
    with tempfile.TemporaryDirectory(prefix="labkit-check-") as tmp:
        work = Path(tmp)
        shutil.copyfile(target, work / target.name)
        shutil.copyfile(folder / "probe.py", work / "labkit_probe.py")
        job = {"learner": str(work / target.name), "probe": str(work / "labkit_probe.py"),
               "module": f"labkit_exercise_{folder.name}_{target.stem}", "cases": cases}
        (work / "job.json").write_text(json.dumps(job), encoding="utf-8")
        boot = (f"import sys; sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r}); "
                "from labkit.course.exercise_child import main; sys.exit(main('job.json'))")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "LABKIT_SANDBOX_"))}
        env.update(PYTHONDONTWRITEBYTECODE="1", PYTHONHASHSEED="0", MPLBACKEND="Agg")
        result = run_sandboxed([sys.executable, "-I", "-c", boot], cwd=work, writable=[work], timeout=timeout,
                               env=env, limits=PROBE_LIMITS,
                               hidden=_hideable((exercises_root(), target.resolve().parent, *hidden)))
    if result.timed_out:
        return ProbeOutcome(error=f"{target.name} did not finish within {timeout:g} s (an endless loop, or "
                                  "waiting for input?); nothing was checked")
    if "cpu_seconds" in result.limits_hit:
        return ProbeOutcome(error=f"{target.name} used more than {PROBE_LIMITS.cpu_seconds} s of CPU time (an "
                                  "endless loop?); nothing was checked")
    found = [line[len(MARKER):] for line in result.output.splitlines() if line.startswith(MARKER)]
    if len(found) != 1:
        tail = result.output.strip().splitlines()[-3:]
        why = (f"it printed {len(found)} result lines (only the checker writes one)" if found
               else f"it ended with exit code {result.returncode} before the checks finished"
               + (f": {' / '.join(tail)}" if tail else ""))
        return ProbeOutcome(error=f"running {target.name} gave no usable result: {why}")
    try:
        data = json.loads(found[0])
    except ValueError:
        return ProbeOutcome(error=f"running {target.name} gave a garbled result line")
    if not isinstance(data, dict):
        return ProbeOutcome(error=f"running {target.name} gave a garbled result line")
    if "import_error" in data:
        return ProbeOutcome(error=str(data["import_error"]))
    if "probe_error" in data:
        return ProbeOutcome(error=f"the checks stopped on {data['probe_error']}")
    return ProbeOutcome(results=data.get("results"))


SUBMISSION_MAX_BYTES = 1 << 20  # an exercise's answer is a page of code; a bigger file is the wrong file


class SubmissionError(LabkitError):
    """A learner's file cannot be checked at all: not Python source text (binary, not UTF-8, empty, too
    large) or not valid Python. ``labkit check`` and ``labkit grade`` show it as the file's one feedback
    line; :func:`read_submission` raises it."""


def read_submission(target: Path) -> tuple[str, ast.Module]:
    """The source and syntax tree of a learner's file, read as Python reads it (UTF-8, or the file's
    ``# -*- coding: ... -*-`` line); every reason it cannot be checked is a :class:`SubmissionError`."""
    name = target.name
    redo = "save your answer as a Python file (start from the exercise's student.py) and check again."
    try:
        with target.open("rb") as handle:
            data = handle.read(SUBMISSION_MAX_BYTES + 1)
    except OSError as exc:
        raise SubmissionError(f"cannot read {target}: {exc.strerror or exc}", "give the path of your file.") from None
    if len(data) > SUBMISSION_MAX_BYTES:
        raise SubmissionError(f"{name} is larger than {SUBMISSION_MAX_BYTES:,} bytes, too large for an exercise's "
                              "answer", f"check that you gave the right file; {redo}")
    if b"\0" in data:
        raise SubmissionError(f"{name} is a binary file (it holds NUL bytes), not Python source", redo)
    try:
        source = importlib.util.decode_source(data)
    except (SyntaxError, UnicodeDecodeError, LookupError) as exc:
        why = exc.reason if isinstance(exc, UnicodeDecodeError) else str(exc)
        raise SubmissionError(f"{name} is not UTF-8 text ({why})",
                              "save the file as UTF-8 (most editors offer it under 'encoding').") from None
    if not source.strip():
        raise SubmissionError(f"{name} is empty", f"write your answer in it; {redo}")
    try:
        tree = parse(source, filename=name)
    except SyntaxError as exc:
        raise SubmissionError(f"importing {name} failed at line {exc.lineno or '?'}: SyntaxError: {exc}",
                              "fix the line named; `python -m py_compile FILE` shows the same error.") from None
    return source, tree


def _checker(folder: Path) -> ModuleType:
    return _import_file(folder / "check.py", f"labkit_check_{folder.name}")


def check_file(folder: Path, target: Path, *, timeout: float = PROBE_TIMEOUT, hidden: tuple[Path, ...] = (),
               seed: int | None = None) -> list[str]:
    """The feedback on ``target``: static rules, then probes in a child, then ``check.py``'s judge
    (``cases(rng)``, ``judge(results, cases, source)``, optional ``static`` and ``REFUSED_IMPORTS``)."""
    checker = _checker(folder)
    try:
        source, tree = read_submission(target)
    except SubmissionError as exc:
        return [f"{exc.message}; what to do: {exc.hint}"]
    static = getattr(checker, "static", None)
    if static is not None and (found := static(tree, target.name)):
        return list(found)
    if why := _refusal(tree, target.name, getattr(checker, "REFUSED_IMPORTS", {})):
        return [why]
    rng = random.Random(secrets.randbits(64) if seed is None else seed)
    cases = checker.cases(rng) if hasattr(checker, "cases") else None
    outcome = run_probes(folder, target, cases, timeout=timeout, hidden=hidden)
    if outcome.error is not None:
        return [outcome.error]
    try:
        feedback = list(checker.judge(outcome.results, cases, source))
    except Exception as exc:  # data the probes never return (a forged or truncated result): not a pass
        return [f"the result of the checks could not be judged ({type(exc).__name__}); run the check again, and "
                "keep your file to the exercise's functions"]
    return [f for f in feedback if "hidden" not in f] + [f for f in feedback if "hidden" in f]  # visible cases first


def run_check(number: str, file: str | Path | None = None, *, solution: bool = False,
              timeout: float = PROBE_TIMEOUT) -> CheckReport:
    """Check the file under test: its code runs in a sandboxed child, the checker judges the data here."""
    folder = find_exercise(number)
    target = Path(file) if file else folder / ("solution.py" if solution else "student.py")
    if not target.exists():
        raise LabkitError(f"no file at {target}", "give the path of your solution file.")
    return CheckReport(folder.name, target, check_file(folder, target, timeout=timeout))


# ----------------------------------------------------------------------------- student files from solutions
BEGIN_MARK, END_MARK, STUB_MARK = "# BEGIN SOLUTION", "# END SOLUTION", "# STUB:"
UNUSED_IMPORT_NOTE = "  # noqa: F401 - your answer needs it"


def student_text(solution: str, source: str = "solution.py") -> str:
    """The student file made from a solution's text: each ``# BEGIN SOLUTION`` .. ``# END SOLUTION`` region
    becomes its ``# STUB:`` lines or one ``# TODO``; imports only the answer used stay, with a note."""
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
    tree = parse(text)
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
    for folder in exercise_folders(root):
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
