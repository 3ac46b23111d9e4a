"""The machine's features, each on its own: definitions by name, tolerant matching, code plans, closed sets,
refused skips of a blamed file, retries that differ, and the whole-file baseline's parser.

The pure parts are tested on strings; the machine's parts on real copies of real projects with a
scripted planner (each test stages exactly the answer it is about), and the model planner's
prompts and schemas with a scripted backend.
"""

from __future__ import annotations

import json

import pytest

from labkit.core.errors import LabkitError
from labkit.llm.fake import ScriptedBackend
from labkit.repoedit.arms import ABLATION_ARMS, ARMS, Arm, arm
from labkit.repoedit.definitions import blamed, definition_edit, definitions
from labkit.repoedit.edits import tolerant_replace
from labkit.repoedit.events import EditApplied, EditSkipped, PlanAccepted, PlanExtended, ProposalRefused, Proposed
from labkit.repoedit.features import ALL, CODE_PLAN, FeatureSet, checked
from labkit.repoedit.formats import FORMATS, DefinitionAnswer, as_definitions, parse_definitions, parse_files
from labkit.repoedit.index import index_project, summary_with_uses
from labkit.repoedit.machine import RepoEditRun
from labkit.repoedit.planners import EditView, ModelPlanner, PlanView, ScriptedPlanner
from labkit.repoedit.tasks import load_tasks, project_dir

TASKS = load_tasks()
SOURCE = '''"""A module."""

LIMIT = 3


class Box:
    def __init__(self) -> None:
        self.items = []

    @property
    def size(self) -> int:
        return len(self.items)


def count_words(text):
    return len(text.split(" "))
'''


# ---------------------------------------------------------------- definitions
def test_definitions_are_found_by_name_with_their_decorators_and_methods() -> None:
    found = {d.name: (d.first, d.last, d.indent) for d in definitions(SOURCE)}
    assert list(found) == ["LIMIT", "Box", "Box.__init__", "Box.size", "count_words"]  # no imports: none listed
    assert found["Box.size"] == (10, 12, 4)  # from the decorator's line
    assert definitions("def broken(:\n") == ()


def test_a_method_written_at_column_zero_is_re_based_into_its_class() -> None:
    edit, why, renamed = definition_edit(SOURCE, "Box.size", "@property\ndef size(self) -> int:\n    return 7\n")
    assert why == "" and renamed == "" and edit is not None
    after = SOURCE.replace(edit.search, edit.replace)
    assert "    @property\n    def size(self) -> int:\n        return 7\n" in after
    compile(after, "m.py", "exec")


def test_a_definition_edit_is_refused_when_it_names_nothing_real_or_holds_more_than_one_thing() -> None:
    assert "not a definition" in definition_edit(SOURCE, "nope", "def nope(): pass")[1]
    assert "exactly one definition" in definition_edit(SOURCE, "count_words", "def a(): pass\ndef b(): pass")[1]
    assert "does not parse" in definition_edit(SOURCE, "count_words", "def count_words(:")[1]
    assert definition_edit(SOURCE, "count_words", "def words(text):\n    return 1")[2] == "count_words renamed to words"


def test_the_traceback_blames_the_deepest_frame_and_an_assertion_blames_the_called_name() -> None:
    traceback = ("tests/test_m.py:4: in test_size\n    assert b.size == 0\n"
                 "m.py:12: in size\n    return len(...)\nE   TypeError")
    assert blamed("m.py", SOURCE, traceback)[0] == "Box.size"
    assertion = "    def test_many():\n>       assert count_words('a  b') == 2\nE       assert 3 == 2"
    assert blamed("m.py", SOURCE, assertion) == ("count_words",)
    assert blamed("m.py", SOURCE, "E   ImportError: nothing of the file") == ()


def test_the_oracle_s_fix_becomes_whole_definitions_paired_by_position() -> None:
    task = TASKS["wordcount-whitespace"]
    text = (project_dir(task) / "words.py").read_text(encoding="utf-8")
    [changed] = as_definitions(text, task.oracle[0].edits)
    assert changed["name"] == "count_words" and "text.split()" in changed["code"]


# ---------------------------------------------------------------- tolerant matching
def test_tolerant_matching_reads_quotes_alike_and_re_bases_indentation_saying_so() -> None:
    text = 'class A:\n    def f(self):\n        return "x"\n'
    new, notes = tolerant_replace(text, "def f(self):\n    return 'x'", "def f(self):\n    return 'y'") or ("", ())
    assert new == "class A:\n    def f(self):\n        return 'y'\n"
    assert any("quote" in n for n in notes) and any("+4" in n for n in notes)


