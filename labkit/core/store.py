"""Append-only event stores: in memory, JSONL files and SQLite, one hash chain verified on load.

A torn last JSONL line is skipped on load and moved to ``<file>.torn`` before appending; SQLite keeps
each run's head in ``heads`` (a chain cannot see events cut from its end)."""

from __future__ import annotations

import gc
import json
import os
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from labkit.core.errors import EventLogError
from labkit.core.events import GENESIS_HASH, Event, parse_line, seal_body, sealed_line, verify_chain


class EventLog:
    """In-memory append-only log; the base of the file-backed stores."""

    # Whether this store writes events anywhere (it overrides ``_persist``): the in-memory log is
    # spared a call per append. Derived, not declared, so a new store cannot forget to say so.
    _writes: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._writes = cls._persist is not EventLog._persist

    def __init__(self, run_id: str = "run-0") -> None:
        self.run_id = run_id
        self._events: list[Event] = []

    @classmethod
    def holding(cls, events: Sequence[Event], run_id: str | None = None) -> EventLog:
        """An in-memory log holding ``events`` (a killed run's), checked to chain from the start, to resume."""
        kept = list(events)
        verify_chain(kept, lambda i: f"event {i} of the events given")
        log = EventLog(run_id or (kept[0].run_id if kept else "run-0"))  # in memory, whatever cls is
        log._events = kept
        return log

    @property
    def events(self) -> Sequence[Event]:
        """The sealed events so far, read-only: the log only grows through :meth:`append`."""
        return self._events

    def __len__(self) -> int:
        return len(self._events)

    @property
    def head(self) -> str:
        """The hash the next event must link to."""
        return self._events[-1].hash if self._events else GENESIS_HASH

    def append(self, event: Event, *, at: float = 0.0, owned: bool = False) -> Event:
        """Seal ``event`` as the next link, persist it and return it (``owned``: see ``events.seal``)."""
        events = self._events
        sealed, body = seal_body(event, seq=len(events), prev_hash=events[-1].hash if events else GENESIS_HASH,
                                 run_id=self.run_id, at=at, owned=owned)
        if self._writes:
            self._persist(sealed, body)
        events.append(sealed)
        return sealed

    def _persist(self, event: Event, body: bytes) -> None:
        """Write one sealed event (its line is ``sealed_line(event, body)``); in memory there is nothing to write."""


@dataclass(frozen=True)
class TornTail:
    """The bytes of an append that a crash interrupted (not an event: it was never complete)."""

    line: int
    size: int


@dataclass(frozen=True)
class LoadedLog:
    events: list[Event]
    torn_tail: TornTail | None = None


def read_jsonl(path: str | Path) -> LoadedLog:
    """Read and verify a JSONL event log. Raises :class:`EventLogError` naming the bad line or seq."""
    path = Path(path)
    if not path.exists():
        raise EventLogError(f"no event log at {path}", "check the path; `labkit run` writes logs, "
                            "and data/traces/ holds the shipped ones.")
    if path.is_dir():
        raise EventLogError(f"{path} is a folder, not an event log file", "name a .jsonl file inside it.")
    raw = path.read_bytes()
    chunks = raw.split(b"\n")
    torn = None
    complete = chunks[:-1]
    if chunks[-1]:  # bytes after the last newline
        if _is_json(chunks[-1]):
            complete = chunks  # a whole event that only lacks its newline: verified like any other
        else:  # a proper prefix of a JSON line is never JSON: an append the writer never finished
            torn = TornTail(line=len(chunks), size=len(chunks[-1]))
    events: list[Event] = []
    expected_prev = GENESIS_HASH
    # Loading builds many small acyclic objects that are all kept; the cyclic garbage collector
    # would walk them again and again as they pile up (about half the load time for 100k events).
    collecting = gc.isenabled()
    gc.disable()
    try:
        for number, chunk in enumerate(complete, start=1):
            if not chunk:
                raise EventLogError(f"{path.name} line {number} is empty", "event logs have one event per line "
                                    "and no blank lines; restore the file from a copy.", line=number)
            event = parse_line(chunk, where=f"{path.name} line {number}")
            if event.seq != number - 1 or event.prev_hash != expected_prev:
                verify_chain([*events, event], lambda i: f"{path.name} line {i + 1}")  # names the break
            expected_prev = event.hash
            events.append(event)
    finally:
        if collecting:
            gc.enable()
    return LoadedLog(events, torn)


