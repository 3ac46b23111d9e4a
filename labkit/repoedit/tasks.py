"""Repo-editing tasks are data: a project folder plus one entry in ``data/repos/tasks.yaml``.

A teacher adds a task by adding a folder (a tiny Python project with pytest tests) and an entry
naming it, the tests that fail before the fix, and the known fix (the *oracle*: a plan line and
search/replace edits per file, in exactly the form a planner proposes, so the oracle runs through
the same machine). The file is validated as a whole when it is read; every problem is reported
with the task id and the field, never as a Python error from deep inside a run.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from labkit.core.errors import LabkitError
from labkit.core.yaml_input import Where, load_yaml, not_text, source_at, where_of

FORMAT = 1
TASK_FILE_MAX_BYTES = 16 << 20  # a generated benchmark's file (164 HumanEval tasks) is about 150 KB
DEFAULT_TASK_FILE = Path(__file__).resolve().parents[2] / "data" / "repos" / "tasks.yaml"
KIT_KINDS = ("bug", "feature", "rename", "off-by-one", "wrong-default", "edge-case")  # the hand-made projects
GENERATED_KINDS = ("mutation", "implement")  # tasks built from a public benchmark (labkit.repoedit.humaneval)
KINDS = KIT_KINDS + GENERATED_KINDS


class SearchReplace(BaseModel):
    """Replace the one occurrence of ``search`` in the file by ``replace``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    search: str = Field(min_length=1)
    replace: str


