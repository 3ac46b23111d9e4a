"""The five lesson traces: reproducible byte for byte, replayable to the live run's final state."""

from __future__ import annotations

from pathlib import Path

import pytest

from labkit.cli import main as labkit_main
from labkit.core import catalog
from labkit.core.events import Transitioned
from labkit.core.reducer import replay
from labkit.core.store import read_jsonl
from labkit.runtime.traces import TRACE_SPECS, TRACES_DIR, record_all


@pytest.fixture(scope="module")
def regenerated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("traces")
    return out, record_all(out)


def test_the_committed_traces_are_what_the_script_records(regenerated: tuple[Path, dict]) -> None:
    out, _ = regenerated
    names = sorted(p.name for p in TRACES_DIR.glob("*.jsonl"))
    assert names == sorted(f"{s.name}.jsonl" for s in TRACE_SPECS)
    for name in names:
        assert (out / name).read_bytes() == (TRACES_DIR / name).read_bytes(), f"{name} differs when regenerated"


@pytest.mark.parametrize("spec", TRACE_SPECS, ids=lambda s: s.name)
def test_each_trace_replays_to_the_live_final_state(regenerated: tuple[Path, dict], spec) -> None:  # type: ignore[no-untyped-def]
    _, runtimes = regenerated
    events = read_jsonl(TRACES_DIR / f"{spec.name}.jsonl").events
    entry = catalog.lookup(events[0].table)  # type: ignore[attr-defined]
    assert entry is not None
    result = replay(events, entry.reduce, entry.empty(), list(entry.invariants()))
    assert result.state == runtimes[spec.name].state
    assert result.violations == ()


EXPECTED = {
    "normal_success": ("SUCCEEDED", {"COMMITTING>committed>SUCCEEDED"}),
    "argument_error": ("SUCCEEDED", {"VALIDATING>rejected>PLANNING"}),
    "permission_denied": ("FAILED", {"EXECUTING>denied>WAITING_HUMAN", "WAITING_HUMAN>refused>FAILED"}),
    "read_timeout": ("SUCCEEDED", {"EXECUTING>timeout>EXECUTING"}),
    "write_timeout_unknown": ("SUCCEEDED", {"EXECUTING>timeout>UNKNOWN", "UNKNOWN>confirmed_present>COMMITTING"}),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_trace_takes_its_lesson_path(name: str) -> None:
    events = read_jsonl(TRACES_DIR / f"{name}.jsonl").events
    moves = {f"{e.source}>{e.trigger}>{e.dest}" for e in events if isinstance(e, Transitioned)}
    final, required = EXPECTED[name]
    assert events[-1].dest == final  # type: ignore[attr-defined]
    assert required <= moves


def test_labkit_replay_reads_a_trace(capsys: pytest.CaptureFixture[str]) -> None:
    assert labkit_main(["replay", str(TRACES_DIR / "write_timeout_unknown.jsonl")]) == 0
    out = capsys.readouterr().out
    assert "status: SUCCEEDED" in out and "hash chain verified" in out and "fails after" not in out


def test_metrics_read_from_a_trace() -> None:
    from labkit.runtime import run_metrics

    m = run_metrics(read_jsonl(TRACES_DIR / "argument_error.jsonl").events)
    assert (m["outcome"], m["planner_calls"], m["schema_invalid"], m["replans"]) == ("succeeded", 5, 1, 1)
    m = run_metrics(read_jsonl(TRACES_DIR / "write_timeout_unknown.jsonl").events)
    assert (m["unknown_outcomes"], m["replans"], m["faults_injected"]) == (1, 0, 1)
    m = run_metrics(read_jsonl(TRACES_DIR / "read_timeout.jsonl").events)
    assert m["retries"] == 1 and m["seconds"] > 0


def test_first_off_cycle_names_where_each_fault_sent_its_run() -> None:
    from labkit import load_events
    from labkit.runtime.traces import first_off_cycle

    got = {spec.name: first_off_cycle(load_events(TRACES_DIR / f"{spec.name}.jsonl")) for spec in TRACE_SPECS}
    assert got == {"normal_success": None, "argument_error": ("VALIDATING", "rejected", "PLANNING"),
                   "permission_denied": ("EXECUTING", "denied", "WAITING_HUMAN"),
                   "read_timeout": ("EXECUTING", "timeout", "EXECUTING"),
                   "write_timeout_unknown": ("EXECUTING", "timeout", "UNKNOWN")}