def _is_json(data: bytes) -> bool:
    try:
        json.loads(data)
    except (ValueError, UnicodeDecodeError):
        return False
    return True


class JsonlLog(EventLog):
    """An append-only JSONL file: one sealed event per line. Opening an existing file continues it."""

    def __init__(self, path: str | Path, run_id: str | None = None, *, durable: bool = False) -> None:
        self.path = Path(path)
        self.durable = durable
        existing: list[Event] = []
        torn = None
        if self.path.exists():
            loaded = read_jsonl(self.path)
            existing, torn = loaded.events, loaded.torn_tail
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        super().__init__(run_id or (existing[0].run_id if existing else "run-0"))
        if existing and existing[0].run_id != self.run_id:
            raise EventLogError(f"{self.path} holds run '{existing[0].run_id}', not '{self.run_id}'",
                                "use one JSONL file per run, or open it without a run_id.")
        if torn is not None:  # only once the file is known to be ours: a refused open changes nothing
            self._set_torn_tail_aside(torn)
        self._events = existing

    def _set_torn_tail_aside(self, torn: TornTail) -> None:
        data = self.path.read_bytes()
        keep = len(data) - torn.size
        with open(self.path.with_name(self.path.name + ".torn"), "ab") as aside:
            aside.write(data[keep:] + b"\n")
        with open(self.path, "r+b") as handle:
            handle.truncate(keep)

    def _persist(self, event: Event, body: bytes) -> None:
        with open(self.path, "a", encoding="utf-8") as handle:
            handle.write(sealed_line(event, body) + "\n")
            handle.flush()
            if self.durable:
                os.fsync(handle.fileno())


def write_jsonl(path: str | Path, events: list[Event]) -> None:
    """Write already-sealed events to a new JSONL file (for exporting a run as a trace)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = []
    for event in events:
        if not event.hash:
            raise EventLogError(f"event seq {event.seq} is not sealed", "append events through a log first.")
        lines.append(event.model_dump_json())
    verify_chain(events, lambda i: f"event {i}")
    write_atomic(path, "".join(line + "\n" for line in lines))


def write_atomic(path: str | Path, text: str) -> None:
    """Replace ``path`` with ``text`` whole (written beside it, then renamed over it): a process killed while
    writing leaves the old file, never one cut short."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


_SCHEMA = """
CREATE TABLE IF NOT EXISTS events (
    run_id TEXT NOT NULL,
    seq    INTEGER NOT NULL,
    type   TEXT NOT NULL,
    line   TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
);
CREATE TABLE IF NOT EXISTS heads (
    run_id TEXT PRIMARY KEY,
    seq    INTEGER NOT NULL,
    hash   TEXT NOT NULL
);
"""
# ``heads`` records each run's last seq and hash in the same transaction as the event, so events
# deleted from the end of a run are noticed (a hash chain alone cannot see a shortened tail).


def _not_ours(path: Path, detail: str) -> EventLogError:
    return EventLogError(f"{path} is not a labkit SQLite log ({detail})",
                         "give a new file name or a .sqlite file written by labkit.")


def _check_foreign(path: Path) -> None:
    """Refuse a file that is not a labkit log *before* anything is written to it."""
    if not path.exists() or path.stat().st_size == 0:
        return
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
            tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.DatabaseError as exc:
        raise _not_ours(path, str(exc)) from None
    if tables and "events" not in tables:
        raise _not_ours(path, f"it holds other tables: {', '.join(sorted(tables))}")


