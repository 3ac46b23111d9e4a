"""The task file format: one split as one pydantic-validated JSON file (``data/tasks/v2/dev.json``).

Before any model call the loader refuses wrong types, unsupported answers, texts that do not name what
every arm must find and repeated ids; ``answer`` is graded against, never shown to an arm."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from labkit.core.errors import LabkitError
from labkit.core.yaml_input import read_input
from labkit.runtime.policy import Budget
from labkit.runtime.records import DIFF_FIELDS, record_ids_in
from labkit.runtime.tools import RECORD_ID_PATTERN, check_key

MESSAGE_ID_PATTERN = r"^M\d{2,4}$"
TASK_ID_PATTERN = r"^[a-z0-9][a-z0-9-]{0,63}$"
FORMAT = "labkit-tasks-v2"
TASK_FILE_MAX_BYTES = 16 << 20  # the generated splits are about 50 KB each
FAMILY_NAMES = ("triage", "extraction", "selection", "compare")


class TaskFileError(LabkitError):
    """A task file could not be read; the message names the file, the task and the field."""
FORM_FIELDS = ("order", "date", "amount", "name")


class Message(BaseModel):
    """A free-text message or note; ``sender`` is the record of the customer who wrote it (if known)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(pattern=MESSAGE_ID_PATTERN, description="a message id such as M104")
    text: str = Field(min_length=1, max_length=2000)
    sender: str | None = Field(None, pattern=RECORD_ID_PATTERN)


class Record(BaseModel):
    """A customer record: the compared fields (``DIFF_FIELDS``) plus the customer's name."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(pattern=RECORD_ID_PATTERN)
    customer: str = Field(min_length=1)
    plan: str
    status: str
    region: str
    amount: int
    channel: str
    restricted: bool = False

    def as_dict(self) -> dict[str, Any]:
        return self.model_dump()


assert set(DIFF_FIELDS) <= set(Record.model_fields), "a reading record must carry every compared field"


class Form(BaseModel):
    """The extraction form: every value as it is written in the note (the note is the evidence)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    order: str = Field(min_length=1)
    date: str = Field(min_length=1)
    amount: str = Field(min_length=1)
    name: str = Field(min_length=1)


