"""Task files: the shipped set, and bad files that must fail with the file, task and field named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from labkit.cli import main
from labkit.experiment.tasks import DEFAULT_TASKS, TaskFileError, load_tasks
from labkit.runtime.records import load_records


def test_the_shipped_task_set() -> None:
    tasks = load_tasks()
    assert len(tasks) >= 10
    assert {len(t.goal.reads) for t in tasks} == {2, 3, 4}
    records = load_records()
    forbidden = [r for t in tasks for r in t.forbidden_records]
    assert any(not records[r]["restricted"] for r in forbidden)  # forbidden by policy, served by the world
    assert any(f.kind == "write_timeout" and f.landed for t in tasks for f in t.faults.faults)
    assert any(f.kind == "write_timeout" and not f.landed for t in tasks for f in t.faults.faults)


def _good() -> dict:
    return json.loads(DEFAULT_TASKS.read_text())[0]


def _write(tmp_path: Path, data: object, name: str = "tasks.json") -> Path:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def test_one_task_per_file_and_folders(tmp_path: Path) -> None:
    one = _write(tmp_path, _good(), "a.json")
    assert [t.id for t in load_tasks(one)] == [_good()["id"]]
    second = {**_good(), "id": "other"}
    _write(tmp_path, [second], "b.json")
    assert [t.id for t in load_tasks(tmp_path)] == [_good()["id"], "other"]


@pytest.mark.parametrize("mutate,expected", [
    (lambda t: t.pop("goal"), "task [0] (id 'diff2'): field goal: Field required"),
    (lambda t: t.update(budget={"max_steps": 0}), "field budget.max_steps"),
    (lambda t: t.update(colour="red"), "field colour: Extra inputs are not permitted"),
    (lambda t: t["goal"].update(reads=["R02", "R77"]), "unknown record(s) ['R77']"),
    (lambda t: t.update(forbidden_records=["R02"]), "field forbidden_records: ['R02'] are also in goal.reads"),
    (lambda t: t["goal"].update(reads=["R04", "R02"]), "field goal.reads: ['R04', 'R02'] is not the order"),
    (lambda t: t.update(description="Compare the two records."), "field description: does not name"),
    (lambda t: t["goal"].update(draft_key="other-key"), "does not say 'key other-key'"),
    (lambda t: t["faults"].update(faults=[{"kind": "meteor"}]) if "faults" in t else
     t.update(faults={"faults": [{"kind": "meteor"}]}), "field faults.faults.0.kind"),
])
def test_bad_tasks_name_file_task_and_field(tmp_path: Path, mutate, expected: str) -> None:
    task = _good()
    mutate(task)
    path = _write(tmp_path, [task])
    with pytest.raises(TaskFileError) as info:
        load_tasks(path)
    assert str(path) in str(info.value) and expected in str(info.value)


@pytest.mark.parametrize("content,expected", [
    ("[{]", "not valid JSON (line 1"), ("[]", "the list of tasks is empty"), ("[3]", "must be a JSON object"),
])
def test_unreadable_task_files(tmp_path: Path, content: str, expected: str) -> None:
    path = _write(tmp_path, content)
    with pytest.raises(TaskFileError, match=r"tasks\.json") as info:
        load_tasks(path)
    assert expected in str(info.value)


def test_duplicate_ids_and_missing_paths(tmp_path: Path) -> None:
    path = _write(tmp_path, [_good(), _good()])
    with pytest.raises(TaskFileError, match=r"task \[1\] \(id 'diff2'\): field id: 'diff2' is already used"):
        load_tasks(path)
    with pytest.raises(TaskFileError, match="no task file or folder"):
        load_tasks(tmp_path / "missing.json")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(TaskFileError, match=r"no \.json task files"):
        load_tasks(empty)


def test_cli_reports_a_bad_task_file_and_spends_nothing(tmp_path: Path, capsys) -> None:
    path = _write(tmp_path, [{"id": "x"}])
    out = tmp_path / "out"
    code = main(["experiment-v1", "--tasks", str(path), "--out", str(out), "--no-progress"])
    assert code == 2
    err = capsys.readouterr().err
    assert str(path) in err and "field description" in err
    assert not out.exists()


def test_a_new_run_moves_the_previous_results_aside_instead_of_wiping_them(tmp_path: Path) -> None:
    from labkit.errors import LabkitError
    from labkit.experiment.cli import _set_previous_aside

    out = tmp_path / "results"
    out.mkdir()
    (out / "runs.jsonl").write_text(json.dumps({"arm": "a"}) + "\n")
    _set_previous_aside(out)
    assert not out.exists()
    assert (tmp_path / "results.previous" / "runs.jsonl").read_text() == '{"arm": "a"}\n'
    afile = tmp_path / "file"
    afile.write_text("x")
    with pytest.raises(LabkitError, match="is a file, not a folder"):
        _set_previous_aside(afile)


def test_a_damaged_recording_is_explained(tmp_path: Path) -> None:
    from labkit.errors import LabkitError
    from labkit.experiment.runner import prepare_replay

    for name in ("experiment.json", "tasks.json"):
        (tmp_path / name).write_text("{not json")
    (tmp_path / "cassettes").mkdir()
    with pytest.raises(LabkitError, match=r"experiment\.json is damaged"):
        prepare_replay(tmp_path)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"seeds": [-1, 0]}, "seeds must be 0 or more"),
    ({"seeds": [0, 1], "temperature": 0.0}, "greedy decoding ignores the seed"),
])
def test_seed_settings_that_would_not_vary_or_would_misdecode_are_refused(kwargs, message) -> None:
    from labkit.errors import LabkitError
    from labkit.experiment.planners import Decoding
    from labkit.experiment.runner import ExperimentConfig

    temperature = kwargs.pop("temperature", 0.5)
    with pytest.raises(LabkitError, match=message):
        ExperimentConfig(decoding=Decoding(temperature=temperature), **kwargs).check()
