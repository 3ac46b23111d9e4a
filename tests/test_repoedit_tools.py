"""The tool declarations and the edit guards, called directly (as a free loop would call them).

Inside the machine an edit always targets the planned file in front of the queue, so the path guards
(outside_repo, test_file, not_planned) are exercised here, where any path can be asked for.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from labkit.repoedit.edits import EDIT_GUARDS, Refusal, changed_lines, outside_repo
from labkit.repoedit.index import index_project, is_test_path
from labkit.repoedit.tools import TOOLS, EditResult, FileText, RollbackResult, ToolContext, call_tool
from labkit.repoedit.workspace import Workspace, tree_hashes


@pytest.fixture
def ctx(tmp_path: Path):
    project = tmp_path / "proj"
    (project / "tests").mkdir(parents=True)
    (project / "m.py").write_text("def f():\n    return 1\n")
    (project / "other.py").write_text("Y = 2\n")
    (project / "tests" / "test_m.py").write_text("from m import f\n\ndef test_f():\n    assert f() == 2\n")
    (tmp_path / "outside.py").write_text("SECRET = 1\n")
    (project / "escape.py").symlink_to(tmp_path / "outside.py")
    with Workspace(project) as ws:
        yield ToolContext(ws, index_project(ws.root), ws.digest(), planned=frozenset({"m.py", "escape.py"}),
                          diff_limit=4)


def edit(path: str, search: str = "return 1", replace: str = "return 2", **extra) -> dict:
    return {"path": path, "edits": [{"search": search, "replace": replace}], **extra}


@pytest.mark.parametrize(("args", "code"), [
    (edit("../outside.py"), "outside_repo"),
    (edit("/etc/hostname"), "outside_repo"),
    (edit("escape.py"), "outside_repo"),  # planned, but a symlink out of the project
    (edit("tests/test_m.py", "assert f() == 2", "assert f() == 1"), "test_file"),
    (edit("other.py", "Y = 2", "Y = 3"), "not_planned"),
    (edit("m.py", "return 3"), "does_not_apply"),
    (edit("m.py", "return 1", "return 1"), "no_change"),
    (edit("m.py", "return 1", "return (1"), "syntax_error"),
    (edit("m.py", "return 1", "return 2\n" + "    x = 1\n" * 5), "too_large"),
    ({"path": "m.py", "edits": []}, "bad_args"),
    ({"path": "m.py", "edits": [{"search": "return 1"}]}, "bad_args"),
])
def test_every_guard_refuses_with_its_code_and_writes_nothing(ctx, tmp_path, args, code):
    before = tree_hashes(ctx.root)
    result = call_tool("apply_edit", ctx, args)
    assert isinstance(result, Refusal) and result.code == code, result
    assert result.detail and result.hint
    assert tree_hashes(ctx.root) == before
    assert (tmp_path / "outside.py").read_text() == "SECRET = 1\n"


def test_a_good_edit_is_written_and_an_approved_large_edit_passes_the_size_guard(ctx):
    result = call_tool("apply_edit", ctx, edit("m.py"))
    assert isinstance(result, EditResult) and result.changed_lines == 2 and "+    return 2" in result.diff
    assert (ctx.root / "m.py").read_text() == "def f():\n    return 2\n"
    big = edit("m.py", "return 2", "return 3\n" + "    x = 1\n" * 5, approved=True)
    assert isinstance(call_tool("apply_edit", ctx, big), EditResult)


def test_rollback_restores_the_baseline_byte_for_byte(ctx):
    before = tree_hashes(ctx.root)
    call_tool("apply_edit", ctx, edit("m.py"))
    (ctx.root / "new.py").write_text("junk\n")
    result = call_tool("rollback", ctx, {})
    assert isinstance(result, RollbackResult) and result.restored and result.digest_before != result.digest_after
    assert tree_hashes(ctx.root) == before


def test_read_file_refuses_paths_out_of_the_project(ctx):
    assert isinstance(call_tool("read_file", ctx, {"path": "m.py"}), FileText)
    assert call_tool("read_file", ctx, {"path": "../outside.py"}).code == "outside_repo"
    assert call_tool("read_file", ctx, {"path": "escape.py"}).code == "outside_repo"
    assert call_tool("read_file", ctx, {"path": "gone.py"}).code == "missing_file"


def test_each_tool_is_one_declaration_the_guards_included():
    assert {name: tool.writes for name, tool in TOOLS.items()} == {
        "read_file": False, "apply_edit": True, "run_tests": False, "rollback": True}
    assert {g.code for g in EDIT_GUARDS} <= set(TOOLS["apply_edit"].refusals)
    assert all("bad_args" in tool.refusals for tool in TOOLS.values())


def test_the_index_leaves_out_a_symlink_out_of_the_project(ctx):
    assert ctx.index.source_files == ("m.py", "other.py")
    assert ctx.index.test_files == ("tests/test_m.py",)


def test_path_helpers():
    assert outside_repo(Path("/tmp"), "a/../../b.py") and outside_repo(Path("/tmp"), "C:/x.py")
    assert is_test_path("tests/util.py") and is_test_path("conftest.py") and is_test_path("pkg/x_test.py")
    assert not is_test_path("testing.py") and not is_test_path("src/contest.py")
    assert changed_lines("a\nb\n", "a\nc\n") == 2


def test_an_interpreter_without_pytest_is_a_clear_error(tmp_path):
    import subprocess
    import sys

    from labkit.core.errors import LabkitError

    bare = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
    project = tmp_path / "p"
    (project / "tests").mkdir(parents=True)
    (project / "tests" / "test_a.py").write_text("def test_a():\n    assert True\n")
    with Workspace(project, python=str(bare / "bin" / "python")) as ws, pytest.raises(LabkitError, match="no pytest"):
        ws.run_tests()


def test_test_output_does_not_depend_on_the_callers_environment(tmp_path, monkeypatch):
    """Test output goes into prompts: CI=true (pytest's untruncated assertions), options or colour asked for by
    the caller must not change it, or a replay on CI would not send the recorded prompts."""
    project = tmp_path / "proj"
    (project / "tests").mkdir(parents=True)
    (project / "m.py").write_text("def f():\n    return list(range(40))\n")
    (project / "tests" / "test_m.py").write_text(
        "from m import f\n\ndef test_f():\n    assert f() == list(range(1, 41))\n")
    for name in ("CI", "BUILD_NUMBER", "PYTEST_ADDOPTS", "FORCE_COLOR", "COLUMNS"):
        monkeypatch.delenv(name, raising=False)
    with Workspace(project) as ws:
        plain = ws.run_tests(timeout=60).output
        monkeypatch.setenv("CI", "true")
        monkeypatch.setenv("PYTEST_ADDOPTS", "-vv")
        monkeypatch.setenv("FORCE_COLOR", "1")
        monkeypatch.setenv("COLUMNS", "200")
        assert ws.run_tests(timeout=60).output == plain
    assert "5, ...]" in plain  # pytest's truncated comparison: the output CI=true would have written in full


def test_a_failing_test_s_id_names_its_file_though_its_class_is_named_test_something(tmp_path):
    project = tmp_path / "proj"
    (project / "tests").mkdir(parents=True)
    (project / "tests" / "test_apis.py").write_text(
        "import unittest\n\n\nclass testAtom(unittest.TestCase):\n    def test_one(self):\n"
        "        self.assertEqual(1, 2)\n\n\ndef test_plain():\n    assert True\n")
    with Workspace(project) as ws:
        run = ws.run_tests(timeout=60)
    assert run.failed == ("tests/test_apis.py::testAtom::test_one",)
    assert run.passed == ("tests/test_apis.py::test_plain",)


@pytest.mark.parametrize("where", ["parent", "at"])
def test_a_copy_made_under_a_relative_folder_runs_its_tests(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                             where: str) -> None:
    """`labkit compare code --out data/...` puts the copies under a relative folder; pytest, run inside the copy,
    must still find it (a relative --rootdir made every run an error, and the oracle fixed nothing)."""
    project = tmp_path / "proj"
    project.mkdir()
    (project / "test_m.py").write_text("def test_f():\n    assert True\n")
    monkeypatch.chdir(tmp_path)
    Path("rel").mkdir()
    with Workspace(project, **{where: "rel/copy" if where == "at" else "rel"}) as ws:
        run = ws.run_tests(timeout=60)
    assert (run.outcome, run.passed) == ("passed", ("test_m.py::test_f",))
