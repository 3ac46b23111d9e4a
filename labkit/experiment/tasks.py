"""Task files for the experiment: the runtime's :class:`~labkit.runtime.task.Task` JSON, one task or a list.

Why a separate loader: ``Task.load`` reads one task per file; an experiment wants a whole set, from
a file holding a list, a file holding one task, or a folder of such files, and it wants every
mistake reported with the file, the task's position and the field, before a single model call is
spent. The checks beyond the schema are the ones that would silently spoil a comparison: duplicate
ids, goals that name unknown or forbidden records, and task texts that do not name the records the
goal needs (every arm reads the task text; none reads the goal).
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import ValidationError

from labkit.errors import LabkitError
from labkit.experiment.menu import draft_key_in, record_ids_in
from labkit.runtime.records import load_records
from labkit.runtime.task import Task

DEFAULT_TASKS = Path(__file__).resolve().parents[2] / "data" / "tasks" / "comparison.json"


class TaskFileError(LabkitError):
    """A task file could not be read as experiment tasks; the message names file, task and field."""


def _where(path: Path, index: int | None, data: object) -> str:
    if index is None:
        return str(path)
    ident = data.get("id") if isinstance(data, dict) else None
    return f"{path}: task [{index}]" + (f" (id {ident!r})" if ident else "")


def _parse(path: Path) -> list[Task]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise TaskFileError(f"cannot read task file {path}: {exc.strerror or exc}",
                            "check the path (--tasks FILE or folder of .json files).") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TaskFileError(f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})",
                            "a task file holds one task object or a list of them.") from None
    items = data if isinstance(data, list) else [data]
    if not items:
        raise TaskFileError(f"{path}: the list of tasks is empty", "put at least one task in it.")
    tasks = []
    for index, item in enumerate(items):
        where = _where(path, index if isinstance(data, list) else None, item)
        if not isinstance(item, dict):
            raise TaskFileError(f"{where}: a task must be a JSON object, got {type(item).__name__}",
                                "see data/tasks/comparison.json for the format.")
        try:
            tasks.append(Task.model_validate(item))
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(p) for p in first["loc"]) or "(task)"
            more = f" (+{exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
            raise TaskFileError(f"{where}: field {field}: {first['msg']}{more}",
                                "fix that field; the format is labkit.runtime.task.Task.") from None
    return tasks


def check_task(task: Task, where: str, records: dict[str, dict[str, object]] | None = None) -> None:
    """Refuse a task the experiment cannot grade fairly (see the module docstring)."""
    records = records if records is not None else load_records()
    goal = task.goal
    if not goal.reads or not goal.draft_key:
        raise TaskFileError(f"{where}: field goal: the experiment needs goal.reads and goal.draft_key",
                            "give the records to compare and the draft key.")
    unknown = [r for r in (*goal.reads, *task.forbidden_records) if r not in records]
    if unknown:
        raise TaskFileError(f"{where}: field goal.reads/forbidden_records: unknown record(s) {unknown}",
                            "use ids of data/records.json (R01…R40).")
    clash = sorted(set(goal.reads) & set(task.forbidden_records))
    if clash:
        raise TaskFileError(f"{where}: field forbidden_records: {clash} are also in goal.reads",
                            "a task cannot need a record it forbids.")
    named = record_ids_in(task.description)
    missing = [r for r in goal.reads if r not in named]
    if missing:
        raise TaskFileError(f"{where}: field description: does not name {missing} from goal.reads",
                            "every arm works from the description; it must name the records to read.")
    order = [r for r in named if r in goal.reads]
    if order != list(goal.reads):
        raise TaskFileError(f"{where}: field goal.reads: {list(goal.reads)} is not the order the description "
                            f"names them in ({order})", "list goal.reads in the order of the description.")
    if draft_key_in(task.description) != goal.draft_key:
        raise TaskFileError(f"{where}: field description: does not say 'key {goal.draft_key}'",
                            "write the draft key into the description as 'key NAME'.")


def load_tasks(path: str | Path | None = None) -> list[Task]:
    """Tasks from a file (one task or a list) or a folder of ``*.json`` files, checked."""
    p = Path(path) if path is not None else DEFAULT_TASKS
    if p.is_dir():
        files = sorted(p.glob("*.json"))
        if not files:
            raise TaskFileError(f"no .json task files in folder {p}", "give a task file or a folder of them.")
    elif p.exists():
        files = [p]
    else:
        raise TaskFileError(f"no task file or folder at {p}", f"the default set is {DEFAULT_TASKS}.")
    tasks: list[Task] = []
    seen: dict[str, str] = {}
    records = load_records()
    for file in files:
        for index, task in enumerate(_parse(file)):
            where = f"{file}: task [{index}] (id {task.id!r})"
            if task.id in seen:
                raise TaskFileError(f"{where}: field id: {task.id!r} is already used in {seen[task.id]}",
                                    "give every task its own id.")
            seen[task.id] = str(file)
            check_task(task, where, records)
            tasks.append(task)
    return tasks
