"""Event stores: tamper evidence, torn appends, bad input — and nothing recorded is ever lost."""

from __future__ import annotations

import json
import sqlite3

import pytest

from labkit import EventLogError, JsonlLog, LabMachine, SqliteLog, load_events, read_jsonl, read_sqlite, replay
from labkit.core.events import SCHEMA_VERSION
from labkit.core.examples import ticket_guards, ticket_table


def record_run(log) -> LabMachine:
    m = LabMachine(ticket_table(), guards=ticket_guards(), log=log, clock=lambda: 0.0)
    for trigger in ("triage", "start", "ask_customer", "customer_replied"):
        m.fire(trigger)
    return m


@pytest.fixture
def trace(tmp_path):
    path = tmp_path / "run.jsonl"
    record_run(JsonlLog(path, run_id="r1"))
    return path


def lines_of(path) -> list[str]:
    return path.read_text().splitlines()


def rewrite(path, lines) -> bytes:
    path.write_text("".join(line + "\n" for line in lines))
    return path.read_bytes()


def expect_error(path, match: str, seq: int | None = None):
    before = path.read_bytes()
    with pytest.raises(EventLogError, match=match) as info:
        read_jsonl(path)
    assert path.read_bytes() == before, "reading must never modify the file"
    if seq is not None:
        assert info.value.seq == seq
    return info.value


def test_a_clean_trace_loads_and_replays(trace):
    events = read_jsonl(trace).events
    assert [e.seq for e in events] == [0, 1, 2, 3, 4]
    assert replay(events).state.status == "IN_PROGRESS"


def test_an_edited_event_is_named(trace):
    lines = lines_of(trace)
    lines[2] = lines[2].replace('"dest":"IN_PROGRESS"', '"dest":"CLOSED"')
    rewrite(trace, lines)
    expect_error(trace, "line 3: event seq 2 does not match its own hash", seq=2)


def test_a_deleted_event_is_named(trace):
    lines = lines_of(trace)
    del lines[2]
    rewrite(trace, lines)
    expect_error(trace, "line 3: expected event seq 2, found seq 3", seq=3)


def test_an_inserted_event_is_named(trace):
    lines = lines_of(trace)
    lines.insert(2, lines[1])
    rewrite(trace, lines)
    expect_error(trace, "line 3: expected event seq 2, found seq 1", seq=1)


def test_reordered_events_are_named(trace):
    lines = lines_of(trace)
    lines[2], lines[3] = lines[3], lines[2]
    rewrite(trace, lines)
    expect_error(trace, "line 3: expected event seq 2, found seq 3")


def test_a_replaced_event_with_a_valid_hash_breaks_the_link(trace, tmp_path):
    other = tmp_path / "other.jsonl"
    m = LabMachine(ticket_table(), guards=ticket_guards(), log=JsonlLog(other, run_id="r1"), clock=lambda: 5.0)
    m.fire("cancel")
    lines = lines_of(trace)
    lines[1] = lines_of(other)[1]  # a genuine sealed event, but from another chain
    rewrite(trace, lines)
    expect_error(trace, "event seq 1 does not link to the event before it", seq=1)


def test_a_line_that_is_not_json_is_named(trace):
    lines = lines_of(trace)
    lines[3] = lines[3][:40]
    rewrite(trace, lines)
    expect_error(trace, "line 4: not valid JSON")


def test_a_blank_line_is_named(trace):
    lines = lines_of(trace)
    lines.insert(1, "")
    rewrite(trace, lines)
    expect_error(trace, "line 2 is empty")


def test_an_unknown_event_type_is_named_with_the_known_ones(trace):
    lines = lines_of(trace)
    lines[1] = lines[1].replace('"type":"transitioned"', '"type":"teleported"')
    rewrite(trace, lines)
    err = expect_error(trace, "line 2: unknown event type 'teleported'")
    assert "transitioned" in str(err) and "EVENT_MODULES in labkit/core/registry.py" in str(err)


