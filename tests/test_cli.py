"""The labkit command line, run as a real subprocess the way a learner types it."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from labkit import JsonlLog, LabMachine
from labkit.core.examples import ticket_guards, ticket_table


def labkit(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "labkit", *args], capture_output=True, text=True, timeout=120)


@pytest.fixture
def trace(tmp_path):
    path = tmp_path / "ticket.jsonl"
    m = LabMachine(ticket_table(), guards=ticket_guards(), log=JsonlLog(path, run_id="t1"), clock=lambda: 0.0)
    for trigger in ("triage", "start"):
        m.fire(trigger)
    m.fire("resolve", fix_note="reset")
    return path


def test_help_lists_the_commands():
    out = labkit("--help")
    assert out.returncode == 0
    for command in ("diagram", "replay", "check", "bench"):
        assert command in out.stdout


def test_diagram_prints_mermaid_with_the_unhandled_pairs():
    out = labkit("diagram", "ticket", "--current", "TRIAGED", "--unhandled")
    assert out.returncode == 0
    assert out.stdout.startswith("stateDiagram-v2\n    [*] --> NEW\n")
    assert "    IN_PROGRESS --> RESOLVED : resolve [has_fix_note]" in out.stdout
    assert "    class TRIAGED current" in out.stdout
    assert "%%   NEW + start" in out.stdout


def test_diagram_reads_a_json_table_and_explains_a_broken_one(tmp_path):
    good = tmp_path / "t.json"
    good.write_text(json.dumps(ticket_table().to_dict()))
    assert labkit("diagram", str(good)).returncode == 0
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"states": ["A", "B"], "initial": "A", "terminal": ["B"], "rows": [["A", "go", "C"]]}))
    out = labkit("diagram", str(bad))
    assert out.returncode == 2
    assert "row (A, go -> C): unknown dest state 'C'" in out.stderr
    assert "Traceback" not in out.stderr


def test_replay_prints_the_rebuilt_state(trace):
    out = labkit("replay", str(trace), "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["state"]["status"] == "RESOLVED" and data["events"] == 4 and data["table"] == "ticket"
    text = labkit("replay", str(trace))
    assert "hash chain verified" in text.stdout and "status: RESOLVED" in text.stdout


def test_replay_names_the_tampered_sequence_number(trace):
    lines = trace.read_text().splitlines()
    lines[2] = lines[2].replace("IN_PROGRESS", "CLOSED")
    trace.write_text("\n".join(lines) + "\n")
    out = labkit("replay", str(trace))
    assert out.returncode == 2
    assert "event seq 2 does not match its own hash" in out.stderr


def test_replay_of_a_missing_or_malformed_file_is_explained(tmp_path):
    out = labkit("replay", str(tmp_path / "missing.jsonl"))
    assert out.returncode == 2 and "no event log at" in out.stderr
    junk = tmp_path / "junk.jsonl"
    junk.write_text("hello\n")
    out = labkit("replay", str(junk))
    assert out.returncode == 2 and "junk.jsonl line 1: not valid JSON" in out.stderr


def test_diagram_with_an_unknown_current_state_lists_the_states():
    out = labkit("diagram", "ticket", "--current", "NOPE")
    assert out.returncode == 2 and "'NOPE': it is not a state of table 'ticket'" in out.stderr
    assert "Traceback" not in out.stderr


def test_replay_prints_the_head_so_a_jsonl_file_can_be_anchored(trace):
    data = json.loads(labkit("replay", str(trace), "--json").stdout)
    last = trace.read_text().splitlines()[-1]
    assert data["head"] == {"seq": 3, "hash": json.loads(last)["hash"]}


def test_replay_reports_a_torn_final_append_and_replays_the_rest(trace):
    with open(trace, "a") as handle:
        handle.write('{"hash":"12')
    out = labkit("replay", str(trace))
    assert out.returncode == 0 and "status: RESOLVED" in out.stdout
    assert "line 5 is an unfinished append (11 bytes, skipped)" in out.stderr


def test_bench_refuses_sizes_too_small_to_measure():
    out = labkit("bench", "core", "--transitions", "0")
    assert out.returncode == 2 and "too few to measure" in out.stderr
