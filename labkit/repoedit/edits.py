"""What a planner may propose (schemas) and the guards every proposal must pass (typed refusals).

A model's answer is text; it becomes a plan or an edit only by parsing into these pydantic models.
Then the *domain* guards run, each one declaration (code, question, hint) in :data:`EDIT_GUARDS` or
:data:`PLAN_GUARDS`. A refusal names its guard, so the log, the report and the next prompt can
say exactly what was wrong. Why each guard exists:

- ``outside_repo``: ``../``, absolute paths and symlinks out of the copy would write the user's disk;
- ``test_file``: a model that may edit the tests can make them pass without fixing anything;
- ``not_planned``: an edit outside the checked plan is an edit nobody reviewed;
- ``does_not_apply``: a search text that is absent or ambiguous means the model misread the file;
- ``no_change``: an edit that changes nothing wastes a test run;
- ``too_large``: a big rewrite goes to a human (HUMAN_APPROVAL), never silently to the tests;
- ``syntax_error``: code that does not compile never reaches the tests.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from labkit.repoedit.index import RepoIndex, is_test_path
from labkit.repoedit.tasks import SearchReplace

MAX_PLAN_STEPS = 4
DEFAULT_DIFF_LIMIT = 30  # changed lines (added + removed) above which an edit needs a human


class PlanStep(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    file: str = Field(min_length=1)
    why: str = Field(min_length=1, max_length=300)


class PlanProposal(BaseModel):
    """PLAN_CHANGE's contract: which files to change, and why, in order."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    steps: tuple[PlanStep, ...] = Field(min_length=1, max_length=MAX_PLAN_STEPS)


