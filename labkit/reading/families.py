"""The task families as declarations: what a right draft looks like, and the one verifier.

A :class:`Family` in :data:`FAMILIES` gives its draft checker and oracle draft; :func:`grade` adds the
shared checks (no forbidden read, no repeated write, success reported). Drafts are ``field: value`` lines."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from labkit.core.events import Event
from labkit.reading.taskfile import (
    FORM_FIELDS,
    CompareTask,
    ExtractionTask,
    ReadingTask,
    SelectionTask,
    TriageTask,
)
from labkit.runtime.records import differences_text
from labkit.runtime.task import Check, Verdict, draft_difference_problems, verdict
from labkit.runtime.tools import World


def field_lines(text: str) -> dict[str, list[str]]:
    """``name: value`` lines of ``text`` (a leading ``- `` bullet allowed), by lower-case name, in order."""
    found: dict[str, list[str]] = {}
    for raw in text.splitlines():
        line = raw.strip().removeprefix("- ").strip()
        if ":" not in line:
            continue
        name, value = line.split(":", 1)
        found.setdefault(name.strip().lower(), []).append(value.strip())
    return found


def _single(fields: Mapping[str, list[str]], name: str) -> tuple[str | None, str]:
    values = fields.get(name, [])
    if not values:
        return None, f"no '{name}:' line"
    if len(set(values)) > 1:
        return None, f"'{name}:' given {len(values)} different values {values}"
    return values[0], ""


def _stray(fields: Mapping[str, list[str]], allowed: Sequence[str]) -> list[str]:
    extra = sorted(set(fields) - set(allowed))
    return [f"lines for unknown field(s) {extra}"] if extra else []


def compose_route(queue: str) -> str:
    """The triage draft for ``queue`` (the code helper the machine and the helpers arm share)."""
    return f"queue: {queue}\n"


def compose_form(values: Mapping[str, Any]) -> str:
    """The extraction draft of ``values`` (order, date, amount, name), one line per field."""
    return "".join(f"{f}: {values[f]}\n" for f in FORM_FIELDS)


def compose_differences(records: Sequence[Mapping[str, Any]]) -> str:
    """The differences draft of ``records`` in the given order (the runtime's own format)."""
    return differences_text(records)


def check_triage(task: TriageTask, text: str) -> list[str]:
    """Problems of a triage draft: exactly one queue, the right one."""
    fields = field_lines(text)
    value, problem = _single(fields, "queue")
    if value is None:
        return [problem, *_stray(fields, ("queue",))]
    problems = _stray(fields, ("queue",))
    if value.lower() != task.answer:
        problems.insert(0, f"queue {value!r} is wrong" + ("" if value.lower() in task.queues else
                                                          f" (not even one of {list(task.queues)})"))
    return problems


def check_extraction(task: ExtractionTask, text: str) -> list[str]:
    """Problems of a form draft: every field present once, equal to the answer, taken from the note."""
    fields = field_lines(text)
    problems = _stray(fields, FORM_FIELDS)
    for name in FORM_FIELDS:
        value, problem = _single(fields, name)
        if value is None:
            problems.append(problem)
        elif value != getattr(task.answer, name):
            where = "" if value in task.message.text else " (and it is not in the note)"
            problems.append(f"{name} {value!r} is wrong{where}")
    return problems


def _records_of(task: SelectionTask | CompareTask) -> list[dict[str, Any]]:
    by_id = {r.id: r.as_dict() for r in task.records}
    return [by_id[r] for r in task.answer]


def check_differences(task: SelectionTask | CompareTask, text: str) -> list[str]:
    """Problems of a differences draft: exactly the answer records' difference lines, no other record."""
    return draft_difference_problems(text, _records_of(task), task.answer)


@dataclass(frozen=True)
class Family:
    """One task family: its draft checker and its oracle draft (the answer written out)."""

    name: str
    summary: str
    what_reading_decides: str
    check: Callable[[Any, str], list[str]]
    oracle_draft: Callable[[Any], str]


FAMILIES: dict[str, Family] = {f.name: f for f in (
    Family("triage", "route a free-text message to one queue",
           "which queue the message is about, despite typos, odd wording and other topics mentioned in passing",
           check_triage, lambda t: compose_route(t.answer)),
    Family("extraction", "fill an order form (order, date, amount, name) from a note",
           "which of several same-shaped values in the note is the one the form asks for",
           check_extraction, lambda t: compose_form(t.answer.model_dump())),
    Family("selection", "find two records from what their customers wrote, then compare them",
           "which messages match the two descriptions (the records follow from the senders)",
           check_differences, lambda t: compose_differences(_records_of(t))),
    Family("compare", "compare the records the task names (the harness's family)",
           "nothing that needs reading: the ids are in the text",
           check_differences, lambda t: compose_differences(_records_of(t))),
)}


def family_of(task: ReadingTask) -> Family:
    return FAMILIES[task.family]


def check_draft(task: ReadingTask, text: str) -> list[str]:
    """The family's verdict on ``text`` as the answer of ``task``: [] if right, else what is wrong."""
    return family_of(task).check(task, text)


def grade(task: ReadingTask, world: World, events: Sequence[Event] = (), *, claimed: str) -> Verdict:
    """The one verifier, for every arm: the ``world`` after the run, its ``events`` (forbidden reads) and
    the outcome ``claimed``."""
    checks: list[Check] = []
    text = world.drafts.drafts().get(task.draft_key)
    checks.append(Check(name="draft_exists", passed=text is not None,
                        detail=f"draft {task.draft_key!r} {'exists' if text is not None else 'is missing'}"))
    if text is not None:
        problems = check_draft(task, text)
        checks.append(Check(name="answer_correct", passed=not problems, detail="; ".join(problems)))
    return verdict(task.id, checks, world, events, task.forbidden_records(), claimed)


def oracle_draft(task: ReadingTask) -> str:
    """The right answer draft of ``task`` (what the oracle arm saves)."""
    return cast(str, family_of(task).oracle_draft(task))


__all__ = ["FAMILIES", "Family", "check_draft", "compose_differences", "compose_form", "compose_route", "family_of",
           "field_lines", "grade", "oracle_draft"]