def test_tolerant_matching_refuses_an_ambiguous_or_absent_block() -> None:
    text = "x = 'a'\ny = 1\nx = \"a\"\n"
    assert tolerant_replace(text, 'x = "a"', "x = 'b'") is None  # two blocks match
    assert tolerant_replace(text, "z = 2", "z = 3") is None
    assert tolerant_replace(text, "\n\n", "x") is None  # a blank search matches nothing


# ---------------------------------------------------------------- the features as declarations
def test_an_unknown_feature_is_refused_with_the_known_ones_named() -> None:
    assert checked(["code_plan"]) == {"code_plan"}
    with pytest.raises(LabkitError, match="unknown code machine feature") as raised:
        checked(["telepathy"])
    assert "code_plan" in raised.value.hint and "sampled_repair" in raised.value.hint


def test_a_misspelt_feature_is_an_error_at_the_check_not_off(tmp_path) -> None:
    features = FeatureSet.of(["code_plan"])
    assert features.on(CODE_PLAN) and features.on("code_plan") and not features.on("closed_plan")
    with pytest.raises(LabkitError, match=r"unknown code machine feature\(s\) \['code_plna'\]") as raised:
        features.on("code_plna")
    assert "closed_plan" in raised.value.hint
    with pytest.raises(LabkitError, match="code_plna"):
        RepoEditRun(project_dir(TASKS["wordcount-whitespace"]), "req", ScriptedPlanner([], []), features=["code_plna"])


def test_a_misspelt_feature_or_format_is_an_error_when_an_arm_is_built() -> None:
    with pytest.raises(LabkitError, match="closd_plan") as raised:
        Arm("typo", "typo", "an arm with a misspelt feature", features=frozenset({"closd_plan"}))
    assert "closed_plan" in raised.value.hint
    with pytest.raises(LabkitError, match="unknown edit format 'json_patch'") as raised:
        Arm("typo", "typo", "an arm with an unknown format", edit_format="json_patch")
    assert "search_replace" in raised.value.hint and "definitions" in raised.value.hint
    with pytest.raises(LabkitError, match="unknown arm 'machine_plsu'"):
        arm("machine_plsu")


def test_an_arm_s_declaration_chooses_its_edit_format() -> None:
    assert ARMS["machine"].edit_format == "definitions"  # definition_edit selects it
    assert ARMS["machine_without_definition_edit"].edit_format == "search_replace"
    assert ARMS["machine_bare"].edit_format == "search_replace"
    assert (ARMS["prompt_only"].edit_format, ARMS["prompt_whole"].edit_format) == ("all_changes", "whole_files")
    assert ARMS["machine"].head(6) == FORMATS["definitions"].head
    assert set(ABLATION_ARMS) == {f"machine_without_{name}" for name in ALL}


def test_a_misspelt_feature_check_in_the_machine_is_an_error_not_off() -> None:
    task = TASKS["wordcount-whitespace"]
    run = RepoEditRun(project_dir(task), task.requirement, ScriptedPlanner([], []), features={"code_plan"})
    try:
        assert run.on("code_plan") and not run.on("closed_plan")
        with pytest.raises(LabkitError, match=r"unknown code machine feature.*code_pln(.|\n)*code_plan, closed_plan"):
            run.on("code_pln")
    finally:
        run.workspace.close()
    with pytest.raises(LabkitError, match="unknown code machine feature"):
        RepoEditRun(project_dir(task), task.requirement, ScriptedPlanner([], []), features={"code_pln"})


def test_an_arm_with_an_unknown_feature_is_refused_when_it_is_built() -> None:
    from labkit.repoedit.arms import Arm

    with pytest.raises(LabkitError, match=r"unknown code machine feature.*'telepathy'"):
        Arm("machine_telepathic", "machine, telepathic", "no such arm", features=frozenset({"code_plan", "telepathy"}))


# ---------------------------------------------------------------- the model planner's contracts
def test_a_closed_plan_and_definition_names_reach_the_model_as_enums_with_the_worked_examples() -> None:
    backend = ScriptedBackend(['{"steps": [{"file": "a.py", "why": "x"}]}', '{"status": "skip"}'])
    planner = ModelPlanner(backend)
    planner.propose_plan(PlanView("req", "a.py: f()\nb.py: g()", (), menu=("a.py", "b.py"), example=True))
    planner.propose_edit(EditView("req", "a.py", "why", "def f(): pass", format="definitions", definitions=("f",),
                                  blamed=("f",), temperature=0.7, seed=4))
    plan, edit = backend.requests
    assert plan.schema["$defs"]["PlanStep"]["properties"]["file"] == {"type": "string", "enum": ["a.py", "b.py"]}
    assert "Example, on another project" in plan.prompt and "cli.py: main()" in plan.prompt
    assert edit.schema is None  # fenced code; the name is checked against the list (formats.parse_definitions)
    assert "The failure points at: f" in edit.prompt and "DEFINITION: add\n```python" in edit.prompt
    assert (edit.temperature, edit.seed) == (0.7, 4)


