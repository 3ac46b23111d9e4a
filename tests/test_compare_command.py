"""``labkit compare KIND``: each comparison recorded live on the embedded model and on a real llama.cpp server,
then replayed row for row; the rules every kind shares (resume, replay, refusals) on no-model arms."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import MODEL_THREADS

from labkit.cli import main
from labkit.compare.command import kinds, row_differences

SMALL = {  # one model arm, one or two tasks (the code machine with two calls): a smoke run of each comparison
    "reading": ["--arms", "machine-model", "--only", "test-triage-01,test-extraction-01"],
    "code": ["--arms", "machine", "--only", "pager-partial-page", "--call-budget", "2"],
    "dialog": ["--arms", "machine", "--split", "dev", "--only", "a01"],
}


def test_every_comparison_is_declared_once() -> None:
    assert sorted(kinds()) == ["code", "dialog", "reading"]
    assert len({kind.config_file for kind in kinds().values()}) == 3


def _record_and_replay(kind: str, out: Path, backend: list[str], capsys: pytest.CaptureFixture[str]) -> list[dict]:
    assert main(["compare", kind, *SMALL[kind], *backend, "--out", str(out), "--quiet"]) == 0
    assert f"the recording is in {out}" in capsys.readouterr().out
    rows = [json.loads(line) for line in (out / "runs.jsonl").read_text(encoding="utf-8").splitlines()]
    assert rows and all(row["arm"] == SMALL[kind][1] for row in rows)
    assert main(["compare", kind, "--replay", str(out), "--quiet"]) == 0
    assert "every row reproduced" in capsys.readouterr().out
    return rows


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(SMALL))
def test_each_comparison_records_live_on_the_embedded_model_and_replays(kind: str, tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    rows = _record_and_replay(kind, tmp_path / kind, ["--threads", str(MODEL_THREADS)], capsys)
    assert len(rows) == {"reading": 2, "code": 1, "dialog": 1}[kind]


@pytest.mark.slow
@pytest.mark.parametrize("kind", [  # the code and dialog runs on a server take minutes: make test-bench runs them
    "reading", pytest.param("code", marks=pytest.mark.bench), pytest.param("dialog", marks=pytest.mark.bench)])
def test_each_comparison_records_against_a_real_server_and_replays(kind: str, server_url: str, tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    _record_and_replay(kind, tmp_path / kind, ["--server", server_url], capsys)


def test_a_held_recording_is_continued_only_with_resume(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["compare", "code", "--arms", "oracle", "--only", "pager-partial-page", "--out", str(tmp_path)]
    assert main([*args, "--quiet"]) == 0
    capsys.readouterr()
    assert main([*args, "--quiet"]) == 2
    assert "already holds a code recording" in capsys.readouterr().err
    assert main([*args, "--resume", "--quiet"]) == 0  # nothing left to run: the report again
    assert len((tmp_path / "runs.jsonl").read_text(encoding="utf-8").splitlines()) == 1


def test_a_replay_that_differs_says_where_and_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "rec"
    assert main(["compare", "reading", "--arms", "machine-rule", "--only", "test-triage-01", "--out", str(out),
                 "--quiet"]) == 0
    runs = out / "runs.jsonl"
    row = json.loads(runs.read_text(encoding="utf-8"))
    runs.write_text(json.dumps({**row, "passed": not row["passed"]}) + "\n", encoding="utf-8")
    capsys.readouterr()
    assert main(["compare", "reading", "--replay", str(out), "--quiet"]) == 1
    assert "DIFFERS: machine-rule test test-triage-01 0: passed recorded" in capsys.readouterr().out


def test_row_differences_ignore_the_times_only() -> None:
    key = lambda r: (r["task"],)  # noqa: E731
    recorded = [{"task": "t1", "passed": True, "wall_s": 1.0}, {"task": "t2", "passed": False}]
    replayed = [{"task": "t1", "passed": True, "wall_s": 9.0}]
    assert row_differences(recorded, replayed, key) == ["t2: not replayed"]
    assert row_differences(recorded[:1], [{"task": "t1", "passed": False}], key) == [
        "t1: passed recorded True, replayed False"]


@pytest.mark.parametrize(("argv", "said"), [
    (["reading", "--replay", "data/experiment-v2/no-model", "--resume"], "--resume is for a live recording"),
    (["code", "--replay", "data/repoedit/compare/gemma3-270m", "--reuse", "x"], "--reuse is for a live recording"),
    (["dialog", "--replay", "data/experiment-v2/no-model"], "is not a recorded dialog comparison"),
    (["reading", "--arms", "machine-rule", "--server", "http://127.0.0.1:9"], "no arm asks a model"),
    (["code", "--only", "no-such-task"], "--only names no task"),
    (["dialog", "--arms", "machine_magic"], "unknown dialog arm"),
])
def test_bad_flags_are_refused_before_anything_is_written(argv: list[str], said: str, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert main(["compare", *argv, *([] if "--replay" in argv else ["--out", str(out)])]) == 2
    assert said in capsys.readouterr().err
    assert not out.exists()
