"""``labkit compare reading`` / ``labkit bench experiment``: which runs the options choose."""

from __future__ import annotations

import pytest

from labkit.cli import build_parser
from labkit.core.errors import LabkitError
from labkit.reading.cli import _config, default_config


def _parsed(*argv: str):
    return _config(build_parser().parse_args(["compare", "reading", *argv]))


def test_no_options_choose_the_headline_ten_on_the_test_split() -> None:
    config = _parsed()
    assert config.splits == ["test"] and len(config.task_ids) == 10
    assert config.to_dict() == default_config().to_dict()


@pytest.mark.parametrize("argv", [["--full"], ["--seeds", "2"], ["--arms", "prompt-only"], ["--temperature", "0.5"],
                                  ["--only", "t-tri-01"], ["--first-seed", "1"]])
def test_any_choice_of_runs_is_not_the_default_configuration(argv: list[str]) -> None:
    """The bench marks its record as `make experiment`'s only when the configuration is the default one."""
    assert _parsed(*argv).to_dict() != default_config().to_dict()


def test_two_ways_of_choosing_tasks_are_refused() -> None:
    with pytest.raises(LabkitError, match="choose tasks in different ways"):
        _parsed("--full", "--per-family", "2")


def _prov(sha: str, commit: str, task_sha: str = "t1") -> dict:
    return {"labkit_commit": commit, "machine": {"cpu_count": 2}, "started_utc": "2026-12-01T00:00:00Z",
            "backend": {"backend": "llama_cpp", "model_sha256": sha}, "task_files": {"test": {"sha256": task_sha}}}


def test_a_resumed_recording_keeps_one_segment_per_stretch_and_refuses_another_model(tmp_path) -> None:
    import json

    from labkit.reading.cli import with_segment

    first = with_segment(_prov("aa", "c1"), tmp_path, resume=False)
    assert [s["labkit_commit"] for s in first["segments"]] == ["c1"]
    first["segments"][-1]["wall_s"] = 60.0
    (tmp_path / "provenance.json").write_text(json.dumps(first), encoding="utf-8")
    second = with_segment(_prov("aa", "c2"), tmp_path, resume=True)
    assert [(s["labkit_commit"], s["wall_s"]) for s in second["segments"]] == [("c1", 60.0), ("c2", None)]
    with pytest.raises(LabkitError, match="another model file"):
        with_segment(_prov("bb", "c2"), tmp_path, resume=True)
    with pytest.raises(LabkitError, match="task files changed"):
        with_segment(_prov("aa", "c2", task_sha="t2"), tmp_path, resume=True)
    assert with_segment(_prov("bb", "c3"), tmp_path, resume=False)["segments"][0]["labkit_commit"] == "c3"


def test_resume_and_replay_together_are_refused(tmp_path, capsys) -> None:
    from labkit.cli import main

    assert main(["compare", "reading", "--replay", "data/experiment-v2/gemma3-270m", "--resume",
                 "--out", str(tmp_path / "out")]) != 0
    assert "--resume is for a live recording" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()  # refused before anything was written
