"""Recordings survive a crash: each comparison's recorder killed with SIGKILL, resumed, and its rows checked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from labkit.compare.crash import RECORDERS, _rows, _value, bench_crash_recorders, failures

RECORDED = Path(__file__).resolve().parents[1] / "data" / "bench" / "crash-recorders.json"


@pytest.mark.slow
def test_a_few_kills_of_each_recorder_lose_and_double_nothing() -> None:
    result = bench_crash_recorders(kills=2, kills_per_trial=2, seed=7)
    assert set(result["recorders"]) == {r.name for r in RECORDERS} == {"reading", "code", "dialog"}
    assert not failures(result), failures(result)
    assert all(figures["rows"] > 0 for figures in result["recorders"].values())


def test_the_recorded_figures_show_fifty_kills_per_comparison_and_no_row_lost_or_doubled() -> None:
    result = json.loads(RECORDED.read_text(encoding="utf-8"))
    assert set(result["recorders"]) == {"reading", "code", "dialog"}
    for figures in result["recorders"].values():
        assert figures["kills"] >= 50 and figures["rows"] > 0
        assert figures["rows_lost"] == figures["rows_doubled"] == figures["torn_lines"] == 0
        assert figures["rows_different"] == figures["leftovers"] == 0
    assert not failures(result)


def test_torn_and_doubled_lines_are_counted(tmp_path: Path) -> None:
    row = {"arm": "a", "task": "t", "seed": 0}
    (tmp_path / "runs.jsonl").write_text(json.dumps(row) + "\n" + json.dumps(row) + "\n{\"arm\": \"a\", \"ta",
                                         encoding="utf-8")
    rows, torn = _rows(tmp_path)
    assert len(rows) == 2 and torn == 1
    bad = {"recorders": {"x": {"rows": 1, "kills": 3, "rows_lost": 0, "rows_doubled": 1, "torn_lines": 1,
                               "rows_different": 0, "leftovers": 0}}}
    assert failures(bad) == ["x: rows_doubled 1", "x: torn_lines 1"]


def test_the_scripted_server_answers_the_first_value_a_schema_allows() -> None:
    schema = {"type": "object", "properties": {"move": {"enum": ["ask", "done"]}, "n": {"type": "integer"},
                                               "value": {"anyOf": [{"type": "string"}, {"type": "null"}]}}}
    assert _value(schema) == {"move": "ask", "n": 0, "value": "x"}