class FileFix(BaseModel):
    """The oracle's change to one file: its plan line and its edits."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    path: str = Field(min_length=1)
    why: str = Field(min_length=1)
    edits: tuple[SearchReplace, ...] = Field(min_length=1)


class RepoTask(BaseModel):
    """One task: which project, what is asked, which tests show it, and the known fix."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    project: str = Field(min_length=1)
    split: Literal["dev", "test"]
    kind: Literal[KINDS]  # type: ignore[valid-type]
    requirement: str = Field(min_length=10)
    failing: tuple[str, ...] = Field(min_length=1)
    oracle: tuple[FileFix, ...] = Field(min_length=1)
    hidden: str | None = None  # a test file beside the projects that only the verifier runs (a benchmark's grader)
    origin: str = ""  # where a generated task comes from (a benchmark problem, its mutation)

    def digest(self) -> str:
        """Everything the task shows an arm and its verifier, as one sha256: a recording of it replays only
        on a build that gives the same digest."""
        return hashlib.sha256(self.model_dump_json().encode()).hexdigest()

    @field_validator("failing")
    @classmethod
    def _node_ids(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for node in value:
            if "::" not in node:
                raise ValueError(f"{node!r} is not a pytest node id (tests/test_x.py::test_name)")
        return value


class TaskFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    format: int
    tasks: tuple[RepoTask, ...] = Field(min_length=1)


def load_tasks(path: str | Path = DEFAULT_TASK_FILE) -> dict[str, RepoTask]:
    """Read and check a task file; return the tasks by id.

    Raises :class:`LabkitError` naming the task and field for a malformed entry, a project folder
    that does not exist, a folder without test files, an oracle path that is not in the project,
    or an id used twice.
    """
    path = Path(path)
    if not path.is_file():
        raise LabkitError(f"task file {path} does not exist",
                          "pass the path of a tasks.yaml (the kit's own is data/repos/tasks.yaml).")
    raw = load_yaml(path, "task file", max_bytes=TASK_FILE_MAX_BYTES)
    if not isinstance(raw, dict) or raw.get("format") != FORMAT:
        found = repr(raw.get("format")) if isinstance(raw, dict) else "a list" if isinstance(raw, list) else repr(raw)
        raise LabkitError(f"{path}: expected a mapping with 'format: {FORMAT}', found {found}",
                          "start the file with 'format: 1' and a 'tasks:' list.")
    try:
        parsed = TaskFile.model_validate(raw)
    except ValidationError as exc:
        errors = exc.errors()  # a list whose items failed is also reported as too short: that one says nothing
        errors = [e for e in errors if not (e["type"] == "too_short" and any(
            len(o["loc"]) > len(e["loc"]) and o["loc"][:len(e["loc"])] == e["loc"] for o in errors))]
        problems = [_problem(raw, err, str(path)) for err in errors[:5]]
        count = len(errors)
        raise LabkitError(problems[0] if count == 1 else f"{path}: {count} problems: " + "; ".join(problems),
                          "each task needs id, project, split (dev|test), kind, requirement, failing "
                          "(pytest node ids) and oracle (path, why, edits of search/replace).") from None
    tasks: dict[str, RepoTask] = {}
    for task in parsed.tasks:
        if task.id in tasks:
            raise LabkitError(f"{path}: task id {task.id!r} is used twice", "give every task its own id.")
        check_task(task, path.parent)
        tasks[task.id] = task
    return tasks


def _problem(raw: dict, err: Any, file: str) -> str:
    """One schema problem as ``file:line:column: task 'id': field: what is wrong``."""
    loc = list(err["loc"])
    what = ".".join(str(p) for p in loc)
    if len(loc) >= 2 and loc[0] == "tasks" and isinstance(loc[1], int):
        task_id = raw["tasks"][loc[1]].get("id", "?") if isinstance(raw["tasks"][loc[1]], dict) else "?"
        what = f"task {task_id!r}: " + ".".join(str(p) for p in loc[2:])
    where = where_of(raw, loc, Where(file, 1, 1))
    why = None
    if err["type"] in ("string_type", "literal_error") and not isinstance(err["input"], str | list | dict):
        why = not_text(err["input"], source_at(raw, loc), "the value", f"{loc[-1]}: {{}}")
    elif err["type"] == "extra_forbidden":
        known = _MODELS.get(tuple(p for p in loc[:-1] if not isinstance(p, int)))
        why = "unknown key" + (f"; known keys: {', '.join(known.model_fields)}" if known else "")
    return f"{where}: {what}: {why or err['msg']}"


_MODELS: dict[tuple[str, ...], type[BaseModel]] = {
    (): TaskFile, ("tasks",): RepoTask, ("tasks", "oracle"): FileFix, ("tasks", "oracle", "edits"): SearchReplace}
"""The model that validates each place of a task file (by its keys, list indexes left out)."""


def project_dir(task: RepoTask, root: str | Path = DEFAULT_TASK_FILE.parent) -> Path:
    return Path(root) / task.project


def check_task(task: RepoTask, root: Path) -> None:
    """Check what the schema cannot: the folder, its tests, the oracle's files and search texts."""
    folder = root / task.project
    if not folder.is_dir():
        raise LabkitError(f"task {task.id!r}: project folder {folder} does not exist",
                          "create the folder or correct 'project'.")
    for node in task.failing:
        test_file = node.split("::", 1)[0]
        if not (folder / test_file).is_file():
            raise LabkitError(f"task {task.id!r}: failing test {node!r} names a file that is not in {folder}",
                              "list node ids relative to the project folder (tests/test_x.py::test_name).")
    if task.hidden is not None and not (root / task.hidden).is_file():
        raise LabkitError(f"task {task.id!r}: hidden grader {task.hidden!r} is not in {root}",
                          "hidden paths are relative to the task file's folder.")
    for fix in task.oracle:
        target = folder / fix.path
        if not target.is_file():
            raise LabkitError(f"task {task.id!r}: oracle file {fix.path!r} is not in {folder}",
                              "oracle paths are relative to the project folder.")
        text = target.read_text(encoding="utf-8")
        for edit in fix.edits:
            if text.count(edit.search) != 1:
                raise LabkitError(f"task {task.id!r}: an oracle search text for {fix.path!r} occurs "
                                  f"{text.count(edit.search)} times in the file (it must occur once)",
                                  "make the search text longer, so that it is unique.")
            text = text.replace(edit.search, edit.replace, 1)


def split_ids(tasks: dict[str, RepoTask], split: str) -> list[str]:
    """Task ids of one split, in file order."""
    return [t.id for t in tasks.values() if t.split == split]
