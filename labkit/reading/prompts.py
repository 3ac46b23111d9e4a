"""The prompts: one whole-task prompt for the prompt-only arms, one per decision for the machine.

Plain few-shot completions with equal coverage, all from the dev split's ``examples``; ``order``
arguments are permutations from the run's seed."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from labkit.reading.families import compose_differences, compose_form, compose_route, oracle_draft
from labkit.reading.taskfile import (
    CompareTask,
    ExtractionTask,
    ReadingTask,
    SelectionTask,
    TriageTask,
)
from labkit.runtime.records import DIFF_FIELDS
from labkit.runtime.redact import scrub_text


def message_view(message: Mapping[str, Any]) -> str:
    """A message as every arm sees it: id, sender (when known) and text, one JSON object."""
    shown = {k: message[k] for k in ("id", "sender") if message.get(k)}
    shown["text"] = scrub_text(str(message.get("text", "")))
    return json.dumps(shown, ensure_ascii=False)


def record_view(record: Mapping[str, Any]) -> str:
    """A record as every arm sees it: the id and the compared fields."""
    return json.dumps({f: record[f] for f in ("id", *DIFF_FIELDS) if f in record}, ensure_ascii=False)


def _json(value: Mapping[str, Any]) -> str:
    return json.dumps(dict(value), ensure_ascii=False)


def reask(prompt: str, answer: str, problem: str, cue: str) -> str:
    """The corrective re-ask: the same prompt, the rejected answer, the violation named, the question again."""
    return f"{prompt}{answer.strip()}\nProblem: {problem}\n{cue}"


# ----------------------------------------------------------------------------- machine decisions
QUEUE_CUE = "Queue: "
FORM_CUE = "Form: "
NEXT_CUE = "Next: "


def queue_prompt(example: TriageTask, text: str, queues: Sequence[str]) -> str:
    """Which queue handles this message (the triage decision)."""
    listed = ", ".join(queues)
    return "\n".join([
        f"Route each customer message to the one queue that must act on it ({listed}). Other topics "
        "a message mentions in passing do not count.", "",
        f"Message: {scrub_text(example.message.text)}", f"{QUEUE_CUE}{_json({'queue': example.answer})}", "",
        f"Message: {scrub_text(text)}", QUEUE_CUE])


def form_prompt(example: ExtractionTask, note: str) -> str:
    """Fill the order form from this note (the extraction decision)."""
    return "\n".join([
        "Fill the order form from the note: the customer's own order number, its date, the amount they "
        "paid and the customer's name. Copy each value exactly as the note writes it; other orders, dates, "
        "amounts and people in the note are not the answer.", "",
        f"Note: {scrub_text(example.message.text)}", f"{FORM_CUE}{_json(example.answer.model_dump())}", "",
        f"Note: {scrub_text(note)}", FORM_CUE])


def _position_cue(position: int) -> str:
    return f"Message of the {'first' if position == 1 else 'second'} customer: "


def message_prompt(example: SelectionTask, description: str, messages: Sequence[Mapping[str, Any]],
                   position: int, first: str | None = None) -> str:
    """Which message is from the first (or second) customer the task describes (the selection decision)."""
    by_sender = {m.sender: m.id for m in example.messages}
    lines = ["A task describes two customers by what they wrote. Name the message each of them wrote.", "",
             f"Task: {example.description}", "Messages:", *(message_view(m.model_dump()) for m in example.messages),
             f"{_position_cue(1)}{_json({'message': by_sender[example.answer[0]]})}",
             f"{_position_cue(2)}{_json({'message': by_sender[example.answer[1]]})}", "",
             f"Task: {description}", "Messages:", *(message_view(m) for m in messages)]
    if position == 2:
        lines.append(f"{_position_cue(1)}{_json({'message': first})}")
    lines.append(_position_cue(position))
    return "\n".join(lines)


def message_cue(position: int) -> str:
    return _position_cue(position)


def next_prompt(example: CompareTask, description: str, read: Sequence[str], options: Sequence[str]) -> str:
    """Which record to read next, or save (the compare decision; the menu may hold a record to leave alone)."""
    first, *rest = example.answer
    shown = [*example.forbidden, *rest, "save"]
    return "\n".join([
        "Read each record the comparison needs, leave alone any record the task says not to read, then save.",
        "", f"Task: {example.description}", f"Read: {first}", f"Options: {', '.join(shown)}",
        f"{NEXT_CUE}{_json({'next': rest[0] if rest else 'save'})}", "",
        f"Task: {description}", f"Read: {', '.join(read) if read else 'none'}", f"Options: {', '.join(options)}",
        NEXT_CUE])


# ----------------------------------------------------------------------------- prompt-only arms
TOOL_LINES = (
    "- read_message(id): read one customer message or note (read-only)",
    "- read_record(id): read one customer record (read-only)",
    "- save_draft(key, text): save the answer as a text draft under the key (a write)",
    "- done(): the task is finished",
)
HELPER_LINES = (
    "- save_route(key, queue): code writes the routing draft for that queue and saves it",
    "- save_form(key, order, date, amount, name): code writes the order-form draft and saves it",
    "- save_differences(key, ids): code writes the differences draft of records already read and saves it",
)
DRAFT_LINES = (
    "Answer drafts:",
    "- routing: one line 'queue: <queue>'",
    "- order form: the lines 'order: ...', 'date: ...', 'amount: ...', 'name: ...', each value copied from the note",
    f"- comparison: 'Differences between <ids>:' and one line '- <field>: <id>=<value>, ...' per field "
    f"({', '.join(DIFF_FIELDS)}) whose values differ, records in the order the task gives them",
)


def step_line(action: str, args: Mapping[str, Any]) -> str:
    """One step of a prompt-only transcript as the worked episodes write it: a plain JSON action."""
    return json.dumps({"action": action, "args": dict(args)}, ensure_ascii=False)


def _save_step(task: ReadingTask, helpers: bool,
               records: Mapping[str, Mapping[str, Any]]) -> tuple[str, dict[str, Any]]:
    if not helpers:
        return "save_draft", {"key": task.draft_key, "text": oracle_draft(task)}
    if isinstance(task, TriageTask):
        return "save_route", {"key": task.draft_key, "queue": task.answer}
    if isinstance(task, ExtractionTask):
        return "save_form", {"key": task.draft_key, **task.answer.model_dump()}
    return "save_differences", {"key": task.draft_key, "ids": list(task.answer)}  # type: ignore[union-attr]


def episode(task: ReadingTask, helpers: bool) -> list[tuple[str, str]]:
    """The worked episode of ``task`` (a dev example): ``(step, result)`` lines of the right actions."""
    steps: list[tuple[str, str]] = []
    for m in task.message_list():
        steps.append((step_line("read_message", {"id": m.id}), "ok " + message_view(m.model_dump(exclude_none=True))))
    records = {r.id: r.as_dict() for r in task.record_list()}
    wanted = list(getattr(task, "answer", ())) if isinstance(task, SelectionTask | CompareTask) else []
    for rid in wanted:
        steps.append((step_line("read_record", {"id": rid}), "ok " + record_view(records[rid])))
    action, args = _save_step(task, helpers, records)
    steps.append((step_line(action, args), f"ok saved {task.draft_key}"))
    return steps


NEXT_STEP_QUESTION = "Write only the next step: one JSON action on one line."
PREFIX_END = "\nNow\n"  # the last line of every prompt-only prefix: the task follows


def whole_prefix(examples: Sequence[ReadingTask], *, helpers: bool) -> str:
    """The prompt-only arms' fixed start (instruction, tools, formats, one worked episode per family), the
    same for every step under one seed, so its KV state can be kept."""
    lines = ["An agent completes customer-service tasks with tools. Each step it writes one JSON action on "
             "one line.", "Tools:", *TOOL_LINES, *(HELPER_LINES if helpers else ()), *DRAFT_LINES]
    for n, example in enumerate(examples, start=1):
        lines += ["", f"Example {n}", f"Task: {example.description}"]
        steps = episode(example, helpers)
        for i, (step, result) in enumerate(steps, start=1):
            lines += [f"Step {i}: {step}", f"Result: {result}"]
        lines.append(f"Step {len(steps) + 1}: {step_line('done', {})}")
    return "\n".join(lines) + "\n" + PREFIX_END


def whole_prompt(examples: Sequence[ReadingTask], description: str, transcript: Sequence[tuple[str, str]], *,
                 helpers: bool) -> str:
    """The prompt-only arms' prompt: :func:`whole_prefix`, the task, the run so far and the question (which
    makes an instruction-tuned model write the next step)."""
    lines = [f"Task: {description}"]
    for i, (step, result) in enumerate(transcript, start=1):
        lines += [f"Step {i}: {step}", f"Result: {result}"]
    lines += [NEXT_STEP_QUESTION, f"Step {len(transcript) + 1}:"]
    return whole_prefix(examples, helpers=helpers) + "\n".join(lines)


__all__ = ["FORM_CUE", "NEXT_CUE", "PREFIX_END", "QUEUE_CUE", "compose_differences", "compose_form", "compose_route",
           "episode",
           "form_prompt", "message_cue", "message_prompt", "message_view", "next_prompt", "queue_prompt",
           "reask", "record_view", "step_line", "whole_prefix", "whole_prompt"]