def test_a_wrong_schema_version_is_named(trace):
    lines = lines_of(trace)
    lines[1] = lines[1].replace(f'"schema_version":{SCHEMA_VERSION}', '"schema_version":99')
    rewrite(trace, lines)
    expect_error(trace, "line 2: event seq 1 has schema_version 99, this labkit reads version 1")


def test_a_field_of_the_wrong_type_is_named(trace):
    lines = lines_of(trace)
    lines[1] = lines[1].replace('"trigger":"triage"', '"trigger":7')
    rewrite(trace, lines)
    expect_error(trace, "event seq 1 of type 'transitioned' is invalid: trigger")


def test_a_plain_json_object_is_not_an_event(tmp_path):
    path = tmp_path / "hand.jsonl"
    path.write_text(json.dumps({"type": "transitioned"}) + "\n")
    expect_error(path, "not a sealed labkit event")


def test_missing_files_and_folders_are_explained(tmp_path):
    with pytest.raises(EventLogError, match="no event log at"):
        read_jsonl(tmp_path / "nope.jsonl")
    with pytest.raises(EventLogError, match="is a folder"):
        read_jsonl(tmp_path)
    with pytest.raises(EventLogError, match="no SQLite log at"):
        load_events(tmp_path / "nope.sqlite")


def test_a_torn_final_append_keeps_every_complete_event(trace):
    complete = read_jsonl(trace).events
    with open(trace, "ab") as handle:
        handle.write(b'{"hash":"abc","type":"transi')  # the process died mid-write
    loaded = read_jsonl(trace)
    assert loaded.events == complete
    assert loaded.torn_tail is not None and loaded.torn_tail.line == 6


def test_continuing_a_torn_log_sets_the_torn_bytes_aside_and_appends_cleanly(trace):
    with open(trace, "ab") as handle:
        handle.write(b'{"hash":"abc","type":"transi')
    m = LabMachine(ticket_table(), guards=ticket_guards(), log=JsonlLog(trace), clock=lambda: 9.0)
    m.fire("resolve", fix_note="ok")
    assert (trace.parent / "run.jsonl.torn").read_bytes() == b'{"hash":"abc","type":"transi\n'
    loaded = read_jsonl(trace)
    assert loaded.torn_tail is None and loaded.events[-1].dest == "RESOLVED"


def test_sqlite_runs_are_separate_and_verified(tmp_path):
    db = tmp_path / "runs.sqlite"
    record_run(SqliteLog(db, run_id="a"))
    m = LabMachine(ticket_table(), guards=ticket_guards(), log=SqliteLog(db, run_id="b"), clock=lambda: 0.0)
    m.fire("cancel")
    assert [e.type for e in read_sqlite(db, "b")] == ["run_started", "transitioned"]
    with pytest.raises(EventLogError, match="holds 2 runs"):
        load_events(db)
    assert replay(load_events(db, "a")).state.status == "IN_PROGRESS"


def test_sqlite_tampering_is_named(tmp_path):
    db = tmp_path / "runs.sqlite"
    record_run(SqliteLog(db, run_id="a"))
    with sqlite3.connect(db) as conn:
        line = conn.execute("SELECT line FROM events WHERE seq = 2").fetchone()[0]
        conn.execute("UPDATE events SET line = ? WHERE seq = 2", (line.replace("IN_PROGRESS", "CLOSED"),))
    with pytest.raises(EventLogError, match="event seq 2 does not match its own hash"):
        read_sqlite(db, "a")
    with sqlite3.connect(db) as conn:
        conn.execute("DELETE FROM events WHERE seq = 2")
    with pytest.raises(EventLogError, match="expected event seq 2, found seq 3"):
        read_sqlite(db, "a")


def test_a_file_that_is_not_sqlite_is_refused_untouched(tmp_path):
    path = tmp_path / "notes.sqlite"
    path.write_text("these are my notes, not a database\n" * 10)
    before = path.read_bytes()
    with pytest.raises(EventLogError, match="is not a labkit SQLite log"):
        SqliteLog(path)
    assert path.read_bytes() == before