def test_without_features_the_prompts_are_the_first_recorded_ones() -> None:
    backend = ScriptedBackend(['{"steps": []}', '{"status": "skip"}'])
    planner = ModelPlanner(backend)
    planner.propose_plan(PlanView("req", "a.py: f()", ()))
    planner.propose_edit(EditView("req", "a.py", "why", "def f(): pass"))
    plan, edit = backend.requests
    assert "Example" not in plan.prompt and "enum" not in json.dumps(plan.schema)
    assert '"search"' in edit.prompt and edit.temperature == 0.0


# ---------------------------------------------------------------- the machine with features
pytestmark_slow = pytest.mark.slow


def _run(task_id: str, plans: list[str], edits: list[str], features: frozenset[str] = ALL) -> tuple[
        RepoEditRun, ScriptedPlanner]:
    task = TASKS[task_id]
    planner = ScriptedPlanner(plans, edits)
    run = RepoEditRun(project_dir(task), task.requirement, planner, task_id=task.id, features=features)
    run.run()
    return run, planner


@pytestmark_slow
def test_a_one_file_project_is_planned_by_code_and_its_first_edit_sees_the_failing_output() -> None:
    fixed = "DEFINITION: count_words\n```python\ndef count_words(text: str) -> int:\n    return len(text.split())\n```"
    run, planner = _run("wordcount-whitespace", [], [fixed])
    assert run.state.status == "DONE"
    plan = next(e for e in run.events if isinstance(e, PlanAccepted))
    assert plan.by == "code" and plan.steps == [{"file": "words.py", "why": "the only source file"}]
    [view] = planner.views
    assert isinstance(view, EditView) and "test_many_spaces" in view.failure and view.first
    assert view.definitions[0] == "count_words" and view.blamed[0] == "count_words"
    applied = next(e for e in run.events if isinstance(e, EditApplied))
    assert applied.definitions == ["count_words"]


@pytestmark_slow
def test_a_skip_of_the_blamed_file_is_refused_and_the_retry_is_sampled_with_its_previous_answer() -> None:
    skip = "SKIP: looks fine"  # the same answer each time: no_repeat, off here, would refuse the second as repeated
    run, planner = _run("wordcount-whitespace", [], [skip, skip, skip], ALL - {"no_repeat"})
    refused = [e for e in run.events if isinstance(e, ProposalRefused)]
    assert [e.code for e in refused] == ["blamed_skip"] * 3 and run.state.status == "FAILED"
    asked = [e for e in run.events if isinstance(e, Proposed)]
    assert asked[0].temperature == 0.0 and all(e.temperature > 0 for e in asked[1:])
    assert len({e.seed for e in asked[1:]}) == 2  # each retry its own recorded seed
    second = planner.views[1]
    assert isinstance(second, EditView) and "looks fine" in second.previous and "blamed_skip" in second.refused
    assert not second.offer_skip  # the blamed file is not offered a skip at all


@pytestmark_slow
def test_without_blamed_skip_the_same_skip_is_accepted() -> None:
    skip = "SKIP: looks fine"
    run, _ = _run("wordcount-whitespace", [], [skip, skip, skip], ALL - {"blamed_skip"})
    assert any(isinstance(e, EditSkipped) for e in run.events)
    assert not [e for e in run.events if isinstance(e, ProposalRefused) and e.code == "blamed_skip"]


@pytestmark_slow
def test_a_tolerant_match_is_applied_and_recorded_as_such() -> None:
    task = TASKS["slug-trim-dashes"]
    [fix] = task.oracle
    quoted = [{"search": e.search.replace('"', "'"), "replace": e.replace} for e in fix.edits]
    assert any(q["search"] != e.search for q, e in zip(quoted, fix.edits, strict=True))
    features = ALL - {"definition_edit"}
    plan = json.dumps({"steps": [{"file": fix.path, "why": fix.why}]})
    run, _ = _run(task.id, [plan], [json.dumps({"status": "ok", "edits": quoted})], features)
    applied = next(e for e in run.events if isinstance(e, EditApplied))
    assert any("quote" in n for n in applied.normalised)
    assert run.state.status == "DONE"


