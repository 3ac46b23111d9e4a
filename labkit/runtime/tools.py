"""The tools a run may use over synthetic data: ``read_record``, ``save_draft`` (a real SQLite draft area,
idempotent by key, each call in its ``calls`` table) and the planner-invisible ``draft_status``;
:data:`INBOX_TOOLS` adds ``read_message``. Each is one :class:`ToolSpec`; keys must be plain names."""

from __future__ import annotations

import hashlib
import re
import sqlite3
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from labkit.core.errors import LabkitError
from labkit.runtime.records import load_records

DRAFT_REPLY_LOST = "no answer from the draft area (the save may have happened)"
KEY_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
RECORD_ID_PATTERN = r"^R\d{2,4}$"
MESSAGE_ID_PATTERN = r"^M\d{2,4}$"


def check_key(key: str) -> str:
    """Return ``key`` if it names a draft inside the draft area, else raise ``ValueError``."""
    if not isinstance(key, str) or not KEY_PATTERN.match(key) or ".." in key:
        raise ValueError(f"draft key {key!r} is not a plain name (letters, digits, '_', '-', '.'; "
                         "no '/', no '..', no absolute path; at most 64 characters)")
    return key


def text_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class ReadRecordArgs(BaseModel):
    """Arguments of ``read_record``."""

    model_config = ConfigDict(extra="forbid", strict=True)

    id: str = Field(pattern=RECORD_ID_PATTERN, description="a record id such as R07")


class ReadMessageArgs(BaseModel):
    """Arguments of ``read_message``."""

    model_config = ConfigDict(extra="forbid", strict=True)

    id: str = Field(pattern=MESSAGE_ID_PATTERN, description="a message id such as M104")


class SaveDraftArgs(BaseModel):
    """Arguments of ``save_draft``."""

    model_config = ConfigDict(extra="forbid", strict=True)

    text: str = Field(min_length=1, max_length=4000)
    key: str = Field(description="a plain draft name such as diff-R03-R05-R11")

    @field_validator("key")
    @classmethod
    def _plain_key(cls, key: str) -> str:
        return check_key(key)


class DraftStatusArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    key: str

    @field_validator("key")
    @classmethod
    def _plain_key(cls, key: str) -> str:
        return check_key(key)


@dataclass(frozen=True)
class ToolAnswer:
    """What a tool returned: a typed outcome plus data (unredacted: the executor redacts it)."""

    outcome: Literal["ok", "error", "denied", "timeout"]
    data: Mapping[str, Any] = field(default_factory=dict)
    detail: str = ""


@dataclass(frozen=True)
class CallContext:
    """What the executor tells a tool beyond the arguments."""

    action_id: str = ""
    human_grant: bool = False


_DRAFT_SCHEMA = """
CREATE TABLE IF NOT EXISTS drafts (
    area TEXT NOT NULL, key TEXT NOT NULL, text TEXT NOT NULL, sha256 TEXT NOT NULL,
    PRIMARY KEY (area, key));
CREATE TABLE IF NOT EXISTS calls (
    id INTEGER PRIMARY KEY AUTOINCREMENT, area TEXT NOT NULL, key TEXT NOT NULL,
    sha256 TEXT NOT NULL, changed INTEGER NOT NULL, request TEXT NOT NULL);
"""


