"""``labkit replay`` on every log the reading comparison writes: machine runs (a table) and free loops (no table).

Inputs: real logs of a live run (``tests/fixtures/experiment-v2-logs``, see its README), logs the
runner writes with a scripted model (every arm; a loop that stops at its step budget, refused
answers), and tampered copies, which are refused with the event that breaks the chain.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from labkit.cli import main
from labkit.llm.backend import Request
from labkit.llm.fake import ScriptedBackend
from labkit.reading.runner import Backends, ReadingConfig, log_path, run_reading

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "experiment-v2-logs"
REPO = Path(__file__).resolve().parents[1]


def _replay(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["replay", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_a_recorded_free_loop_log_is_verified_and_retold(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _replay(capsys, str(FIXTURES / "prompt-only--test-extraction-01-s0.jsonl"))
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("free loop log, 10 events, hash chain verified; head seq 9 8eb39fb2")
    assert "  ended: the model said done after 5 step(s)" in lines and "  model_calls: 5" in lines
    assert "  tool_calls: 4" in lines and "    form-M511" in lines
    assert lines[-1] == '    step 4: {"action": "done", "args": {}} -> done'
    assert lines[-5] == '    step 0: {"action": "read_message", "args": {"id": "M511"}} -> read_message ok'
    code, out, _ = _replay(capsys, "--json", str(FIXTURES / "prompt-only--test-triage-01-s0.jsonl"))
    data = json.loads(out)
    assert (data["kind"], data["events"], data["summary"]["steps"], data["summary"]["drafts_saved"]) == \
        ("free loop", 6, 3, ["route-M501"])
    assert data["summary"]["prompt_tokens"] == 1925 + 2001 + 2049


def test_a_recorded_machine_log_still_replays_through_its_table(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _replay(capsys, str(FIXTURES / "machine-model--test-triage-01-s0.jsonl"))
    assert code == 0
    assert out.startswith("table planner_executor, 23 events, hash chain verified; head seq 22")
    assert "  status: SUCCEEDED" in out and "  outcome: succeeded" in out


@pytest.mark.parametrize("edit", ["answer", "drop"])
def test_a_tampered_free_loop_log_is_refused_where_it_breaks(edit: str, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    lines = (FIXTURES / "prompt-only--test-extraction-01-s0.jsonl").read_text(encoding="utf-8").splitlines()
    if edit == "answer":  # the model's saved form, changed after the fact
        assert "ORD-8993" in lines[6]
        lines[6] = lines[6].replace("ORD-8993", "ORD-8994")
        wanted = "event seq 6 does not match its own hash: it was edited after it was written"
    else:  # a refused step cut out of the middle
        del lines[2]
        wanted = "line 3: expected event seq 2, found seq 3 (missing or reordered events)"
    copy = tmp_path / "tampered.jsonl"
    copy.write_text("\n".join(lines) + "\n", encoding="utf-8")
    code, out, err = _replay(capsys, str(copy))
    assert code != 0 and out == ""
    assert wanted in err


def _never_done() -> ScriptedBackend:
    """A stand-in model: option 0 of any enum, an invented form, and in a free loop a read of M999 (not in the
    inbox) for ever; every third answer is not JSON, every fifth names an argument the action does not have."""
    calls = [0]

    def answer(request: Request) -> str:
        calls[0] += 1
        props = (request.schema or {}).get("properties", {})
        for name, prop in props.items():
            if "enum" in prop and name != "action":
                return json.dumps({name: prop["enum"][0]})
        if "order" in props:
            return json.dumps({"order": "ORD-1", "date": "2025-01-01", "amount": "1.00", "name": "Nobody Here"})
        if calls[0] % 3 == 0:
            return "I would read it"
        if calls[0] % 5 == 0:
            return json.dumps({"action": "read_message", "args": {"message": "M999"}})  # no such argument
        return json.dumps({"action": "read_message", "args": {"id": "M999"}})

    return ScriptedBackend(answer)


def test_every_log_the_runner_writes_is_verified(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = ReadingConfig(task_ids=["dev-triage-01"], splits=["dev"])
    runs = run_reading(config, Backends(live=_never_done()), tmp_path)
    assert len(runs) == len(config.arms)
    for split, record in runs:
        code, out, _ = _replay(capsys, str(log_path(tmp_path, record.arm, split, record.task, record.seed)))
        assert code == 0, record.arm
        if record.arm.startswith("prompt"):
            assert out.startswith("free loop log,") and "the step budget ran out after 8 step(s)" in out
            assert f"  model_calls: {record.llm_calls}" in out and f"  tool_calls: {record.tool_calls}" in out
            assert "read_message error (" in out  # M999 is not in the inbox: the tool's error is retold
            assert "I would read it -> refused: not JSON" in out
            assert '{"action": "read_message", "args": {"message": "M999"}} -> not run: its arguments were refused' \
                in out
        else:
            assert out.startswith("table planner_executor,") and "hash chain verified" in out


def test_a_log_of_no_known_kind_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    only_tool = tmp_path / "tool-only.jsonl"  # a valid chain of one tool result: no model call, no table
    from labkit.core.events import Event
    from labkit.core.store import JsonlLog, load_events

    event: Event = load_events(FIXTURES / "prompt-only--test-triage-01-s0.jsonl")[1]
    JsonlLog(only_tool, run_id="x").append(event.model_copy(update={"hash": "", "seq": -1, "prev_hash": ""}))
    code, _, err = _replay(capsys, str(only_tool))
    assert code != 0 and "does not begin with a run_started event, and it is no other kind of labkit log" in err
    assert "free loop" in err


def test_one_log_of_each_arm_of_every_committed_recording_is_verified(capsys: pytest.CaptureFixture[str]) -> None:
    recordings = sorted(p for p in (REPO / "data" / "experiment-v2").glob("*/logs") if p.is_dir())
    if not recordings:
        pytest.skip("no recording with per-run logs is committed under data/experiment-v2")
    for logs in recordings:
        for arm in sorted(p for p in logs.iterdir() if p.is_dir()):
            first = min(arm.rglob("*.jsonl"))
            code, out, _ = _replay(capsys, str(first))
            assert code == 0 and "hash chain verified" in out, first