class SqliteLog(EventLog):
    """Runs in one SQLite file; each append is its own transaction. Opening a run continues it."""

    def __init__(self, path: str | Path, run_id: str = "run-0") -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        _check_foreign(self.path)
        try:
            self._conn = sqlite3.connect(self.path, isolation_level=None)
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.executescript(_SCHEMA)
        except sqlite3.DatabaseError as exc:
            raise _not_ours(self.path, str(exc)) from None
        super().__init__(run_id)
        self._events = read_sqlite(self.path, run_id, conn=self._conn)

    def _persist(self, event: Event, body: bytes) -> None:
        line = sealed_line(event, body)
        # The connection is in autocommit mode, so the transaction is explicit: the event and its
        # run's new head are written together or not at all, even if the process is killed between.
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            self._conn.execute("INSERT INTO events (run_id, seq, type, line) VALUES (?, ?, ?, ?)",
                               (self.run_id, event.seq, event.type, line))
            self._conn.execute("INSERT INTO heads (run_id, seq, hash) VALUES (?, ?, ?) ON CONFLICT(run_id) "
                               "DO UPDATE SET seq = excluded.seq, hash = excluded.hash",
                               (self.run_id, event.seq, event.hash))
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise
        self._conn.execute("COMMIT")

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> SqliteLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _read_only(path: Path) -> sqlite3.Connection:
    if not path.exists():
        raise EventLogError(f"no SQLite log at {path}", "check the path; `labkit run` creates it.")
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True)


def read_sqlite(path: str | Path, run_id: str, conn: sqlite3.Connection | None = None) -> list[Event]:
    """Read and verify one run from a SQLite log, in the order the events were appended."""
    path = Path(path)
    own = conn is None
    conn = _read_only(path) if conn is None else conn
    try:
        rows = conn.execute("SELECT line FROM events WHERE run_id = ? ORDER BY rowid", (run_id,)).fetchall()
        head = conn.execute("SELECT seq, hash FROM heads WHERE run_id = ?", (run_id,)).fetchone()
    except sqlite3.DatabaseError as exc:
        raise _not_ours(path, str(exc)) from None
    finally:
        if own:
            conn.close()
    where = f"{path.name} run '{run_id}'"
    events = [parse_line(row[0], where=f"{where} row {i + 1}") for i, row in enumerate(rows)]
    verify_chain(events, lambda i: f"{where} row {i + 1}")
    last = (events[-1].seq, events[-1].hash) if events else None
    if head is not None and tuple(head) != last:
        raise EventLogError(
            f"{where} ends at seq {last[0] if last else 'none'}, but its head records seq {head[0]} "
            "(events were removed from the end, or the head was edited)",
            "restore the file from a copy; an event log must never be edited by hand.", seq=head[0])
    return events


def sqlite_runs(path: str | Path) -> list[str]:
    """The run ids stored in a SQLite log, in the order they were first written."""
    path = Path(path)
    conn = _read_only(path)
    try:
        rows = conn.execute("SELECT run_id FROM events GROUP BY run_id ORDER BY MIN(rowid)").fetchall()
    except sqlite3.DatabaseError as exc:
        raise _not_ours(path, str(exc)) from None
    finally:
        conn.close()
    return [r[0] for r in rows]


def load_events(path: str | Path, run_id: str | None = None) -> list[Event]:
    """Load a verified log from a ``.jsonl`` or SQLite file (chosen by suffix)."""
    path = Path(path)
    if path.suffix in (".sqlite", ".db", ".sqlite3"):
        runs = sqlite_runs(path)
        if run_id is None:
            if len(runs) != 1:
                raise EventLogError(f"{path} holds {len(runs)} runs ({', '.join(runs) or 'none'})",
                                    "name one with --run.")
            run_id = runs[0]
        return read_sqlite(path, run_id)
    return read_jsonl(path).events