class DraftStore:
    """The draft area: a SQLite file with one namespace (``area``) per run."""

    def __init__(self, path: str | Path, area: str = "default") -> None:
        self.path = Path(path)
        self.area = area
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._conn = sqlite3.connect(self.path, isolation_level=None)
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.executescript(_DRAFT_SCHEMA)
        except sqlite3.DatabaseError as exc:
            raise LabkitError(f"{self.path} is not a draft store ({exc})",
                              "give a new file name or a draft store written by labkit.") from None

    def save(self, key: str, text: str, request: str = "") -> bool:
        """Save ``text`` under ``key``; return whether anything changed. One transaction."""
        check_key(key)
        digest = text_sha256(text)
        with self._conn:
            self._conn.execute("BEGIN IMMEDIATE")
            row = self._conn.execute("SELECT sha256 FROM drafts WHERE area = ? AND key = ?",
                                     (self.area, key)).fetchone()
            changed = row is None or row[0] != digest
            if changed:
                self._conn.execute("INSERT OR REPLACE INTO drafts (area, key, text, sha256) VALUES (?, ?, ?, ?)",
                                   (self.area, key, text, digest))
            self._conn.execute("INSERT INTO calls (area, key, sha256, changed, request) VALUES (?, ?, ?, ?, ?)",
                               (self.area, key, digest, int(changed), request))
        return changed

    def status(self, key: str) -> str | None:
        """The digest of the draft under ``key``, or None when there is none."""
        check_key(key)
        row = self._conn.execute("SELECT sha256 FROM drafts WHERE area = ? AND key = ?",
                                 (self.area, key)).fetchone()
        return None if row is None else str(row[0])

    def drafts(self) -> dict[str, str]:
        """Every draft of this area: key -> text."""
        rows = self._conn.execute("SELECT key, text FROM drafts WHERE area = ? ORDER BY key", (self.area,))
        return {k: t for k, t in rows}

    def calls(self) -> list[tuple[str, str, bool, str]]:
        """Every save that reached the store: (key, sha256, changed, request), in order."""
        rows = self._conn.execute("SELECT key, sha256, changed, request FROM calls WHERE area = ? ORDER BY id",
                                  (self.area,))
        return [(k, s, bool(c), r) for k, s, c, r in rows]

    def repeated_keys(self) -> dict[str, int]:
        """Keys whose same save (key and text) reached the store more than once, with 1 + the repeats."""
        counts: dict[tuple[str, str], int] = {}
        for key, digest, *_ in self.calls():
            counts[(key, digest)] = counts.get((key, digest), 0) + 1
        repeated: dict[str, int] = {}
        for (key, _), n in counts.items():
            if n > 1:
                repeated[key] = repeated.get(key, 1) + n - 1
        return repeated

    def export(self, folder: str | Path) -> list[Path]:
        """Write each draft to ``folder/<key>.txt``, refusing any path that would leave ``folder``."""
        root = Path(folder).resolve()
        root.mkdir(parents=True, exist_ok=True)
        written = []
        for key, text in self.drafts().items():
            target = (root / f"{check_key(key)}.txt").resolve()
            if root not in target.parents:
                raise LabkitError(f"draft key {key!r} would be written outside {root}", "use a plain key.")
            target.write_text(text, encoding="utf-8")
            written.append(target)
        return written

    def close(self) -> None:
        self._conn.close()


