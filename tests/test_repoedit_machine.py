"""The repo-editing machine on real copies of real projects: guards, bad input, fixes, rollback, replay.

Every run here uses a real git copy and real pytest subprocesses; only the planner is scripted, so
each test can stage exactly the proposal it is about (a model rarely misbehaves on cue).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from labkit.core.events import Transitioned
from labkit.core.reducer import replay
from labkit.repoedit.events import (
    ApprovalDecided,
    EditApplied,
    ProposalRefused,
    RepoEditState,
    RolledBack,
    TestsRan,
)
from labkit.repoedit.machine import (
    TABLES,
    Limits,
    RepoEditRun,
    repoedit_invariants,
    repoedit_table,
)
from labkit.repoedit.planners import OraclePlanner, ScriptedPlanner
from labkit.repoedit.tasks import load_tasks, project_dir
from labkit.repoedit.workspace import tree_hashes

pytestmark = pytest.mark.slow  # real git and pytest subprocesses (a second or two per run)

TASKS = load_tasks()
WORDS = TASKS["wordcount-whitespace"]


def plan(*files: str) -> str:
    return json.dumps({"steps": [{"file": f, "why": "the requirement needs it"} for f in files]})


def edit(search: str, replace: str) -> str:
    return json.dumps({"status": "ok", "edits": [{"search": search, "replace": replace}]})


FIX = edit('    return len(text.split(" "))', "    return len(text.split())")
BROKEN = edit('    return len(text.split(" "))', "    return len(text.split()) + 1")  # compiles, fails tests


def run(planner, task=WORDS, source: Path | None = None, **kwargs) -> RepoEditRun:
    machine = RepoEditRun(source or project_dir(task), task.requirement, planner, task_id=task.id,
                          clock=lambda: 0.0, **kwargs)
    machine.run()
    return machine


def of(machine: RepoEditRun, kind: type) -> list:
    return [e for e in machine.events if isinstance(e, kind)]


def triggers(machine: RepoEditRun) -> list[str]:
    return [e.trigger for e in of(machine, Transitioned)]


def replays(machine: RepoEditRun) -> RepoEditState:
    entry = TABLES["repoedit"]
    result = replay(machine.events, entry.reduce, entry.empty(), entry.invariants(), entry.table(), entry.guards())
    assert result.violations == ()
    assert result.state == machine.state
    return result.state


def test_the_table_is_checked_and_every_state_is_reachable():
    table = repoedit_table()
    assert table.reachable() == set(table.states)


@pytest.mark.parametrize("task_id", ["wordcount-whitespace", "greeter-rename", "cart-discount"])
def test_the_oracle_fix_goes_through_the_machine_to_done(task_id):
    task = TASKS[task_id]
    shipped = tree_hashes(project_dir(task))
    machine = run(OraclePlanner(task), task)
    assert machine.state.status == "DONE" and machine.state.reason == "green"
    assert [e.phase for e in of(machine, TestsRan)] == ["baseline", "check"]
    assert machine.state.applied == tuple(f.path for f in task.oracle)
    assert replays(machine).status == "DONE"
    assert tree_hashes(project_dir(task)) == shipped  # the shipped project is never written


# ------------------------------------------------------------------ guards, each a typed refusal
@pytest.mark.parametrize(("bad_plan", "code"), [
    (plan("tests/test_words.py"), "test_file"),
    (plan("../wordcount/words.py"), "outside_repo"),
    (plan("/etc/passwd"), "outside_repo"),
    (plan("nowhere.py"), "unknown_file"),
    (plan("words.py", "words.py"), "duplicate_file"),
    ("Sure! I will edit words.py.", "not_json"),
    ('{"steps": []}', "schema_invalid"),
])
def test_a_bad_plan_is_refused_with_its_code_then_retried(bad_plan, code):
    machine = run(ScriptedPlanner([bad_plan, plan("words.py")], [FIX]))
    refused = of(machine, ProposalRefused)
    assert [(r.state, r.code) for r in refused] == [("PLAN_CHANGE", code)]
    assert machine.state.status == "DONE"
    assert triggers(machine)[:3] == ["indexed", "plan_refused", "plan_ok"]


def test_plans_refused_past_the_budget_fail_without_an_edit():
    machine = run(ScriptedPlanner(["nope", "still nope"], []))
    assert machine.state.status == "FAILED" and machine.state.reason == "plan_refused"
    assert not of(machine, EditApplied)
    replays(machine)


@pytest.mark.parametrize(("bad_edit", "code"), [
    (edit("return len(text.split(' '))", "return 0"), "does_not_apply"),   # quotes differ from the file
    (edit("    ", "  "), "does_not_apply"),                                # not unique
    (edit('    return len(text.split(" "))', '    return len(text.split(" "))'), "no_change"),
    (edit('    return len(text.split(" "))', "    return len(text.split(\n"), "syntax_error"),
    ('{"status": "ok", "patch": "--- a/words.py"}', "schema_invalid"),
    ('```json\n{"status": "ok", "edits": [}\n```', "not_json"),
])
def test_a_bad_edit_is_refused_never_written_and_retried(bad_edit, code):
    machine = run(ScriptedPlanner([plan("words.py")], [bad_edit, FIX]))
    refused = of(machine, ProposalRefused)
    assert [(r.state, r.file, r.code) for r in refused] == [("EDIT_FILE", "words.py", code)]
    assert len(of(machine, EditApplied)) == 1 and machine.state.status == "DONE"
    # the refused edit never reached the tests: one baseline run, one run after the good edit
    assert [e.phase for e in of(machine, TestsRan)] == ["baseline", "check"]
    replays(machine)


def test_edits_refused_past_the_budget_roll_back_and_fail():
    machine = run(ScriptedPlanner([plan("words.py")], ["x", "y", "z"]))
    assert triggers(machine)[-2:] == ["edit_refused", "rolled_back"]
    assert machine.state.status == "FAILED" and machine.state.reason == "edit_budget_spent"
    assert of(machine, RolledBack)[0].restored


def test_an_edit_over_the_size_limit_waits_for_a_human_who_rejects_it():
    big = edit('    return len(text.split(" "))', "    return len(text.split())" + "\n    pass" * 12)
    machine = run(ScriptedPlanner([plan("words.py")], [big, FIX]), limits=Limits(diff_limit=5))
    assert triggers(machine)[2:5] == ["too_large", "rejected", "edited"]
    assert [d.approved for d in of(machine, ApprovalDecided)] == [False]
    assert of(machine, EditApplied)[0].approved_by == "guards" and machine.state.status == "DONE"
    replays(machine)


def test_an_edit_over_the_size_limit_is_applied_when_a_human_approves():
    big = edit('    return len(text.split(" "))', "    return len(text.split())" + "\n    pass" * 12)
    seen = []

    def reviewer(file: str, changed: int, diff: str) -> bool:
        seen.append((file, changed, "+    pass" in diff))
        return True

    machine = run(ScriptedPlanner([plan("words.py")], [big]), limits=Limits(diff_limit=5), approver=reviewer)
    assert seen == [("words.py", 14, True)]
    assert of(machine, EditApplied)[0].approved_by == "reviewer"
    assert machine.state.status == "DONE"
    replays(machine)


def test_the_planner_may_skip_a_file_and_abort_a_run():
    inventory = TASKS["inventory-rename"]
    skip = json.dumps({"status": "skip", "reason": "nothing here"})
    abort = json.dumps({"status": "abort", "reason": "I cannot do this"})
    machine = run(ScriptedPlanner([plan("report.py", "inventory.py")], [skip, abort]), inventory)
    assert triggers(machine)[2:] == ["edited", "abort", "rolled_back"]
    assert machine.state.reason == "aborted"


def _raising(message: str):
    def propose(view):
        raise RuntimeError(message)
    return propose


def test_a_planner_that_raises_while_planning_ends_the_run_failed_with_the_exception_logged():
    machine = run(ScriptedPlanner(_raising("backend down"), []))
    refused = of(machine, ProposalRefused)
    assert [(r.state, r.code) for r in refused] == [("PLAN_CHANGE", "planner_error")] * 2  # the plan budget
    assert all(r.detail == "RuntimeError: backend down" for r in refused)
    assert machine.state.status == "FAILED" and machine.state.reason == "plan_refused"
    assert not of(machine, EditApplied)
    replays(machine)


def test_a_planner_that_raises_after_an_edit_rolls_back_and_fails():
    answers = iter([BROKEN])

    def edits(view):
        answer = next(answers, None)
        if answer is None:
            raise ValueError("the planner has a bug")
        return answer

    machine = run(ScriptedPlanner([plan("words.py")], edits))
    assert triggers(machine)[-5:] == ["targeted_fix", "edit_refused", "edit_refused", "edit_refused", "rolled_back"]
    assert [r.code for r in of(machine, ProposalRefused)] == ["planner_error"] * 3
    assert "ValueError: the planner has a bug" in of(machine, ProposalRefused)[0].detail
    assert machine.state.status == "FAILED" and of(machine, RolledBack)[0].restored
    replays(machine)


# ------------------------------------------------------------------ targeted fix and rollback
def test_a_failing_edit_gets_a_targeted_fix_with_the_failure_output():
    planner = ScriptedPlanner([plan("words.py")], [BROKEN, edit("len(text.split()) + 1", "len(text.split())")])
    machine = run(planner)
    assert triggers(machine)[2:] == ["edited", "targeted_fix", "edited", "green"]
    fix_view = planner.views[-1]
    assert "test_many_spaces" in fix_view.failure and "+ 1" in fix_view.content
    replays(machine)


def test_a_broken_edit_is_rolled_back_and_leaves_the_tree_as_it_was():
    shipped = tree_hashes(project_dir(WORDS))
    machine = run(ScriptedPlanner([plan("words.py")], [BROKEN, "not json", "{", "[]"]),
                  limits=Limits(fix_budget=1), keep=True)
    try:
        assert triggers(machine)[-3:] == ["edit_refused", "edit_refused", "rolled_back"]
        assert machine.state.status == "FAILED"
        copy = tree_hashes(machine.workspace.root)
        copy.pop(".gitignore")
        assert copy == shipped  # file by file, byte for byte
        rolled = of(machine, RolledBack)[0]
        assert rolled.restored and rolled.digest_before != rolled.digest_after
    finally:
        machine.workspace.keep = False
        machine.workspace.close()
    replays(machine)


def test_when_the_fix_budget_is_spent_the_run_rolls_back():
    machine = run(ScriptedPlanner([plan("words.py")], [BROKEN]), limits=Limits(fix_budget=0))
    assert triggers(machine)[-2:] == ["rollback", "rolled_back"]
    assert machine.state.reason == "tests_not_green" and machine.state.rollbacks == 1


# ------------------------------------------------------------------ bad input
def _project(tmp_path: Path, module: str, test: str | None) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "m.py").write_text(module)
    if test is not None:
        (root / "tests").mkdir()
        (root / "tests" / "test_m.py").write_text(test)
    return root


def _run_on(root: Path, planner, **kwargs) -> RepoEditRun:
    machine = RepoEditRun(root, "make the tests pass", planner, clock=lambda: 0.0, **kwargs)
    machine.run()
    return machine


def test_a_repository_without_tests_fails_as_no_tests(tmp_path):
    machine = _run_on(_project(tmp_path, "X = 1\n", None), ScriptedPlanner([], []))
    assert (machine.state.status, machine.state.reason) == ("FAILED", "no_tests")
    replays(machine)


def test_a_task_whose_tests_already_pass_fails_as_already_green(tmp_path):
    machine = _run_on(_project(tmp_path, "X = 1\n", "from m import X\n\ndef test_x():\n    assert X == 1\n"),
                      ScriptedPlanner([], []))
    assert (machine.state.status, machine.state.reason) == ("FAILED", "already_green")


def test_a_hanging_test_run_is_a_typed_timeout_and_a_rollback(tmp_path):
    root = _project(tmp_path, "def slow():\n    return 1\n",
                    "from m import slow\n\ndef test_fast():\n    assert slow() == 2\n")
    hang = edit("    return 1", "    while True:\n        pass")
    machine = _run_on(root, ScriptedPlanner([plan("m.py")], [hang]), limits=Limits(test_timeout=3))
    check = of(machine, TestsRan)[-1]
    assert check.outcome == "timeout" and "killed after 3 s" in check.output
    assert triggers(machine)[-2:] == ["rollback", "rolled_back"]
    assert of(machine, RolledBack)[0].restored


def test_a_symlink_out_of_the_project_cannot_be_planned(tmp_path):
    outside = tmp_path / "secret.py"
    outside.write_text("KEY = 1\n")
    root = _project(tmp_path, "X = 1\n", "from m import X\n\ndef test_x():\n    assert X == 2\n")
    (root / "link.py").symlink_to(outside)
    machine = _run_on(root, ScriptedPlanner([plan("link.py"), plan("link.py")], []))
    assert [r.code for r in of(machine, ProposalRefused)] == ["outside_repo", "outside_repo"]
    assert outside.read_text() == "KEY = 1\n"


# ------------------------------------------------------------------ invariants
def test_the_invariants_catch_what_the_machine_never_does():
    checks = {i.name: i for i in repoedit_invariants()}
    assert checks["edits_stay_in_plan"].violation(RepoEditState(plan=("a.py",), applied=("tests/test_a.py",)), [])
    assert checks["done_only_when_green"].violation(RepoEditState(status="DONE", last_outcome="failed"), [])
    assert checks["failed_leaves_tree_as_it_was"].violation(RepoEditState(status="FAILED", edits_since_rollback=1),
                                                            [])
    assert checks["failed_leaves_tree_as_it_was"].violation(RepoEditState(status="FAILED", rollbacks=1,
                                                                          restored=False), [])
    assert checks["done_only_when_green"].violation(RepoEditState(status="DONE", last_outcome="passed"), []) is None


def test_a_failure_in_an_unplanned_file_is_not_fixed_but_rolled_back():
    """Renaming only the definition breaks the unplanned caller (an import error while collecting): the
    traceback names cli.py, which no targeted fix may touch, so the run rolls back."""
    greeter = TASKS["greeter-rename"]
    planner = ScriptedPlanner([plan("greet.py")], [edit("def hello(", "def greeting(")])
    machine = run(planner, greeter)
    check = of(machine, TestsRan)[-1]
    assert check.outcome == "error" and "cli.py" in check.output
    assert triggers(machine)[-2:] == ["rollback", "rolled_back"] and machine.state.fixes == 0