def test_the_definition_answer_names_only_the_file_s_definitions() -> None:
    names = ("imports", "count_words")
    answer, refusal = parse_definitions("DEFINITION: count_words\n```python\ndef count_words(t): return 1\n```", names)
    assert refusal is None and answer is not None
    assert answer.changes == (("count_words", "def count_words(t): return 1\n"),)
    assert parse_definitions("DEFINITION: other\n```python\nx = 1\n```", names)[1].code == "unknown_definition"
    assert parse_definitions("here is my fix: def f(): ...", names)[1].code == "no_definition"
    assert parse_definitions("SKIP: nothing to do", names)[0] == DefinitionAnswer("skip", reason="nothing to do")


def test_a_class_written_out_with_its_methods_again_counts_once() -> None:
    block = "DEFINITION: {}\n```python\n{}\n```\n"
    raw = (block.format("Box", "class Box:\n    pass") + block.format("Box.size", "def size(self): ...")
           + block.format("Box", "class Box: ...") + "DEFINITION: Box.__init__\n```python\ndef __init__(self")
    answer, _ = parse_definitions(raw, ("Box", "Box.size", "Box.__init__"))
    assert answer is not None and answer.changes == (("Box", "class Box:\n    pass\n"),)


def test_the_import_lines_are_one_definition_so_a_rename_can_change_them() -> None:
    text = '"""Doc."""\n\nfrom greet import hello\nimport os\n\n\ndef f():\n    return hello()\n'
    assert definitions(text)[0].name == "imports"
    edit, why, _ = definition_edit(text, "imports", "from greet import greeting\nimport os")
    assert why == "" and edit is not None and edit.search == "from greet import hello\nimport os\n"


def test_the_whole_file_answer_is_read_block_by_block() -> None:
    answer = "FILE: a.py\n```python\nx = 1\n```\nsome words\nFILE: `b/c.py`\n```\ny = 2\n```"
    assert parse_files(answer) == {"a.py": "x = 1\n", "b/c.py": "y = 2\n"}
    assert parse_files("no files here") == {}


def test_the_plan_summary_says_which_file_uses_which_definition() -> None:
    root = project_dir(TASKS["inventory-rename"])
    summary = summary_with_uses(root, index_project(root))
    assert "report.py: report(); uses Inventory, Inventory.get_qty(), Inventory.names()" in summary.splitlines()
    assert "uses" not in summary.splitlines()[0]  # inventory.py uses nothing of report.py


def test_a_module_docstring_copied_along_with_the_definition_is_dropped() -> None:
    code = '"""A module."""\n\n\ndef count_words(text):\n    return len(text.split())\n'
    edit, why, _ = definition_edit(SOURCE, "count_words", code)
    assert why == "" and edit is not None and edit.replace == "def count_words(text):\n    return len(text.split())\n"


@pytestmark_slow
def test_a_caller_the_plan_missed_is_added_from_the_traceback_and_fixed() -> None:
    task = TASKS["inventory-rename"]
    text = (project_dir(task) / "inventory.py").read_text(encoding="utf-8")
    renamed = next(d for d in definitions(text) if d.name == "Inventory.get_qty")
    method = "".join(text.splitlines(keepends=True)[renamed.first - 1:renamed.last]).replace("get_qty", "quantity_of")
    report = (project_dir(task) / "report.py").read_text(encoding="utf-8").replace("get_qty", "quantity_of")
    report_def = next(d for d in definitions(report) if d.name == "report")
    plan = json.dumps({"steps": [{"file": "inventory.py", "why": "the method is defined here"}]})
    answers = [f"DEFINITION: Inventory.get_qty\n```python\n{method}```",
               "DEFINITION: report\n```python\n" + "".join(report.splitlines(keepends=True)[
                   report_def.first - 1:report_def.last]) + "```"]
    run, _ = _run(task.id, [plan], answers)
    assert run.state.status == "DONE" and run.state.plan == ("inventory.py", "report.py")
    extended = next(e for e in run.events if isinstance(e, PlanExtended))
    assert extended.file == "report.py"
    run, _ = _run(task.id, [plan], answers[:1], ALL - {"follow_traceback"})
    assert run.state.status == "FAILED" and not any(isinstance(e, PlanExtended) for e in run.events)


def test_a_whole_file_written_under_one_definition_keeps_only_that_definition() -> None:
    code = '"""A module."""\n\nimport re\n\n\ndef count_words(text):\n    return len(re.split(r"\\s+", text))\n'
    edit, why, _ = definition_edit(SOURCE, "count_words", code)
    assert why == "" and edit is not None and edit.replace.startswith("def count_words(text):")