class World:
    """The synthetic world a run acts on: records and messages (read-only) and a draft area; ``latency``
    makes every call take that long, so a crash test can kill inside one."""

    def __init__(self, drafts: DraftStore, records: Mapping[str, Mapping[str, Any]] | None = None,
                 *, messages: Mapping[str, Mapping[str, Any]] | None = None, latency: float = 0.0,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.records = dict(records) if records is not None else load_records()
        self.messages = dict(messages or {})
        self.drafts = drafts
        self.latency = latency
        self._sleep = sleep

    @classmethod
    def open(cls, drafts_path: str | Path, area: str = "default", *, records_path: str | Path | None = None,
             latency: float = 0.0) -> World:
        return cls(DraftStore(drafts_path, area), load_records(records_path), latency=latency)

    def _wait(self) -> None:
        if self.latency:
            self._sleep(self.latency / 2)

    # ------------------------------------------------------------- the tools
    def read_record(self, args: ReadRecordArgs, ctx: CallContext) -> ToolAnswer:
        self._wait()
        record = self.records.get(args.id)
        self._wait()
        if record is None:
            return ToolAnswer("error", detail=f"there is no record {args.id}")
        if record.get("restricted") and not ctx.human_grant:
            return ToolAnswer("denied", detail=f"record {args.id} is restricted; a supervisor must approve")
        return ToolAnswer("ok", data=dict(record))

    def read_message(self, args: ReadMessageArgs, ctx: CallContext) -> ToolAnswer:
        self._wait()
        message = self.messages.get(args.id)
        self._wait()
        if message is None:
            return ToolAnswer("error", detail=f"there is no message {args.id}")
        return ToolAnswer("ok", data=dict(message))

    def save_draft(self, args: SaveDraftArgs, ctx: CallContext, *, lose_reply: bool = False) -> ToolAnswer:
        """Save the draft; ``lose_reply`` answers a timeout after the save (what a lost reply looks like)."""
        self._wait()
        changed = self.drafts.save(args.key, args.text, request=ctx.action_id)
        self._wait()
        if lose_reply:
            return ToolAnswer("timeout", detail=DRAFT_REPLY_LOST)
        return ToolAnswer("ok", data={"key": args.key, "sha256": text_sha256(args.text), "changed": changed})

    def draft_status(self, args: DraftStatusArgs, ctx: CallContext) -> ToolAnswer:
        self._wait()
        digest = self.drafts.status(args.key)
        return ToolAnswer("ok", data={"key": args.key, "exists": digest is not None, "sha256": digest or ""})


Facts = Mapping[str, Any]
ToolRun = Callable[[World, BaseModel, CallContext], ToolAnswer]


def world_method(name: str) -> ToolRun:
    """Run a tool as the world's method of the same name (how the world's own tools are served)."""
    return lambda world, args, ctx: getattr(world, name)(args, ctx)  # type: ignore[no-any-return]


@dataclass(frozen=True)
class Observes:
    """What an ``ok`` answer is observed as: ``kind`` (an observation kind) and ``facts`` built from the
    redacted answer and the arguments."""

    kind: str
    facts: Callable[[Facts, Facts], dict[str, Any]]


def _read_facts(data: Facts, args: Facts) -> dict[str, Any]:
    return dict(data)


def _draft_facts(data: Facts, args: Facts) -> dict[str, Any]:
    return {"key": data.get("key"), "sha256": data.get("sha256"), "text": args.get("text", "")}


READ_OBSERVED = Observes("record_read", _read_facts)  # the answer is what was read (a record, a message)
DRAFT_OBSERVED = Observes("draft_saved", _draft_facts)  # key and digest from the answer, text from the call


@dataclass(frozen=True)
class StatusQuery:
    """How an unknown write is settled: ``tool`` (answers ``exists`` and ``sha256``), ``key`` (the effect's
    name in the arguments), ``digest`` (what the effect's digest must be)."""

    tool: str
    key: Callable[[Facts], str]
    digest: Callable[[Facts], str]
    unavailable: str = "no answer (status unavailable)"  # the detail when the query itself times out

    def query_args(self, args: Facts) -> dict[str, Any]:
        """The status query's arguments for a write made with ``args``."""
        return {"key": self.key(args)}

    def outcome(self, args: Facts, answer: ToolAnswer) -> str:
        """``present`` when the answer shows this very write's effect, else ``absent``."""
        found = str(answer.data.get("sha256", ""))
        return "present" if answer.data.get("exists") and found == self.digest(args) else "absent"


DRAFT_STATUS = StatusQuery("draft_status", key=lambda args: str(args.get("key", "")),
                           digest=lambda args: text_sha256(str(args.get("text", ""))),
                           unavailable="no answer from the draft area")

# The fault kinds that strike a tool's calls (the planner's and the runner's faults strike no tool).
READ_FAULTS = ("read_timeout", "denied", "duplicate_result", "crash")
WRITE_FAULTS = ("write_timeout", "denied", "duplicate_result", "crash")
STATUS_FAULTS = ("status_timeout",)


@dataclass(frozen=True)
class ToolSpec:
    """One tool, declared once for every component: ``args`` schema, ``side_effect``, ``run`` (default the
    :class:`World` method), ``observes``, ``faults``, ``lost_reply`` and the settling ``status`` query."""

    name: str
    args: type[BaseModel]
    side_effect: bool
    summary: str
    planner_visible: bool = True
    run: ToolRun | None = None
    observes: Observes | None = None
    faults: tuple[str, ...] | None = None
    lost_reply: str = "no answer before the deadline (the call may have acted)"
    status: StatusQuery | None = None

    def call(self, world: World, args: BaseModel, ctx: CallContext) -> ToolAnswer:
        """Run the tool once in ``world`` with parsed arguments (no fault: see :mod:`labkit.runtime.inject`)."""
        return (self.run or world_method(self.name))(world, args, ctx)

    @property
    def observation(self) -> Observes:
        if self.observes is not None:
            return self.observes
        return DRAFT_OBSERVED if self.side_effect else READ_OBSERVED

    @property
    def fault_kinds(self) -> tuple[str, ...]:
        if self.faults is not None:
            return self.faults
        return WRITE_FAULTS if self.side_effect else READ_FAULTS

    @property
    def status_query(self) -> StatusQuery | None:
        if not self.side_effect:
            return None
        return self.status or DRAFT_STATUS

    def describe(self) -> dict[str, Any]:
        """A short description for a planner's context (name, argument names and types, side effect)."""
        props = self.args.model_json_schema().get("properties", {})
        return {"name": self.name, "args": {k: v.get("type", "any") for k, v in props.items()},
                "writes": self.side_effect, "summary": self.summary}


TOOLS: dict[str, ToolSpec] = {t.name: t for t in (
    ToolSpec("read_record", ReadRecordArgs, False, "read one customer record by id (read-only)",
             observes=READ_OBSERVED, faults=READ_FAULTS),
    ToolSpec("save_draft", SaveDraftArgs, True, "save a text draft under a plain key (idempotent by key)",
             observes=DRAFT_OBSERVED, faults=WRITE_FAULTS, lost_reply=DRAFT_REPLY_LOST, status=DRAFT_STATUS),
    ToolSpec("draft_status", DraftStatusArgs, False, "whether a draft exists (used by the runtime)",
             planner_visible=False, faults=STATUS_FAULTS),
)}

# Worlds with messages (the reading comparison): the same tools plus one more read.
INBOX_TOOLS: dict[str, ToolSpec] = {**TOOLS, "read_message": ToolSpec(
    "read_message", ReadMessageArgs, False, "read one customer message or note by id (read-only)",
    observes=READ_OBSERVED, faults=READ_FAULTS)}


def tools_struck_by(kind: str, tools: Mapping[str, ToolSpec] = TOOLS) -> tuple[str, ...]:
    """The planner-visible tools whose calls a fault of ``kind`` may strike, in declaration order."""
    return tuple(n for n, t in tools.items() if t.planner_visible and kind in t.fault_kinds)