class EditProposal(BaseModel):
    """EDIT_FILE's contract: ``ok`` with search/replace edits, ``skip`` (nothing to do here) or ``abort``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    status: Literal["ok", "skip", "abort"]
    edits: tuple[SearchReplace, ...] = ()
    reason: str = ""


@dataclass(frozen=True)
class Refusal:
    """A guard said no: which guard, what exactly, and what the proposer should do instead."""

    code: str
    detail: str
    hint: str

    def to_dict(self) -> dict[str, str]:
        return {"code": self.code, "detail": self.detail, "hint": self.hint}


# ---------------------------------------------------------------- paths
def outside_repo(root: Path, path: str) -> str | None:
    """Why ``path`` would leave ``root`` (absolute, ``..``, a symlink out), or None if it stays inside."""
    pure = PurePosixPath(path)
    if pure.is_absolute() or path.startswith(("/", "\\")) or (len(path) > 1 and path[1] == ":"):
        return f"{path!r} is an absolute path"
    if ".." in pure.parts:
        return f"{path!r} climbs out with '..'"
    real_root = root.resolve()
    target = (root / path).resolve()
    if target != real_root and real_root not in target.parents:
        return f"{path!r} resolves to {target}, outside the project (a symlink out)"
    return None


@dataclass(frozen=True)
class EditCase:
    """Everything the edit guards look at: the project, the plan, the file, the proposal."""

    root: Path
    index: RepoIndex
    planned: frozenset[str]
    path: str
    edits: tuple[SearchReplace, ...]
    diff_limit: int = DEFAULT_DIFF_LIMIT
    tolerant: bool = False  # the machine's tolerant_match feature: see :func:`tolerant_replace`

    def before(self) -> str:
        return (self.root / self.path).read_text(encoding="utf-8")

    def after(self) -> tuple[str | None, str | None]:
        """The new file text, or None and why the edits do not apply (each search must occur once)."""
        text, error, _ = self.resolve()
        return text, error

    def resolve(self) -> tuple[str | None, str | None, tuple[str, ...]]:
        """:meth:`after` plus the normalisations a ``tolerant`` case needed to find each search text."""
        text = self.before()
        notes: list[str] = []
        for number, edit in enumerate(self.edits, 1):
            count = text.count(edit.search)
            if count == 1:
                text = text.replace(edit.search, edit.replace, 1)
                continue
            found = tolerant_replace(text, edit.search, edit.replace) if self.tolerant and count == 0 else None
            if found is None:
                where = "does not occur" if count == 0 else f"occurs {count} times"
                return None, f"edit {number}: the search text {where} in {self.path} ({edit.search[:60]!r})", ()
            text, how = found
            notes += [f"edit {number}: {note}" for note in how]
        return text, None, tuple(notes)


_QUOTES = str.maketrans("'", '"')


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def tolerant_replace(text: str, search: str, replace: str) -> tuple[str, tuple[str, ...]] | None:
    """Replace the one block of ``text`` that equals ``search`` up to quotes and indentation, or None.

    Lines are compared stripped of their indentation, with ``'`` read as ``"``; blank lines must be
    blank on both sides. The match must be unique. ``replace`` is re-based by the indentation the
    block really has (its first line against the search's first line), so a model that copied a
    method without its class indentation still writes it in place. The normalisations are returned
    so that the edit's event can say exactly what was not literal.
    """
    want = [line.strip().translate(_QUOTES) for line in search.strip("\n").splitlines()]
    if not want or not any(want):
        return None
    lines = text.splitlines(keepends=True)
    have = [line.strip().translate(_QUOTES) for line in lines]
    starts = [i for i in range(len(lines) - len(want) + 1) if have[i:i + len(want)] == want]
    if len(starts) != 1:
        return None
    start = starts[0]
    block = lines[start:start + len(want)]
    first_search = search.strip("\n").splitlines()[0]
    shift = _indent(block[0]) - _indent(first_search)
    notes: list[str] = []
    literal = [line.rstrip("\n") for line in block]
    wanted = search.strip("\n").splitlines()
    if [line.strip() for line in literal] != [line.strip() for line in wanted]:
        notes.append("quote style differed (' and \" read alike)")
    if shift:
        notes.append(f"indentation re-based by {shift:+d} spaces")
    elif [_indent(a) for a in literal] != [_indent(b) for b in wanted]:
        notes.append("indentation inside the block differed")
    new_lines = []
    for line in replace.strip("\n").splitlines():
        if not line.strip():
            new_lines.append("")
        elif shift >= 0:
            new_lines.append(" " * shift + line)
        else:
            new_lines.append(line[min(-shift, _indent(line)):])
    ending = "\n" if block[-1].endswith("\n") else ""
    new_text = "".join(lines[:start]) + "\n".join(new_lines) + ending + "".join(lines[start + len(want):])
    return new_text, tuple(notes)


def changed_lines(before: str, after: str) -> int:
    """Added plus removed lines between two texts."""
    diff = difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
    return sum(1 for line in diff if line[:1] in "+-" and not line.startswith(("+++", "---")))


def unified_diff(path: str, before: str, after: str) -> str:
    return "".join(difflib.unified_diff(before.splitlines(True), after.splitlines(True), f"a/{path}", f"b/{path}"))


def _applied(case: EditCase) -> str | None:
    return case.after()[1]


def _no_change(case: EditCase) -> str | None:
    after, _ = case.after()
    return f"the edits leave {case.path} unchanged" if after == case.before() else None


def _too_large(case: EditCase) -> str | None:
    after, _ = case.after()
    n = changed_lines(case.before(), after or "")
    return f"{n} changed lines, over the limit of {case.diff_limit}" if n > case.diff_limit else None


def _syntax(case: EditCase) -> str | None:
    after, _ = case.after()
    if not case.path.endswith(".py") or after is None:
        return None
    try:
        compile(after, case.path, "exec")
    except SyntaxError as exc:
        return f"{case.path} would not compile: {exc.msg} (line {exc.lineno})"
    return None


def _exists(case: EditCase) -> str | None:
    return None if (case.root / case.path).is_file() else f"{case.path!r} is not a file of the project"


@dataclass(frozen=True)
class Guard:
    """One domain rule: its code, the check (a reason to refuse, or None), the hint for the proposer.

    ``to_human``: a failed check is not a refusal but a question for HUMAN_APPROVAL.
    """

    code: str
    check: Callable[[EditCase], str | None]
    hint: str
    to_human: bool = False


EDIT_GUARDS: tuple[Guard, ...] = (
    Guard("outside_repo", lambda c: outside_repo(c.root, c.path),
          "name a file of the project by its relative path."),
    Guard("test_file", lambda c: f"{c.path!r} is a test file" if is_test_path(c.path) else None,
          "change the code under test; the tests define what is asked."),
    Guard("not_planned", lambda c: None if c.path in c.planned else f"{c.path!r} is not in the plan",
          "edit only the files of the checked plan."),
    Guard("missing_file", _exists, "edit a file that exists in the project index."),
    Guard("does_not_apply", _applied, "copy the search text exactly from the file, enough of it to be unique."),
    Guard("no_change", _no_change, "make the replace text differ from the search text."),
    Guard("syntax_error", _syntax, "propose an edit whose result is valid Python."),
    Guard("too_large", _too_large, "make a smaller, targeted edit.", to_human=True),
)


PHYSICAL_GUARDS: tuple[Guard, ...] = tuple(g for g in EDIT_GUARDS
                                           if g.code in ("outside_repo", "missing_file", "does_not_apply"))
"""Only what makes an edit physically possible inside the copy: no writes outside it, an existing file, a
search text found once. The arms without the machine (prompt-only, the free loop) edit under these alone,
so they may edit tests, leave the plan or break the syntax, and the comparison measures what follows."""


def check_edit(case: EditCase, guards: tuple[Guard, ...] = EDIT_GUARDS) -> Refusal | None:
    """The first guard that fails, as a :class:`Refusal`, or None when the edit may be applied."""
    for guard in guards:
        detail = guard.check(case)
        if detail is not None:
            return Refusal(guard.code, detail, guard.hint)
    return None


def needs_human(refusal: Refusal, guards: tuple[Guard, ...] = EDIT_GUARDS) -> bool:
    return any(g.code == refusal.code and g.to_human for g in guards)


# ---------------------------------------------------------------- plans
def check_plan(plan: PlanProposal, root: Path, index: RepoIndex) -> Refusal | None:
    """A plan may name only indexed, non-test source files inside the project, each once."""
    seen: set[str] = set()
    for step in plan.steps:
        outside = outside_repo(root, step.file)
        if outside:
            return Refusal("outside_repo", outside, "name files by their path relative to the project.")
        if is_test_path(step.file):
            return Refusal("test_file", f"{step.file!r} is a test file", "plan changes to source files only.")
        if step.file not in index.source_files:
            known = ", ".join(index.source_files)
            return Refusal("unknown_file", f"{step.file!r} is not a source file of the project",
                           f"choose among: {known}.")
        if step.file in seen:
            return Refusal("duplicate_file", f"{step.file!r} is planned twice", "list each file once.")
        seen.add(step.file)
    return None
