"""The shipped repo-editing tasks: the task file is valid, and every task is real.

For each task, in a temporary git copy: the listed tests fail before the known fix and every test
passes after it (the fix applied as plain text replacement, independently of the machine), and the
shipped folder is byte-identical afterwards.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from labkit.core.errors import LabkitError
from labkit.repoedit.tasks import DEFAULT_TASK_FILE, KIT_KINDS, load_tasks, project_dir, split_ids
from labkit.repoedit.workspace import Workspace, tree_digest

TASKS = load_tasks()


def test_the_task_file_has_enough_tasks_of_every_kind_in_both_splits():
    assert len(TASKS) >= 12
    assert {t.kind for t in TASKS.values()} == set(KIT_KINDS)
    assert len(split_ids(TASKS, "dev")) >= 10 and len(split_ids(TASKS, "test")) >= 10
    for task in TASKS.values():
        files = [p for p in project_dir(task).rglob("*.py")]
        assert 2 <= len(files) <= 6, (task.id, files)


@pytest.mark.slow
@pytest.mark.parametrize("task_id", sorted(TASKS))
def test_tests_fail_before_the_oracle_fix_and_pass_after_it(task_id):
    task = TASKS[task_id]
    shipped = tree_digest(project_dir(task))
    with Workspace(project_dir(task)) as ws:
        before = ws.run_tests()
        assert before.outcome in ("failed", "error")
        assert set(task.failing) <= set(before.failed), before.output
        for fix in task.oracle:
            target = ws.root / fix.path
            text = target.read_text(encoding="utf-8")
            for edit in fix.edits:
                assert text.count(edit.search) == 1
                text = text.replace(edit.search, edit.replace, 1)
            target.write_text(text, encoding="utf-8")
        after = ws.run_tests()
        assert after.outcome == "passed", after.output
        assert set(task.failing) <= set(after.passed)
        assert set(before.passed) <= set(after.passed)  # the fix breaks nothing that worked
    assert tree_digest(project_dir(task)) == shipped


def _write(tmp_path: Path, body: str, project: bool = True) -> Path:
    if project:
        (tmp_path / "p" / "tests").mkdir(parents=True)
        (tmp_path / "p" / "m.py").write_text("X = 1\n")
        (tmp_path / "p" / "tests" / "test_m.py").write_text("def test_x():\n    assert False\n")
    path = tmp_path / "tasks.yaml"
    path.write_text(body)
    return path


GOOD = """format: 1
tasks:
  - id: t1
    project: p
    split: dev
    kind: bug
    requirement: X must be two, not one.
    failing: [tests/test_m.py::test_x]
    oracle:
      - path: m.py
        why: X is wrong
        edits: [{search: "X = 1", replace: "X = 2"}]
"""


def test_a_valid_small_task_file_loads(tmp_path):
    assert list(load_tasks(_write(tmp_path, GOOD))) == ["t1"]


@pytest.mark.parametrize(("change", "message"), [
    (("project: p", "project: nowhere"), "project folder"),
    (("split: dev", "split: train"), "task 't1': split"),
    (("tests/test_m.py::test_x", "test_x"), "not a pytest node id"),
    (("tests/test_m.py::test_x", "tests/test_gone.py::test_x"), "names a file that is not in"),
    (("path: m.py", "path: gone.py"), "oracle file 'gone.py'"),
    (('search: "X = 1"', 'search: "Y = 1"'), "occurs 0 times"),
    (("format: 1", "format: 2"), "format: 1"),
    (("kind: bug", "kind: whatever"), "task 't1': kind"),
])
def test_a_bad_task_entry_is_named_with_its_field(tmp_path, change, message):
    with pytest.raises(LabkitError, match=message):
        load_tasks(_write(tmp_path, GOOD.replace(*change)))


def test_a_task_id_used_twice_is_refused(tmp_path):
    twice = GOOD + GOOD.split("tasks:\n", 1)[1]
    with pytest.raises(LabkitError, match="used twice"):
        load_tasks(_write(tmp_path, twice))


def test_a_missing_or_broken_file_says_so(tmp_path):
    with pytest.raises(LabkitError, match="does not exist"):
        load_tasks(tmp_path / "none.yaml")
    with pytest.raises(LabkitError, match="not valid YAML"):
        load_tasks(_write(tmp_path, "format: [1\n", project=False))


def test_the_default_task_file_is_the_shipped_one():
    assert DEFAULT_TASK_FILE.is_file() and DEFAULT_TASK_FILE.parent.name == "repos"
