"""The code machine's features for real repositories, each on a small package built here.

traceback_plan, definition_view, short_docstrings, no_repeat, checkpoint and relevant_tests act only where a project is
big (a long index, a long file, many test files) or a repair goes round in circles; the package below
is made big where each test needs it, by the limits, so that every run stays a few seconds.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from labkit.llm.fake import ScriptedBackend
from labkit.repoedit.arm_io import ArmInputs
from labkit.repoedit.arms import arm
from labkit.repoedit.budget import BudgetedBackend
from labkit.repoedit.compare import CompareConfig
from labkit.repoedit.definitions import ELIDED, definition_edit
from labkit.repoedit.events import (
    CheckpointKept,
    CheckpointRestored,
    EditSkipped,
    ProposalRefused,
    Proposed,
    RepoEditState,
    TestsRan,
)
from labkit.repoedit.features import ALL
from labkit.repoedit.formats import FILE_FORMATS
from labkit.repoedit.history import BEFORE_REPOSITORIES
from labkit.repoedit.index import index_project
from labkit.repoedit.localize import candidate_files, excerpt, failing_statements, file_view, special_calls
from labkit.repoedit.machine import Limits, RepoEditRun, repoedit_invariants
from labkit.repoedit.planners import EditView, OraclePlanner, PlanView, ScriptedPlanner
from labkit.repoedit.tasks import FileFix, RepoTask, SearchReplace
from labkit.repoedit.verify import measure_baseline

FILLER = "".join(f"\n\ndef step_{i}(x):\n    return x + {i}\n" for i in range(20))
CORE = ('"""Sums and firsts."""\n\nfrom pkg.util import clean\n' + FILLER +
        "\n\ndef total(xs):\n    return sum(clean(xs)) - 1\n"
        "\n\ndef first(xs):\n    return xs[-1]\n")
TESTS = {
    "tests/test_core.py": "from pkg.core import first, total\n\n\ndef test_total():\n"
                          "    assert total([1, 2]) == 3\n\n\ndef test_first():\n    assert first([4, 5]) == 4\n",
    "tests/test_util.py": "from pkg.util import clean\n\n\ndef test_clean():\n    assert clean([1, None]) == [1]\n",
    "tests/test_steps.py": "from pkg.core import step_3\n\n\ndef test_step():\n    assert step_3(1) == 4\n",
    "tests/test_more.py": "def test_nothing_to_do_with_it():\n    assert 1 + 1 == 2\n",
}
PLAN = '{"steps": [{"file": "pkg/core.py", "why": "total and first are defined here"}]}'


def block(name: str, code: str) -> str:
    return f"DEFINITION: {name}\n```python\n{code}\n```"


TOTAL_FIXED = block("total", "def total(xs):\n    return sum(clean(xs))")
TOTAL_WRONG = block("total", "def total(xs):\n    return sum(clean(xs)) + 1")
TOTAL_ZERO = block("total", "def total(xs):\n    return 0")
FIRST_FIXED = block("first", "def first(xs):\n    return xs[0]")


@pytest.fixture
def package(tmp_path: Path) -> Path:
    root = tmp_path / "pkg-project"
    files = {"pkg/__init__.py": "", "pkg/core.py": CORE,
             "pkg/util.py": "def clean(xs):\n    return [x for x in xs if x is not None]\n", **TESTS}
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return root


def run_on(root: Path, edits: list[str], plans: list[str] = (PLAN,), features: frozenset[str] = ALL,
           **limits: int) -> tuple[RepoEditRun, ScriptedPlanner]:
    planner = ScriptedPlanner(list(plans), edits)
    run = RepoEditRun(root, "total and first are wrong", planner, features=features, limits=Limits(**limits))
    run.run()
    return run, planner


def of(run: RepoEditRun, kind: type) -> list:
    return [e for e in run.events if isinstance(e, kind)]


# ---------------------------------------------------------------- localization, without a run
def test_the_traceback_s_source_file_comes_first_then_the_files_defining_the_names_used(package: Path) -> None:
    index = index_project(package)
    output = ('tests/test_core.py:5: in test_total\n    assert total([1, 2]) == 3\n'
              'pkg/util.py:2: in clean\n    return [x for x in xs]\nE   AssertionError')
    found = candidate_files(output, ("tests/test_core.py::test_total",), index)
    assert [f for f, _ in found][:2] == ["pkg/util.py", "pkg/core.py"]
    assert "traceback" in found[0][1] and "total" in found[1][1]
    assert candidate_files("", ("tests/test_steps.py::test_step",), index) == [
        ("pkg/core.py", "a failing test module imports it")]


def test_an_excerpt_holds_the_blamed_definition_and_what_it_calls_and_marks_the_rest() -> None:
    text = "def helper(x):\n    return x\n\n\ndef other():\n    pass\n\n\ndef main(x):\n    return helper(x)\n"
    shown, held = excerpt(text, ("main",), max_lines=10)
    assert held == ("main", "helper")
    assert "def other" not in shown and "# ... lines 3-8 not shown" in shown
    assert excerpt(text, ("main",), max_lines=2)[1] == ("main",)  # the first is shown even when it fills the room


DOCUMENTED = ('class Box:\n    """A box.\n\n    It holds things.\n    """\n\n    def size(self, x):\n'
              '        """How big.\n\n        >>> len([0])\n        1\n        """\n        return x + 1\n'
              '\n\ndef plain(x):\n    """One line."""\n    return x\n')


def test_an_excerpt_with_short_docstrings_shows_each_long_docstring_as_one_line() -> None:
    shown, held = excerpt(DOCUMENTED, ("Box.size", "plain"), max_lines=40, short_docstrings=True)
    assert held == ("Box.size", "plain")
    assert shown.count(ELIDED) == 1 and "How big" not in shown and '"""One line."""' in shown
    assert f"        {ELIDED}\n        return x + 1" in shown and "class Box:" in shown
    assert "How big" in excerpt(DOCUMENTED, ("Box.size",), max_lines=40)[0]


def test_a_rewrite_keeps_an_elided_docstring_whatever_it_writes_in_its_place() -> None:
    for body in (f"    {ELIDED}\n    return x + 2", "    return x + 2"):
        edit, why, _ = definition_edit(DOCUMENTED, "Box.size", f"def size(self, x):\n{body}", keep_docstrings=True)
        assert edit is not None, why
        after = DOCUMENTED.replace(edit.search, edit.replace)
        assert ">>> len([0])\n        1\n        \"\"\"\n        return x + 2\n" in after
        assert ELIDED not in after
    guessed, _, _ = definition_edit(DOCUMENTED, "Box.size", 'def size(self, x):\n    """New."""\n    return x',
                                    keep_docstrings=True)
    assert guessed is not None and "New." not in guessed.replace and "How big" in guessed.replace
    dotted, _, _ = definition_edit(DOCUMENTED, "Box.size", "def Box.size(self, x):\n    return x + 2")
    assert dotted is not None and "    def size(self, x):" in dotted.replace  # the name as the list shows it
    same, _, _ = definition_edit(DOCUMENTED, "Box.size", 'def size(self, x):\n    """New."""\n    return x + 1',
                                 keep_docstrings=True)
    assert same is not None and same.search == same.replace  # the docstring's blank lines come back as they were
    short, _, _ = definition_edit(DOCUMENTED, "plain", 'def plain(x):\n    """Two lines."""\n    return x',
                                  keep_docstrings=True)
    assert short is not None and "Two lines." in short.replace  # a one-line docstring was shown: the answer's stands
    bare, _, _ = definition_edit(DOCUMENTED, "Box.size", "def size(self, x):\n    return x")
    assert bare is not None and "How big" not in bare.replace  # without keep_docstrings, written as given


def test_a_class_rewritten_whole_keeps_each_method_s_elided_docstring() -> None:
    code = f"class Box:\n    {ELIDED}\n\n    def size(self, x):\n        {ELIDED}\n        return x"
    edit, why, _ = definition_edit(DOCUMENTED, "Box", code, keep_docstrings=True)
    assert edit is not None, why
    assert "It holds things." in edit.replace and ">>> len([0])" in edit.replace and ELIDED not in edit.replace


def test_the_whole_failing_test_is_evidence_where_the_traceback_shows_only_its_last_line(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_box.py").write_text(
        "from pkg import Box\n\n\ndef test_size():\n    box = Box.build(3)\n    assert Box(\n        1\n"
        "    ).size() == 1\n", encoding="utf-8")
    output = "tests/test_box.py:8: in test_size\n    ).size() == 1\nE   AttributeError"
    statements = failing_statements(tmp_path, output)
    assert "Box.build(3)" in statements and "assert Box(" in statements
    assert failing_statements(tmp_path, "../outside.py:1: in f\n") == ""
    text = "class Box:\n" + "".join(f"    def m{i}(self):\n        return {i}\n\n" for i in range(90)) + (
        "    @classmethod\n    def build(cls, n):\n        return None\n\n    def size(self):\n        return 1\n")
    seen = file_view("pkg.py", text, output, view_lines=50, excerpt_lines=20, statements=statements)
    assert seen.excerpted and seen.names == ("Box.size", "Box.build")  # the methods the test uses, not the class
    assert file_view("pkg.py", text, output, view_lines=50, excerpt_lines=20).names == ("Box.size",)


def test_the_special_methods_a_failing_statement_s_syntax_calls_are_offered_though_never_named(
        tmp_path: Path) -> None:
    assert set(special_calls("assert box[0] == Box(1)\nfor x in box:\n    len(x)")) == {
        "__init__", "__new__", "__iter__", "__eq__", "__getitem__", "__len__"}
    assert special_calls("def cut(:\n") == ("__init__", "__new__")  # a statement cut off is skipped
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_box.py").write_text(
        "from pkg import Box\n\n\ndef test_first():\n    assert Box.build(3)[0] == 1\n", encoding="utf-8")
    output = "tests/test_box.py:5: in test_first\n    assert Box.build(3)[0] == 1\nE   assert 2 == 1"
    text = "class Box:\n" + "".join(f"    def m{i}(self):\n        return {i}\n\n" for i in range(90)) + (
        "    def build(self, n):\n        return self\n\n    def __getitem__(self, i):\n        return 2\n\n"
        "    def __hash__(self):\n        return 0\n")
    seen = file_view("pkg.py", text, output, view_lines=50, excerpt_lines=20,
                     statements=failing_statements(tmp_path, output))
    assert seen.pointed == ("Box.build", "Box.__getitem__")  # the method named, and the one its syntax calls
    assert "Box.__hash__" not in seen.names and "Box.m0" not in seen.names
    traced = output.replace("tests/test_box.py:5: in test_first", "tests/test_box.py:5: in test_first\n"
                            "pkg.py:1: in Box")  # a frame in the class's own body
    whole = file_view("pkg.py", text, traced, view_lines=50, excerpt_lines=20,
                      statements=failing_statements(tmp_path, traced))
    assert whole.names == ("Box",)  # a class the traceback blames is shown whole, not refined


def test_an_answer_over_the_limit_is_judged_by_the_definitions_it_changes() -> None:
    text = "".join(f"def f{i}(x):\n    return x + {i}\n\n\n" for i in range(5))
    view = EditView("r", "m.py", "why", text, format="definitions", definitions=tuple(f"f{i}" for i in range(5)))
    parse = FILE_FORMATS["definitions"].parse
    copied = "\n".join(block(f"f{i}", f"def f{i}(x):\n    return x + {i}") for i in range(4))
    answer = parse(copied.replace("x + 2", "x - 2"), text, view)
    assert answer.refusal is None and answer.named == ("f2",)
    changed_all = parse(copied.replace("+", "-"), text, view)
    assert changed_all.refusal is not None and changed_all.refusal.code == "too_many_definitions"


# ---------------------------------------------------------------- the features in the machine
@pytest.mark.slow
def test_a_project_whose_index_is_too_long_to_show_is_planned_among_the_files_the_evidence_names(
        package: Path) -> None:
    run, planner = run_on(package, [TOTAL_FIXED, FIRST_FIXED], plan_index_chars=50)
    view = planner.views[0]
    assert isinstance(view, PlanView) and view.menu[0] == "pkg/core.py" and set(view.menu) <= {
        "pkg/core.py", "pkg/util.py", "pkg/__init__.py"}
    assert "named in the failing output" in view.files or "traceback" in view.files
    assert run.state.status == "DONE"
    whole, _ = run_on(package, [TOTAL_FIXED, FIRST_FIXED])
    assert whole.state.status == "DONE" and not whole_menu_narrowed(whole)


def whole_menu_narrowed(run: RepoEditRun) -> bool:
    return any("named in the failing output" in str(getattr(e, "prompt", "")) for e in of(run, Proposed))


@pytest.mark.slow
def test_a_long_file_is_shown_as_the_blamed_definitions_only(package: Path) -> None:
    run, planner = run_on(package, [TOTAL_FIXED, FIRST_FIXED], view_lines=30, excerpt_lines=10)
    view = planner.views[1]
    assert isinstance(view, EditView)
    assert "def total" in view.content and "def step_7" not in view.content and "not shown" in view.content
    assert set(view.definitions) <= {"total", "first", "clean"} and "total" in view.definitions
    assert run.state.status == "DONE"


@pytest.mark.slow
def test_the_known_fix_goes_through_an_excerpt_of_a_long_file(package: Path) -> None:
    fix = SearchReplace(search="    return sum(clean(xs)) - 1\n", replace="    return sum(clean(xs))\n")
    task = RepoTask(id="t", project="pkg-project", split="dev", kind="mutation", requirement="total is off by one",
                    failing=("tests/test_core.py::test_total",),
                    oracle=(FileFix(path="pkg/core.py", why="total subtracts one", edits=(fix,)),))
    planner = OraclePlanner(task)
    run = RepoEditRun(package, "r", planner, features=ALL, limits=Limits(view_lines=30, excerpt_lines=10))
    run.run()
    applied = [e for e in run.events if type(e).__name__ == "EditApplied"]
    assert applied and applied[0].definitions == ["total"]


@pytest.mark.slow
def test_a_repeated_answer_is_refused_and_the_next_prompt_leaves_it_out_and_samples_hotter(package: Path) -> None:
    run, planner = run_on(package, [TOTAL_WRONG, TOTAL_WRONG, TOTAL_FIXED, FIRST_FIXED])
    assert [e.code for e in of(run, ProposalRefused)] == ["repeated"]
    after = planner.views[3]
    assert isinstance(after, EditView) and after.previous == "" and after.temperature == 1.0
    assert "repeated" in after.refused
    assert run.state.status == "DONE"


@pytest.mark.slow
def test_without_no_repeat_the_same_answer_is_applied_again_and_shown_back(package: Path) -> None:
    run, planner = run_on(package, [TOTAL_WRONG, TOTAL_WRONG], features=ALL - {"no_repeat", "checkpoint"})
    assert not [e for e in of(run, ProposalRefused) if e.code == "repeated"]
    assert TOTAL_WRONG in planner.views[2].previous
    assert run.state.status == "FAILED"


@pytest.mark.slow
def test_an_answer_that_changes_nothing_moves_on_to_the_next_planned_file(package: Path) -> None:
    plan = ('{"steps": [{"file": "pkg/util.py", "why": "total uses clean"}, '
            '{"file": "pkg/core.py", "why": "total and first are defined here"}]}')
    same = block("clean", "def clean(xs):\n    return [x for x in xs if x is not None]")
    run, _ = run_on(package, [same, TOTAL_FIXED + "\n\n" + FIRST_FIXED], plans=[plan])
    [skipped] = of(run, EditSkipped)
    assert skipped.file == "pkg/util.py" and "unchanged" in skipped.reason
    assert run.state.status == "DONE" and not of(run, ProposalRefused)
    without, _ = run_on(package, [same, same], plans=[plan], features=ALL - {"unchanged_moves_on"})
    assert not of(without, EditSkipped) and of(without, ProposalRefused)[0].code == "no_change"


@pytest.mark.slow
def test_partial_progress_is_a_checkpoint_that_a_worse_repair_goes_back_to(package: Path) -> None:
    run, planner = run_on(package, [TOTAL_FIXED, TOTAL_ZERO, FIRST_FIXED])
    [kept] = of(run, CheckpointKept)
    assert kept.failed == 1
    [restored] = of(run, CheckpointRestored)
    assert restored.commit == kept.commit and restored.digest_after == kept.digest
    last = planner.views[-1]
    assert isinstance(last, EditView) and "return 0" not in last.content  # the worse edit is gone
    assert run.state.status == "DONE" and run.state.fixes == 2


@pytest.mark.slow
def test_without_checkpoint_the_worse_repair_is_built_on_and_the_run_ends_rolled_back(package: Path) -> None:
    run, _ = run_on(package, [TOTAL_FIXED, TOTAL_ZERO, FIRST_FIXED], features=ALL - {"checkpoint"})
    assert not of(run, CheckpointRestored)
    assert run.state.status == "FAILED" and run.state.restored


@pytest.mark.slow
def test_a_big_suite_runs_the_failing_tests_files_first_and_the_whole_suite_before_done(package: Path) -> None:
    run, _ = run_on(package, [TOTAL_FIXED, FIRST_FIXED])
    checks = [e for e in of(run, TestsRan) if e.phase == "check"]
    assert [e.selected for e in checks] == [["tests/test_core.py"], ["tests/test_core.py"], []]
    assert checks[-1].outcome == "passed" and len(checks[-1].passed) == 5
    assert run.state.status == "DONE"
    without, _ = run_on(package, [TOTAL_FIXED, FIRST_FIXED], features=ALL - {"relevant_tests"})
    assert all(not e.selected for e in of(without, TestsRan))


def test_done_after_a_run_of_some_test_files_only_breaks_an_invariant() -> None:
    check = next(i for i in repoedit_invariants() if i.name == "done_only_when_green")
    assert "some test files" in check.check(RepoEditState(status="DONE", last_outcome="passed", last_selected=True), [])
    assert check.check(RepoEditState(status="DONE", last_outcome="passed"), []) is None


def test_a_recording_made_before_these_features_replays_with_the_features_it_ran_with() -> None:
    old = CompareConfig.from_dict({"model": "m", "arms": ["machine_plus", "machine_plus_no_code_plan", "prompt_whole"]})
    assert old.arms == ["machine", "machine_without_code_plan", "prompt_whole"]
    assert old.arm("machine").features == BEFORE_REPOSITORIES < ALL
    assert old.arm("machine_without_code_plan").features == BEFORE_REPOSITORIES - {"code_plan"}
    assert CompareConfig.from_dict({"model": "m", "arms": ["machine"]}).arm("machine").features == ALL
    assert "as_recorded" not in old.to_dict()


def test_a_repeat_is_only_a_repeat_of_an_answer_for_the_same_file(package: Path) -> None:
    run = RepoEditRun(package, "r", ScriptedPlanner([], []), features=ALL)
    try:
        run.machine.record(Proposed(state="EDIT_FILE", planner="p", file="a.py", raw="X"))
        run.machine.record(Proposed(state="EDIT_FILE", planner="p", file="b.py", raw="X"))
        assert run._repeats("b.py", "X") == 0
        run.machine.record(Proposed(state="EDIT_FILE", planner="p", file="a.py", raw=" X\n"))
        assert run._repeats("a.py", "X") == 1
    finally:
        run.workspace.close()


@pytest.mark.slow
def test_the_excerpt_prompt_shows_what_the_failure_names_and_applies_the_answer_as_given(package: Path) -> None:
    backend = ScriptedBackend([TOTAL_FIXED])
    task = RepoTask(id="t", project="pkg-project", split="dev", kind="mutation", requirement="total is off by one",
                    failing=("tests/test_core.py::test_total",),
                    oracle=(FileFix(path="pkg/core.py", why="w", edits=(SearchReplace(search="x", replace="y"),)),))
    inputs = ArmInputs(task, package, measure_baseline(package), BudgetedBackend(backend, 6),
                       limits=Limits(view_lines=30, excerpt_lines=10))
    end = arm("prompt_excerpt").run(inputs)
    try:
        [request] = backend.requests
        assert "def total" in request.prompt and "def step_7" not in request.prompt and "not shown" in request.prompt
        assert end.test_runs == 0 and end.edits == 1
        assert "return sum(clean(xs))\n" in (end.workspace.root / "pkg/core.py").read_text(encoding="utf-8")
    finally:
        end.workspace.keep = False
        end.workspace.close()
