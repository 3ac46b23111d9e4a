"""The committed recording in data/experiment: replaying its cassettes reproduces its summary, and a
prompt missing from a cassette is an error that keeps the runs finished before it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from labkit.cli import main
from labkit.experiment import (
    BackendSource,
    RunRecord,
    counts_only,
    load_runs,
    prepare_replay,
    run_experiment,
    summarize,
)
from labkit.llm import CassetteMiss
from labkit.llm.modelfile import embedded_model_sha256

DATA = Path(__file__).resolve().parents[1] / "data" / "experiment"


def test_the_committed_recording_is_a_full_live_run_of_the_embedded_model() -> None:
    summary = json.loads((DATA / "summary.json").read_text())
    prov = summary["provenance"]
    assert prov["mode"] == "live" and not summary["partial"]
    assert prov["backend"]["model_sha256"] == embedded_model_sha256()
    assert prov["backend"]["llama_cpp_python"] and prov["labkit_commit"] != "unknown"
    assert prov["decoding"]["temperature"] > 0  # seeds change the samples
    config, tasks = prepare_replay(DATA)
    assert len(tasks) >= 10 and len(config.seeds) >= 5
    assert all(row["runs"] == len(tasks) * len(config.seeds) for row in summary["rows"])
    assert all(p.stat().st_size < 4 * 1024 * 1024 for p in DATA.rglob("*.jsonl"))


def test_replaying_the_cassettes_reproduces_the_committed_summary(tmp_path: Path) -> None:
    config, tasks = prepare_replay(DATA)
    records = run_experiment(config, tasks, BackendSource(replay_dir=DATA), tmp_path, progress=False)
    committed = json.loads((DATA / "summary.json").read_text())["rows"]
    assert counts_only(summarize(records, config.arms)) == counts_only(committed)
    recorded = {(r.arm, r.task, r.seed): r for r in load_runs(DATA / "runs.jsonl")}
    assert {(r.arm, r.task, r.seed): (r.passed, r.termination, r.outputs) for r in records} == \
        {k: (r.passed, r.termination, r.outputs) for k, r in recorded.items()}


def _copy(tmp_path: Path) -> Path:
    folder = tmp_path / "recorded"
    shutil.copytree(DATA, folder)
    return folder


def test_a_prompt_missing_from_a_cassette_is_an_error_and_finished_runs_are_kept(tmp_path: Path) -> None:
    folder = _copy(tmp_path)
    config, tasks = prepare_replay(folder)
    second = tasks[1].id
    cassette = folder / "cassettes" / "machine-model" / f"{second}.jsonl"
    lines = cassette.read_text().splitlines()
    cassette.write_text("\n".join(line for line in lines if '"type": "call"' not in line) + "\n")
    out = tmp_path / "out"
    with pytest.raises(CassetteMiss):
        run_experiment(config, tasks, BackendSource(replay_dir=folder), out, progress=False)
    kept = load_runs(out / "runs.jsonl")
    assert len(kept) >= len(config.seeds) * len(config.arms)  # the whole first task
    assert {r.task for r in kept} >= {tasks[0].id}


def test_cli_replay_and_a_folder_that_is_not_a_recording(tmp_path: Path, capsys) -> None:
    assert main(["experiment-v1", "--replay", str(tmp_path), "--out", str(tmp_path / "o"), "--no-progress"]) == 2
    assert "is not a recorded experiment" in capsys.readouterr().err
    out = tmp_path / "replayed"
    assert main(["experiment-v1", "--replay", str(DATA), "--out", str(out), "--no-progress", "--no-plots"]) == 0
    printed = capsys.readouterr().out
    assert "replay" in printed and "3 machine + model" in printed
    assert counts_only(json.loads((out / "summary.json").read_text())["rows"]) == \
        counts_only(json.loads((DATA / "summary.json").read_text())["rows"])


def test_the_committed_recording_was_regraded_by_replay_with_its_live_seconds_kept() -> None:
    prov = json.loads((DATA / "provenance.json").read_text())
    assert prov["mode"] == "live" and prov["regraded"], "the committed run says how it was re-graded"
    assert all(n["labkit_commit"] and "replay" in n["by"] for n in prov["regraded"])
    summary = json.loads((DATA / "summary.json").read_text())
    assert summary["provenance"] == prov and summary["wall_s"] > 60  # the live run's minutes, not a replay's second
    model_runs = [r for r in load_runs(DATA / "runs.jsonl") if r.arm == "machine-model"]
    assert all(r.wall_s >= r.model_s > 0 for r in model_runs)  # live seconds: every run called the model


def test_regrade_reproduces_the_committed_runs_byte_for_byte(tmp_path: Path, capsys) -> None:
    out = tmp_path / "regraded"
    assert main(["experiment-v1", "--replay", str(DATA), "--regrade", "--out", str(out), "--no-progress",
                 "--no-plots"]) == 0
    assert "re-graded by replay" in capsys.readouterr().out
    assert (out / "runs.jsonl").read_bytes() == (DATA / "runs.jsonl").read_bytes()
    assert (out / "runs.csv").read_bytes() == (DATA / "runs.csv").read_bytes()
    mine, committed = (json.loads((d / "summary.json").read_text()) for d in (out, DATA))
    assert mine["rows"] == committed["rows"] and mine["wall_s"] == committed["wall_s"]
    assert len(mine["provenance"]["regraded"]) == len(committed["provenance"]["regraded"]) + 1
    assert main(["experiment-v1", "--regrade", "--out", str(tmp_path / "x"), "--no-progress"]) == 2
    assert "--regrade needs --replay" in capsys.readouterr().err


def test_regrade_keeps_the_recorded_seconds_and_refuses_runs_it_never_recorded() -> None:
    from labkit.errors import LabkitError
    from labkit.experiment.runner import with_recorded_timings

    recorded = load_runs(DATA / "runs.jsonl")[:3]
    replayed = [RunRecord.from_dict({**r.to_dict(), "wall_s": 0.001, "model_s": 0.0}) for r in recorded]
    merged = with_recorded_timings(replayed, recorded)
    assert [(r.wall_s, r.model_s) for r in merged] == [(r.wall_s, r.model_s) for r in recorded]
    assert replayed[0].wall_s == 0.001  # the replay's records are not changed in place
    with pytest.raises(LabkitError, match="not in the recording"):
        with_recorded_timings(replayed, recorded[:1])
