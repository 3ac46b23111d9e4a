"""The recorded code comparisons in data/repoedit/compare replay row for row without a model.

A replay runs every arm again with real pytest in fresh copies, the model's answers served from the
cassettes; every field of every row (fixed, broken tests, test runs, calls, tokens, the final tree's
digest, ...) but the times (wall and model seconds) must come out the same. The recordings must also
name a clean commit, the registered model's sha256 and the task file as it was at that commit, and every
task of the recorded split must be unchanged since then (the task file may grow by tasks of another split).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from labkit.cli import main
from labkit.core.provenance import read_provenance
from labkit.llm.models import get_model
from labkit.repoedit.arms import ARMS
from labkit.repoedit.compare import (
    cassette_path,
    load_rows,
    read_config,
    recording_tasks_differences,
    replay_compare,
)
from labkit.repoedit.compare_report import render_report, summarize
from labkit.repoedit.history import recorded_path


def _shallow() -> bool:
    import subprocess

    out = subprocess.run(["git", "rev-parse", "--is-shallow-repository"], cwd=Path(__file__).resolve().parents[1],
                         capture_output=True, text=True)
    return out.stdout.strip() == "true"


COMPARE = Path(__file__).resolve().parents[1] / "data" / "repoedit" / "compare"
MODELS = ("gemma3-270m", "qwen2.5-coder-1.5b")
FOLDERS = [COMPARE / m for m in MODELS]
# Replaying every row of both models takes over two minutes of pytest runs: every row of the model that
# matters is replayed, and of the embedded model the two arms whose runs are short (its free loop and the
# no-model arms replay the same way; `labkit compare code --replay` checks them all).
REPLAYED_ARMS = {"qwen2.5-coder-1.5b": None, "gemma3-270m": ("prompt_only", "machine_bare")}


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: p.name)
def test_a_recording_is_complete_where_it_says_so_and_names_its_sources(folder):
    config = read_config(folder)
    rows = load_rows(folder / "runs.jsonl")
    assert config.model == folder.name and config.threads == 1 and rows
    assert {r.arm for r in rows} <= set(config.arms) and len({r.key() for r in rows}) == len(rows)
    sessions = read_provenance(folder)
    assert sessions and all(s.mode == "live" for s in sessions)
    assert all("dirty" not in s.commit for s in sessions)
    assert {s.model_sha256 for s in sessions} == {get_model(folder.name).sha256}
    if _shallow():
        pytest.skip("this clone is shallow, so the recording's commit (and its task file) is not in the history; "
                    "git fetch --unshallow makes the check run")
    assert recording_tasks_differences(folder) == []
    for arm in config.arms:
        if ARMS[arm].uses_model and any(r.arm == arm for r in rows):
            assert cassette_path(folder, arm).stat().st_size > 0
    machine_rows = [r for r in rows if ARMS[r.arm].machine]
    assert machine_rows and all(r.broken_left == [] for r in machine_rows)  # by construction: rollback
    assert all(recorded_path(folder, "logs", r.arm, f"{r.task}.jsonl").exists() for r in machine_rows)


@pytest.mark.slow
@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: p.name)
def test_a_recording_replays_row_for_row_without_a_model(folder, tmp_path):
    assert replay_compare(folder, tmp_path / "again", arms=REPLAYED_ARMS[folder.name]) == []


def test_a_machine_log_of_the_comparison_verifies_with_labkit_replay(capsys):
    log = next((COMPARE / "qwen2.5-coder-1.5b" / "logs" / "machine_model").glob("*.jsonl"))
    assert main(["replay", str(log)]) == 0
    assert "hash chain verified" in capsys.readouterr().out


def test_the_report_of_both_recordings_prints(capsys):
    text = render_report(FOLDERS)
    for model in MODELS:
        summary = summarize(COMPARE / model)
        assert f"**{model}**" in text and summary["headline"] and summary["headline"] in text
    assert main(["repoedit", "compare-report", *map(str, FOLDERS)]) == 0
    assert capsys.readouterr().out == text


def test_the_report_pairs_folders_joined_by_a_comma_as_one_comparison(capsys):
    greedy, best = (COMPARE.parent / kind / "qwen2.5-coder-1.5b" for kind in ("compare-plus", "compare-plus-best-of"))
    assert main(["repoedit", "compare-report", f"{greedy},{best}"]) == 0
    text = capsys.readouterr().out
    assert text == render_report([[greedy, best]])
    assert "| machine (every feature), best of 3 vs machine (every feature) |" in text  # paired across the two folders
