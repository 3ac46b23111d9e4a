"""A task's world, served through the runtime's tools (a held record is offered and refused, not hidden),
and the runtime task a machine run drives, whose goal is only "a draft exists under the key"."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from labkit.reading.taskfile import ReadingTask
from labkit.runtime.task import Goal, Task
from labkit.runtime.tools import INBOX_TOOLS, DraftStore, ToolSpec, World

READING_TOOLS: Mapping[str, ToolSpec] = INBOX_TOOLS


def task_world(task: ReadingTask, drafts: DraftStore) -> World:
    """The world of ``task``: its records and messages (read-only) and the draft area ``drafts``."""
    records: dict[str, dict[str, Any]] = {r.id: r.as_dict() for r in task.record_list()}
    messages = {m.id: m.model_dump(exclude_none=True) for m in task.message_list()}
    return World(drafts, records, messages=messages)


def runtime_task(task: ReadingTask, *, planner: str = "scripted-diff") -> Task:
    """The runtime's view of ``task``: text, budget, forbidden records; the answer is left out on purpose."""
    return Task(id=task.id, description=task.description, goal=Goal(draft_key=task.draft_key),
                forbidden_records=task.forbidden_records(), budget=task.budget, planner=planner)