def test_an_edited_last_event_without_its_newline_is_not_mistaken_for_a_torn_append(trace):
    data = trace.read_bytes().rstrip(b"\n")
    lines = data.split(b"\n")
    lines[-1] = lines[-1].replace(b'"trigger":"customer_replied"', b'"trigger":"resolve"')
    trace.write_bytes(b"\n".join(lines))
    expect_error(trace, "line 5: event seq 4 does not match its own hash", seq=4)


def test_a_complete_last_event_without_its_newline_still_counts(trace):
    trace.write_bytes(trace.read_bytes().rstrip(b"\n"))
    loaded = read_jsonl(trace)
    assert loaded.torn_tail is None and len(loaded.events) == 5


def test_events_removed_from_the_end_of_a_sqlite_run_are_noticed(tmp_path):
    db = tmp_path / "runs.sqlite"
    record_run(SqliteLog(db, run_id="a"))
    with sqlite3.connect(db) as conn:
        conn.execute("DELETE FROM events WHERE seq = 4")
    with pytest.raises(EventLogError, match="ends at seq 3, but its head records seq 4"):
        read_sqlite(db, "a")


def test_reading_a_file_that_is_not_sqlite_is_explained(tmp_path):
    path = tmp_path / "notes.db"
    path.write_text("not a database\n" * 20)
    with pytest.raises(EventLogError, match="is not a labkit SQLite log"):
        load_events(path)
    with pytest.raises(EventLogError, match="is not a labkit SQLite log"):
        read_sqlite(path, "a")


def test_another_applications_database_is_refused_and_left_unchanged(tmp_path):
    path = tmp_path / "app.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE customers (id INTEGER, name TEXT)")
        conn.execute("INSERT INTO customers VALUES (1, 'Ada')")
    conn.close()
    before = path.read_bytes()
    with pytest.raises(EventLogError, match="it holds other tables: customers"):
        SqliteLog(path)
    with pytest.raises(EventLogError, match="no such table: events"):
        load_events(path)
    assert path.read_bytes() == before


def test_a_refused_jsonl_open_does_not_touch_the_file(trace):
    with open(trace, "ab") as handle:
        handle.write(b'{"hash":"abc","type":"transi')
    before = trace.read_bytes()
    with pytest.raises(EventLogError, match="holds run 'r1', not 'other'"):
        JsonlLog(trace, run_id="other")
    assert trace.read_bytes() == before and not (trace.parent / "run.jsonl.torn").exists()


def test_sealing_again_writes_every_shipped_line_byte_for_byte():
    """The sealed line is the event's one serialisation with the hash put first: the same bytes as written."""
    from pathlib import Path

    from labkit.core.events import seal

    root = Path(__file__).resolve().parents[1] / "data" / "traces"
    files = sorted(root.glob("*.jsonl"))
    assert files
    for path in files:
        lines = path.read_text(encoding="utf-8").splitlines()
        for event, line in zip(read_jsonl(path).events, lines, strict=True):
            unsealed = event.model_copy(update={"hash": ""})
            sealed, written = seal(unsealed, seq=event.seq, prev_hash=event.prev_hash, run_id=event.run_id,
                                   at=event.at)
            assert written == line and sealed.hash == event.hash and sealed.model_dump_json() == line


def test_a_log_holding_the_start_of_a_run_resumes_it_as_the_uncut_run_went_on(trace):
    from labkit import EventLog

    whole = read_jsonl(trace).events
    kept = whole[:4]  # killed after ask_customer (event 0 is the run's start)
    log = EventLog.holding(kept)
    assert list(log.events) == list(kept) and log.run_id == "r1" and log.head == kept[-1].hash
    resumed = LabMachine(ticket_table(), guards=ticket_guards(), log=log, clock=lambda: 0.0)
    resumed.fire("customer_replied")
    assert [e.hash for e in log.events] == [e.hash for e in whole]  # the same chain, link for link
    with pytest.raises(EventLogError, match="expected event seq 1, found seq 2"):
        EventLog.holding([whole[0], whole[2]])  # a gap is no run's start
