"""The v2 runner and report: logs beside the results, record then replay to the same counts, failing backends."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import stub_reading_answer

from labkit.core.errors import LabkitError
from labkit.core.store import load_events
from labkit.llm.backend import Request
from labkit.llm.errors import ServerError
from labkit.llm.fake import ScriptedBackend
from labkit.reading.arms import ReadingRun
from labkit.reading.report import counts_only, headline, paired_rows, summary_rows, write_report
from labkit.reading.runner import Backends, ReadingConfig, load_reading_runs, log_path, run_reading

SMOKE = ["dev-triage-01", "dev-extraction-02", "test-selection-01", "test-compare-03"]


def _answer(request: Request) -> str:
    return stub_reading_answer(request.schema)


def _config(**kw: Any) -> ReadingConfig:
    return ReadingConfig(task_ids=SMOKE, **kw)


def test_record_then_replay_gives_the_same_counts(tmp_path: Path) -> None:
    config = _config()
    live = tmp_path / "live"
    runs = run_reading(config, Backends(live=ScriptedBackend(_answer)), live)
    assert len(runs) == len(SMOKE) * 7
    sets = config.task_sets()
    recorded = write_report(live, runs, config.arms, config.splits, sets["test"], {"mode": "live"})
    # every run's log is beside the results, hash-chained and readable without importing the package first
    for split, record in runs:
        events = load_events(log_path(live, record.arm, split, record.task, record.seed))
        assert events, record
    assert load_reading_runs(live / "runs.jsonl") == runs
    replayed_dir = tmp_path / "replay"
    again = run_reading(config, Backends(replay=live), replayed_dir)
    replayed = write_report(replayed_dir, again, config.arms, config.splits, sets["test"], {"mode": "replay"})
    assert counts_only(replayed) == counts_only(recorded)
    assert (live / "ladder.png").stat().st_size > 1000 and (live / "summary.md").exists()
    oracle = [r for r in recorded["rows"] if r["arm"] == "machine-oracle"]
    assert all(r["tasks_solved"] == r["tasks"] for r in oracle)
    model = next(r for r in recorded["rows"] if r["arm"] == "machine-model" and r["split"] == "dev")
    assert model["reasks"] >= 1 and model["llm_calls"] > model["decisions"]  # the invented form was re-asked


def test_a_failing_backend_fails_its_runs_and_the_experiment_goes_on(tmp_path: Path) -> None:
    class Down(ScriptedBackend):
        def _complete(self, request: Request) -> Any:
            raise ServerError("the server at http://127.0.0.1:9 is not answering", "start it again.")

    config = _config(arms=["prompt-only", "machine-oracle"])
    runs = run_reading(config, Backends(live=Down(["x"])), tmp_path)
    model = [r for _, r in runs if r.arm == "prompt-only"]
    assert len(model) == len(SMOKE) and all(not r.passed and r.termination.startswith("backend error") for r in model)
    assert all(r.passed for _, r in runs if r.arm == "machine-oracle")
    rows = summary_rows(runs, config.arms, config.splits)
    assert sum(r["backend_errors"] for r in rows) == len(SMOKE)


def test_replay_of_something_not_recorded_is_an_error(tmp_path: Path) -> None:
    live = tmp_path / "live"
    run_reading(_config(arms=["machine-model"]), Backends(live=ScriptedBackend(_answer)), live)
    with pytest.raises(LabkitError, match="no cassette"):
        run_reading(_config(arms=["prompt-only"]), Backends(replay=live), tmp_path / "r")


def rec(arm: str, task: Any, passed: bool) -> tuple[str, ReadingRun]:
    """A test-split row of ``arm`` on ``task`` that only says whether it passed."""
    return "test", ReadingRun(arm=arm, task=task.id, family=task.family, seed=0, passed=passed,
                               failed_checks=[], termination="", llm_calls=0, decisions=0, reasks=0,
                               schema_invalid=0, violations=0, guard_rejections=0, tool_calls=0,
                               prompt_tokens=0, completion_tokens=0, wall_s=0.0)


def test_paired_rows_and_headline_from_runs(tmp_path: Path) -> None:
    config = ReadingConfig(splits=["test"])
    test_set = config.task_sets()["test"]

    runs = []
    for i, task in enumerate(test_set.tasks):
        runs.append(rec("prompt-only", task, i % 10 == 0))
        runs.append(rec("machine-model", task, True))
        runs.append(rec("machine-rule", task, i % 2 == 0))
    paired = {(p["a"], p["b"]): p for p in paired_rows(runs, ["test"])}
    first = paired[("machine-model", "prompt-only")]
    assert (first["a_better"], first["b_better"], first["ties"]) == (36, 0, 4)
    share = paired[("machine-model", "machine-rule")]
    assert share["tasks"] == 30 and share["families"] == ["triage", "extraction", "selection"]
    assert headline(runs, test_set) is not None and headline(runs, test_set).endswith("→ machine 10/10")  # type: ignore[union-attr]


def test_the_committed_no_model_baseline_reproduces(tmp_path: Path) -> None:
    """data/experiment-v2/no-model (rule, random, oracle on dev and test) is what this code computes, in the
    order it runs the jobs, recorded at a named commit."""
    import re

    folder = Path(__file__).resolve().parents[1] / "data" / "experiment-v2" / "no-model"
    config = ReadingConfig.from_dict(json.loads((folder / "experiment.json").read_text(encoding="utf-8")))
    runs = run_reading(config, Backends(live=ScriptedBackend([])), tmp_path)
    recorded = load_reading_runs(folder / "runs.jsonl")

    def strip(items: list[Any]) -> list[Any]:
        return [(split, {k: v for k, v in r.to_dict().items() if k != "wall_s"}) for split, r in items]

    assert strip(runs) == strip(recorded)  # line for line: a recording in an older job order is stale
    provenance = json.loads((folder / "provenance.json").read_text(encoding="utf-8"))
    assert re.fullmatch(r"[0-9a-f]{40}", provenance["labkit_commit"]), provenance["labkit_commit"]
    summary = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
    rule_dev = next(r for r in summary["rows"] if r["arm"] == "machine-rule" and r["split"] == "dev")
    assert rule_dev["tasks_solved"] == rule_dev["tasks"]  # the dev rule's dev score, as recorded


def test_the_cli_runs_and_replays_the_no_model_arms(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from labkit.cli import main

    out = tmp_path / "run"
    args = ["compare", "reading", "--arms", "machine-rule,machine-oracle", "--split", "all", "--only", ",".join(SMOKE),
            "--quiet"]
    assert main([*args, "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "| dev | 5 machine + dev rule | 2/2 |" in printed and f"the recording is in {out}" in printed
    provenance = json.loads((out / "provenance.json").read_text(encoding="utf-8"))
    assert len(provenance["task_files"]["test"]["sha256"]) == 64 and provenance["config"]["seeds"] == [0]
    assert provenance["arms"]["machine-rule"]["seed_varies"]
    assert main(["compare", "reading", "--replay", str(out), "--out", str(tmp_path / "again"), "--quiet"]) == 0
    replayed = capsys.readouterr().out
    assert "every row reproduced" in replayed and "| dev | 5 machine + dev rule | 2/2 |" in replayed
    assert main([*args, "--out", str(out)]) != 0  # a held recording is continued only with --resume
    assert "already holds a reading recording" in capsys.readouterr().err
    assert main(["compare", "reading", "--arms", "machine-magic", "--out", str(tmp_path / "bad")]) != 0
    assert "unknown arm(s) ['machine-magic']" in capsys.readouterr().err


@pytest.mark.parametrize("model", ["gemma3-270m", "qwen2.5-coder-1.5b"])
def test_a_committed_live_recording_replays_exactly(model: str, tmp_path: Path) -> None:
    """data/experiment-v2/<model> (live, every arm) replays to its recorded runs: two tasks per family and split."""
    from labkit.reading.runner import prepare_reading_replay

    folder = Path(__file__).resolve().parents[1] / "data" / "experiment-v2" / model
    config = prepare_reading_replay(folder)
    sets = config.task_sets()
    config.task_ids = [t.id for split in config.splits for fam in ("triage", "extraction", "selection", "compare")
                       for t in [t for t in sets[split].tasks if t.family == fam and
                                 (config.task_ids is None or t.id in config.task_ids)][:2]]
    runs = run_reading(config, Backends(replay=folder), tmp_path)
    assert len(runs) == len(config.task_ids) * len(config.arms) * len(config.seeds) and len(config.arms) == 7

    def strip(items: list[Any]) -> list[Any]:
        rows = [(split, {k: v for k, v in r.to_dict().items() if k != "wall_s"}) for split, r in items]
        return sorted(rows, key=lambda row: (row[0], row[1]["arm"], row[1]["task"], row[1]["seed"]))

    wanted = set(config.task_ids)
    assert strip(runs) == strip([(s, r) for s, r in load_reading_runs(folder / "runs.jsonl") if r.task in wanted])
    provenance = json.loads((folder / "provenance.json").read_text(encoding="utf-8"))
    assert provenance["mode"] == "live" and len(provenance["backend"]["model_sha256"]) == 64


def test_the_view_shows_a_recorded_runs_calls_and_verdict(tmp_path: Path) -> None:
    """view.recorded_calls/show_calls/verdict read a recording: prompts from the task on, answers, the grade."""
    from labkit.reading.view import recorded_calls, show_calls, verdict

    config = ReadingConfig(arms=["prompt-only", "machine-rule"], splits=["test"], task_ids=["test-triage-01"])
    answers = ['{"action": "read_message", "args": {"id": "M501"}}', '{"action": "done", "args": {}}']
    run_reading(config, Backends(live=ScriptedBackend(answers)), tmp_path)
    calls = recorded_calls(tmp_path, "prompt-only", "test", "test-triage-01")
    assert [c.answer for c in calls] == answers
    shown = show_calls(calls, first=1, last=0)
    assert shown.startswith("--- call 1: prompt") and "not shown)" in shown and "\nTask: " in shown
    assert ">>> answer: " + answers[0] in shown and "1 more call(s)" in shown and "Example 1" not in shown
    assert recorded_calls(tmp_path, "machine-rule", "test", "test-triage-01") == []
    assert verdict(tmp_path, "prompt-only", "test", "test-triage-01").startswith("prompt-only: failed (said done")
    assert verdict(tmp_path, "machine-rule", "test", "test-triage-02").startswith("machine-rule: no run")


def test_an_interrupted_recording_resumes_where_it_stopped(tmp_path: Path) -> None:
    """Runs already recorded are kept, a torn last line is dropped, the rest run; replay gives the same counts."""
    from labkit.reading.runner import finished_runs

    config = _config(arms=["prompt-only", "machine-model"])
    whole = tmp_path / "whole"
    expected = run_reading(config, Backends(live=ScriptedBackend(_answer)), whole)

    class Interrupted(Exception):
        pass

    class StopsAfter(ScriptedBackend):
        """Answers like the stand-in model, then the machine is switched off mid-run."""

        def __init__(self, calls: int) -> None:
            super().__init__(_answer)
            self.left = calls

        def _complete(self, request: Request) -> Any:
            self.left -= 1
            if self.left < 0:
                raise Interrupted
            return super()._complete(request)

    out = tmp_path / "resumed"
    with pytest.raises(Interrupted):
        run_reading(config, Backends(live=StopsAfter(5)), out)
    kept = load_reading_runs(out / "runs.jsonl")
    assert 0 < len(kept) < len(expected)
    with (out / "runs.jsonl").open("a", encoding="utf-8") as handle:
        handle.write('{"split": "dev", "arm": "prompt-on')  # the line the interruption tore
    model = ScriptedBackend(_answer)
    runs = run_reading(config, Backends(live=model), out, resume=True)
    assert [(s, r.arm, r.task, r.passed, r.llm_calls) for s, r in runs] == \
        [(s, r.arm, r.task, r.passed, r.llm_calls) for s, r in expected]
    assert load_reading_runs(out / "runs.jsonl") == runs  # the torn line is gone, every run once, in job order
    assert len(model.requests) < sum(r.llm_calls for _, r in expected)  # the kept runs did not run again
    again = run_reading(config, Backends(replay=out), tmp_path / "replay")
    assert [(r.arm, r.task, r.passed) for _, r in again] == [(r.arm, r.task, r.passed) for _, r in expected]
    with pytest.raises(LabkitError, match="another configuration"):
        finished_runs(_config(arms=["prompt-only"]), out)
    with pytest.raises(LabkitError, match="nothing to resume"):
        finished_runs(config, tmp_path / "never")


def test_headline_counts_row_of_paired_of_and_split_text_read_the_committed_summary() -> None:
    from labkit.reading.report import headline_counts, paired_of, row_of, split_text

    folder = Path(__file__).resolve().parents[1] / "data" / "experiment-v2" / "qwen2.5-coder-1.5b"
    summary = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
    row = row_of(summary, "test", "machine-model")
    assert (row["split"], row["arm"]) == ("test", "machine-model")
    gain = paired_of(summary, "test", "machine-model", "prompt-only")
    assert split_text(gain) == (f"{gain['a_better']} to {gain['b_better']} ({gain['ties']} tied), "
                                f"p = {gain['p_value']:.2g}")
    with pytest.raises(KeyError, match="prompt-only"):
        paired_of(summary, "test", "prompt-only", "machine-model")
    with pytest.raises(KeyError, match="no row"):
        row_of(summary, "train", "machine-model")

    config = ReadingConfig(splits=["test"])
    test_set = config.task_sets()["test"]
    heads = [test_set.by_id(t) for t in test_set.headline]
    runs = [rec("prompt-only", t, i == 0) for i, t in enumerate(heads)] + [rec("machine-model", t, i > 0)
                                                                            for i, t in enumerate(heads)]
    got = headline_counts(runs, test_set)
    assert got is not None
    assert (got["lower_solved"], got["upper_solved"], got["upper_better"], got["lower_better"]) == (1, 9, 9, 1)
    assert headline(runs, test_set) == "prompt-only 1/10 → machine 9/10"
    assert headline_counts(runs[:5], test_set) is None