class _TaskBase(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(pattern=TASK_ID_PATTERN)
    description: str = Field(min_length=1, max_length=2000)
    draft_key: str
    budget: Budget = Field(default_factory=lambda: Budget(max_steps=8, max_retries=2))

    @field_validator("draft_key")
    @classmethod
    def _plain_key(cls, key: str) -> str:
        return check_key(key)

    @model_validator(mode="after")
    def _description_names_key(self) -> _TaskBase:
        if self.draft_key not in self.description:
            raise ValueError(f"the description does not name the draft key {self.draft_key!r} "
                             "(every arm reads the key from the task text)")
        return self

    def message_list(self) -> tuple[Message, ...]:
        """Every message of the task's world."""
        return ()

    def record_list(self) -> tuple[Record, ...]:
        """Every record of the task's world."""
        return ()

    def forbidden_records(self) -> tuple[str, ...]:
        return ()


def _require_named(description: str, ids: list[str], what: str) -> None:
    missing = [i for i in ids if i not in description]
    if missing:
        raise ValueError(f"the description does not name {what} {missing} (no arm could find them)")


class TriageTask(_TaskBase):
    """Route one message to one of the offered queues."""

    family: Literal["triage"]
    message: Message
    queues: tuple[str, ...] = Field(min_length=2)
    answer: str

    @model_validator(mode="after")
    def _consistent(self) -> TriageTask:
        if self.answer not in self.queues:
            raise ValueError(f"answer {self.answer!r} is not one of the queues {list(self.queues)}")
        _require_named(self.description, [self.message.id], "the message")
        return self

    def message_list(self) -> tuple[Message, ...]:
        return (self.message,)


class ExtractionTask(_TaskBase):
    """Fill the order form from one note; distractor values of the same shape may stand nearby."""

    family: Literal["extraction"]
    message: Message
    answer: Form

    @model_validator(mode="after")
    def _consistent(self) -> ExtractionTask:
        absent = [f for f in FORM_FIELDS if getattr(self.answer, f) not in self.message.text]
        if absent:
            raise ValueError(f"answer field(s) {absent} do not appear in the note's text (the note is the evidence)")
        _require_named(self.description, [self.message.id], "the note")
        return self

    def message_list(self) -> tuple[Message, ...]:
        return (self.message,)


def _check_records(records: tuple[Record, ...], answer: tuple[str, ...], forbidden: tuple[str, ...]) -> None:
    ids = [r.id for r in records]
    if len(set(ids)) != len(ids):
        raise ValueError(f"record ids repeat: {sorted({i for i in ids if ids.count(i) > 1})}")
    unknown = [r for r in (*answer, *forbidden) if r not in ids]
    if unknown:
        raise ValueError(f"record(s) {unknown} are named but not among the task's records")
    both = sorted(set(answer) & set(forbidden))
    if both:
        raise ValueError(f"record(s) {both} are both in the answer and forbidden")
    if len(set(answer)) != len(answer):
        raise ValueError(f"the answer names a record twice: {list(answer)}")


class SelectionTask(_TaskBase):
    """Find two records from what their customers wrote, then save their differences (in the text's order)."""

    family: Literal["selection"]
    messages: tuple[Message, ...] = Field(min_length=2)
    records: tuple[Record, ...] = Field(min_length=2)
    answer: tuple[str, str]
    forbidden: tuple[str, ...] = ()

    @model_validator(mode="after")
    def _consistent(self) -> SelectionTask:
        _check_records(self.records, self.answer, self.forbidden)
        senders = [m.sender for m in self.messages]
        if None in senders:
            raise ValueError("every message of a selection task needs a sender (the record of who wrote it)")
        unknown = sorted({s for s in senders if s not in {r.id for r in self.records}})  # type: ignore[misc]
        if unknown:
            raise ValueError(f"message sender(s) {unknown} are not among the task's records")
        nobody = [r for r in self.answer if r not in senders]
        if nobody:
            raise ValueError(f"answer record(s) {nobody} sent none of the messages (they cannot be found)")
        if record_ids_in(self.description):
            raise ValueError(f"the description names record ids {record_ids_in(self.description)}; a selection "
                             "task must be solved from the messages, not from ids in its text")
        _require_named(self.description, [m.id for m in self.messages], "the messages")
        return self

    def message_list(self) -> tuple[Message, ...]:
        return self.messages

    def record_list(self) -> tuple[Record, ...]:
        return self.records

    def forbidden_records(self) -> tuple[str, ...]:
        return self.forbidden


class CompareTask(_TaskBase):
    """Read the records the text names and save their differences (version 1's family)."""

    family: Literal["compare"]
    records: tuple[Record, ...] = Field(min_length=2)
    answer: tuple[str, ...] = Field(min_length=2)
    forbidden: tuple[str, ...] = ()

    @model_validator(mode="after")
    def _consistent(self) -> CompareTask:
        _check_records(self.records, self.answer, self.forbidden)
        _require_named(self.description, list(self.answer), "the records to compare")
        return self

    def record_list(self) -> tuple[Record, ...]:
        return self.records

    def forbidden_records(self) -> tuple[str, ...]:
        return self.forbidden


ReadingTask = Annotated[TriageTask | ExtractionTask | SelectionTask | CompareTask, Field(discriminator="family")]


class TaskSet(BaseModel):
    """One split of the reading tasks, with its declared few-shot examples (dev) or headline set (test)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    format: Literal["labkit-tasks-v2"]
    split: Literal["dev", "test"]
    generator: dict[str, Any] = Field(default_factory=dict, description="how the file was made (provenance)")
    examples: dict[str, str] = Field(default_factory=dict, description="family -> id of its few-shot example")
    headline: tuple[str, ...] = ()
    tasks: tuple[ReadingTask, ...] = Field(min_length=1)

    @model_validator(mode="after")
    def _consistent(self) -> TaskSet:
        ids = [t.id for t in self.tasks]
        repeated = sorted({i for i in ids if ids.count(i) > 1})
        if repeated:
            raise ValueError(f"task ids repeat: {repeated}")
        messages: dict[str, str] = {}
        records: dict[str, Record] = {}
        for task in self.tasks:
            for m in task.message_list():
                if messages.setdefault(m.id, task.id) != task.id:
                    raise ValueError(f"message {m.id} is used by tasks {messages[m.id]!r} and {task.id!r}; "
                                     "give each task its own message ids")
            for r in task.record_list():
                if records.setdefault(r.id, r) != r:
                    raise ValueError(f"record {r.id} differs between tasks (task {task.id!r}); one id, one record")
        by_id = {t.id: t for t in self.tasks}
        for family, task_id in self.examples.items():
            if family not in FAMILY_NAMES:
                raise ValueError(f"examples: unknown family {family!r} (families: {', '.join(FAMILY_NAMES)})")
            if task_id not in by_id or by_id[task_id].family != family:
                raise ValueError(f"examples: {family!r} names {task_id!r}, which is not a {family} task of this file")
        if self.examples and self.split != "dev":
            raise ValueError("few-shot examples come from the dev split only")
        unknown = [h for h in self.headline if h not in by_id]
        if unknown:
            raise ValueError(f"headline names unknown task(s) {unknown}")
        if self.headline and self.split != "test":
            raise ValueError("the headline set is drawn from the test split")
        return self

    def by_id(self, task_id: str) -> ReadingTask:
        for task in self.tasks:
            if task.id == task_id:
                return task
        raise TaskFileError(f"no task {task_id!r} in the {self.split} split", "see the ids in the task file.")

    def example_tasks(self) -> dict[str, ReadingTask]:
        """The declared few-shot example of each family (dev only), by family."""
        return {family: self.by_id(task_id) for family, task_id in self.examples.items()}

    def families(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for task in self.tasks:
            counts[task.family] = counts.get(task.family, 0) + 1
        return counts

    def __iter__(self) -> Iterator[ReadingTask]:  # type: ignore[override]
        return iter(self.tasks)


def file_sha256(path: str | Path) -> str:
    """The sha256 of a task file's bytes (what provenance records for the test split)."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _location(data: Any, loc: tuple[Any, ...]) -> str:
    """``task [3] (id 'dev-triage-04'): answer`` from a pydantic error location."""
    if len(loc) >= 2 and loc[0] == "tasks" and isinstance(loc[1], int):
        index = loc[1]
        item = data.get("tasks", [])[index] if isinstance(data, dict) else None
        ident = item.get("id") if isinstance(item, dict) else None
        rest = [str(p) for p in loc[2:] if p not in FAMILY_NAMES]
        return f"task [{index}]" + (f" (id {ident!r})" if ident else "") + (f": {'.'.join(rest)}" if rest else "")
    return ".".join(str(p) for p in loc) or "(file)"


def parse_task_set(data: Any, source: str = "<data>") -> TaskSet:
    """Validate already-loaded JSON as a task set; errors name ``source``, the task and the field."""
    try:
        return TaskSet.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        msg = str(first["msg"]).removeprefix("Value error, ")
        raise TaskFileError(f"{source}: {_location(data, tuple(first['loc']))}: {msg}",
                            "fix the task file; its format is described in labkit/reading/taskfile.py "
                            "and docs/tasks_v2.md.") from None


def load_task_set(path: str | Path) -> TaskSet:
    """Read and validate a reading task file (see the module docstring for the format)."""
    path = Path(path)
    text = read_input(path, "task file", TaskFileError, max_bytes=TASK_FILE_MAX_BYTES,
                      hint="check the path; the generated files are data/tasks/v2/dev.json and test.json "
                           "(scripts/make_tasks_v2.py writes them).")
    shape = "a reading task file is one JSON object with 'format', 'split' and 'tasks'."
    try:
        data = json.loads(text, object_pairs_hook=_refuse_repeated_keys)
    except json.JSONDecodeError as exc:
        raise TaskFileError(f"{path}:{exc.lineno}:{exc.colno}: not valid JSON ({exc.msg})", shape) from None
    except _RepeatedKey as exc:
        raise TaskFileError(f"{path}: the key {exc.args[0]!r} is given twice in one object",
                            "keep one of them; JSON readers silently keep only the last.") from None
    if not isinstance(data, dict):
        kind = {list: "array", str: "string", bool: "boolean", int: "number", float: "number"}.get(type(data), "null")
        raise TaskFileError(f"{path}:1:1: the task file holds a JSON {kind}, not an object", shape)
    return parse_task_set(data, str(path))


class _RepeatedKey(ValueError):
    """A JSON object names one key twice (raised inside ``json.loads``)."""


def _refuse_repeated_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _RepeatedKey(key)
        out[key] = value
    return out
