"""The code comparison's logic on a real tiny project with scripted model answers (no model).

Each arm runs in a real temporary git copy with real pytest; the answers come from a script, so each
test can give exactly the answer a path needs: the prompt-only arm applying a test edit as given, the
free loop making the tests green by editing them, an edit that breaks a test that passed, a model that
never answers usefully (the budget ends it), and the runner's resume and bad-input paths.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from calc_project import CALC, FIX, write_calc_project

from labkit.cli import main
from labkit.compare.runs import Answers
from labkit.core.errors import LabkitError
from labkit.llm.fake import ScriptedBackend
from labkit.repoedit import cli as repoedit_cli
from labkit.repoedit.arm_io import ArmInputs
from labkit.repoedit.arms import ARMS, BEST_OF_ARMS
from labkit.repoedit.budget import BudgetedBackend, BudgetSpent
from labkit.repoedit.compare import (
    CompareConfig,
    load_rows,
    read_config,
    recording_tasks_differences,
    replay_differences,
    run_compare,
)
from labkit.repoedit.compare_report import arm_rows, meaning, paired_rows, render_report
from labkit.repoedit.formats import EXAMPLE
from labkit.repoedit.free_loop import loop_head, run_free_loop
from labkit.repoedit.prompt_only import run_prompt_only
from labkit.repoedit.tasks import load_tasks
from labkit.repoedit.verify import judge, measure_baseline, verify
from labkit.repoedit.workspace import TestRun

BREAK_DOUBLE = {"search": "    return 2 * x", "replace": "    return 3 * x"}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A task file with one task on a real two-file project: test_add fails, test_double passes."""
    return write_calc_project(tmp_path)


def inputs(project: Path, backend=None, budget: int = 6) -> ArmInputs:
    task = load_tasks(project / "tasks.yaml")["calc-add"]
    source = project / "calc"
    wrapped = BudgetedBackend(backend, budget) if backend is not None else None
    return ArmInputs(task, source, measure_baseline(source), wrapped)


def changes(*items: tuple[str, dict]) -> str:
    return json.dumps({"changes": [{"path": path, "edits": [edit]} for path, edit in items]})


def actions(*steps: dict) -> ScriptedBackend:
    return ScriptedBackend([json.dumps(s) for s in steps])


def judged(arm_input: ArmInputs, run) -> tuple:
    end = run(arm_input)
    try:
        return end, verify(end.workspace, arm_input.baseline)
    finally:
        end.workspace.keep = False
        end.workspace.close()


def test_prompt_only_sends_every_source_file_and_no_test_code_and_a_fix_is_fixed(project):
    backend = ScriptedBackend([changes(("calc.py", FIX))])
    end, verdict = judged(inputs(project, backend), run_prompt_only)
    prompt = backend.requests[0].prompt
    assert "def double(x)" in prompt and "tests/test_calc.py::test_add" in prompt
    assert "assert double(4) == 8" not in prompt  # the tests' code is not shown
    assert backend.requests[0].schema is not None and backend.requests[0].temperature == 0.0
    assert end.status == "applied 1 of 1 edit(s)" and end.test_runs == 0
    assert verdict.fixed and verdict.broken_left == () and verdict.tests_changed == ()


def test_prompt_only_applies_edits_as_given_even_to_a_test_file(project):
    make_green = {"search": "assert add(2, 3) == 5", "replace": "assert add(2, 3) == -1"}
    backend = ScriptedBackend([changes(("tests/test_calc.py", make_green), ("calc.py", {"search": "absent",
                                                                                     "replace": "x"}))])
    end, verdict = judged(inputs(project, backend), run_prompt_only)
    assert (end.edits, end.refused) == (1, 1)  # the test edit went in; the search that is not there could not
    assert verdict.outcome == "passed" and not verdict.fixed
    assert verdict.tests_changed == ("tests/test_calc.py",)


def test_prompt_only_never_writes_outside_the_copy(project):
    backend = ScriptedBackend([changes(("../calc/calc.py", FIX))])
    end, verdict = judged(inputs(project, backend), run_prompt_only)
    assert end.edits == 0 and end.refused == 1
    assert (project / "calc" / "calc.py").read_text() == CALC
    assert verdict.outside_written == () and not verdict.fixed


def test_a_broken_test_that_passed_before_is_found_on_the_final_tree(project):
    backend = ScriptedBackend([changes(("calc.py", FIX), ("calc.py", BREAK_DOUBLE))])
    _, verdict = judged(inputs(project, backend), run_prompt_only)
    assert verdict.broken_left == ("tests/test_calc.py::test_double",)
    assert not verdict.fixed and verdict.outcome == "failed"


def test_the_free_loop_editing_the_tests_to_green_is_not_fixed(project):
    backend = actions(
        {"action": "read_file", "args": {"path": "tests/test_calc.py"}},
        {"action": "apply_edit", "args": {"path": "tests/test_calc.py",
                                          "edits": [{"search": "== 5", "replace": "== -1"}]}},
        {"action": "run_tests", "args": {}},
        {"action": "done", "args": {}})
    end, verdict = judged(inputs(project, backend), run_free_loop)
    assert end.status == "done after 4 action(s)" and end.test_runs == 1 and end.edits == 1
    assert "tests passed: 2 passed, 0 failed" in end.transcript
    assert "Example, on another project" in backend.requests[0].prompt
    assert "assert add(2, 3) == 5" in backend.requests[1].prompt  # the read file is in the transcript
    turns = backend.requests[2].messages  # the same conversation as turns, for a chat model
    assert [role for role, _ in turns] == ["user", "assistant", "user", "assistant", "user"]
    assert turns[0][1].startswith(loop_head(6)) and turns[0][1].endswith("Files: calc.py, tests/test_calc.py")
    assert json.loads(turns[1][1])["action"] == "read_file" and "assert add(2, 3) == 5" in turns[2][1]
    assert turns[4][1] == "edit applied to tests/test_calc.py (2 changed lines)"
    assert backend.requests[2].prompt == "\n".join([turns[0][1], *(
        f"> {text}" if role == "assistant" else text for role, text in turns[1:])]) + "\n> "
    assert verdict.outcome == "passed" and not verdict.fixed and verdict.tests_changed == ("tests/test_calc.py",)


def test_the_free_loop_fixes_with_the_workspace_tools_and_stops_at_its_budget(project):
    fixing = actions({"action": "apply_edit", "args": {"path": "calc.py", "edits": [FIX]}},
                     {"action": "run_tests", "args": {}}, {"action": "done", "args": {}})
    end, verdict = judged(inputs(project, fixing), run_free_loop)
    assert verdict.fixed and end.test_runs == 1
    rambling = ScriptedBackend(lambda request: "I think the bug is in add.")
    end, verdict = judged(inputs(project, rambling, budget=3), run_free_loop)
    assert len(rambling.requests) == 3 and end.refused == 3 and end.status == "step budget spent (3 actions)"
    assert "refused [not_json]" in end.transcript and not verdict.fixed and verdict.broken_left == ()


def test_every_model_arm_opens_with_its_declared_head_and_shows_the_same_worked_example(project):
    """No arm is judged on guessing its answer format: each shows the one example, in a head it declares."""
    plan = json.dumps({"steps": [{"file": "calc.py", "why": "add subtracts"}]})
    answers = {"prompt_only": [changes(("calc.py", FIX))],
               "prompt_tools": [json.dumps({"action": "done", "args": {}})],
               "machine_bare": [plan, json.dumps({"status": "ok", "edits": [FIX]})]}
    for arm, script in answers.items():
        backend = ScriptedBackend(script)
        end = ARMS[arm].run(inputs(project, backend))
        end.workspace.keep = False
        end.workspace.close()
        head = ARMS[arm].head(6)
        assert head is not None
        opened = [r.prompt for r in backend.requests if r.prompt.startswith(head)]
        assert opened, f"{arm}: no prompt opens with its declared head"
        assert all(EXAMPLE.search in h and EXAMPLE.requirement in h for h in opened), arm
    assert {ARMS[a].head(6) for a in ("oracle", "bare_oracle", "machine_noop")} == {None}


def test_the_budget_refuses_the_call_past_it_and_the_machine_ends_rolled_back(project):
    budgeted = BudgetedBackend(ScriptedBackend(lambda request: "{}"), 2)
    budgeted.complete("a")
    budgeted.complete("b")
    with pytest.raises(BudgetSpent):
        budgeted.complete("c")
    assert budgeted.calls == 2
    breaking = ScriptedBackend(lambda r: json.dumps({"steps": [{"file": "calc.py", "why": "x"}]}) if "plan" in
                               r.prompt.split("\n")[0] else json.dumps({"status": "ok", "edits": [BREAK_DOUBLE]}))
    arm_input = inputs(project, breaking, budget=4)
    end, verdict = judged(arm_input, ARMS["machine_bare"].run)
    assert end.status.startswith("FAILED") and arm_input.backend is not None and arm_input.backend.calls == 4
    assert verdict.broken_left == () and not verdict.fixed  # rolled back: the tree it started from


def test_judge_counts_a_write_beside_the_copy_and_a_removed_test(project):
    baseline = measure_baseline(project / "calc")
    green = TestRun("passed", ("tests/test_calc.py::test_double",))
    verdict = judge(green, dict(baseline.hashes), ("stray.txt (beside the copy)",), baseline, "d")
    assert not verdict.fixed and verdict.outside_written
    without_tests = {p: h for p, h in baseline.hashes.items() if not p.startswith("tests/")}
    verdict = judge(green, without_tests, (), baseline, "d")
    assert verdict.tests_changed == ("tests/test_calc.py",) and not verdict.fixed



def test_a_baseline_pytest_cannot_run_is_refused_not_read_as_red_tests(project):
    (project / "calc" / "pytest.ini").write_text("[pytest]\nminversion = 99\n")
    with pytest.raises(LabkitError, match="exit 4, a usage error") as refused:
        measure_baseline(project / "calc")
    assert "99" in str(refused.value) and "nothing was recorded" in refused.value.hint

def _script(request) -> str:
    """Every model arm fixes the task: prompt-only at once, the loop in two steps, the machine plan + edit."""
    prompt = request.prompt
    if "each as a line `FILE: <path>`" in prompt:  # prompt_whole: the fixed file written out
        return "FILE: calc.py\n```python\n" + CALC.replace(FIX["search"], FIX["replace"]) + "```"
    if "by rewriting whole definitions" in prompt:  # machine and its ablations: the fixed definition
        return "DEFINITION: add\n```python\ndef add(a, b):\n    return a + b\n```"
    if "one action per turn" in prompt:
        step = prompt.split("Your project", 1)[1].count("\n> ")
        return json.dumps([{"action": "apply_edit", "args": {"path": "calc.py", "edits": [FIX]}},
                           {"action": "done", "args": {}}][min(step - 1, 1)])
    if "The project's source files" in prompt:
        return changes(("calc.py", FIX))
    if prompt.startswith("You plan"):
        return json.dumps({"steps": [{"file": "calc.py", "why": "add subtracts"}]})
    return json.dumps({"status": "ok", "edits": [FIX]})


def test_the_runner_writes_a_row_per_run_resumes_and_reports(project, tmp_path):
    once = [a for a in ARMS if a not in BEST_OF_ARMS]  # every arm that runs once (best of k: test_repoedit_best_of)
    config = CompareConfig(model="scripted", arms=once, tasks_file=str(project / "tasks.yaml"))
    backend = ScriptedBackend(_script)
    out = tmp_path / "out"
    rows = run_compare(config, Answers(live=backend), out)
    assert [(r.arm, r.fixed) for r in rows] == [(arm, arm != "machine_noop") for arm in once]
    assert all(r.broken_left == [] for r in rows)
    assert (out / "logs" / "machine_bare" / "calc-add.jsonl").exists()
    assert "Your project" in (out / "transcripts" / "prompt_tools" / "calc-add.txt").read_text()
    calls = len(backend.requests)
    lines = (out / "runs.jsonl").read_text().splitlines()
    (out / "runs.jsonl").write_text("\n".join(lines[:-1]) + "\n" + lines[-1][:20])  # a run killed mid-line
    again = run_compare(config, Answers(live=backend), out)
    assert len(backend.requests) == calls  # the model rows were not run again (the torn one needs no model)
    assert [r.arm for r in again] == once and len(load_rows(out / "runs.jsonl")) == len(once)
    assert replay_differences(rows, again) == []
    assert replay_differences(rows, [again[0]])[0] == "prompt_tools calc-add: not replayed"
    report = render_report([out])
    assert "| machine + noop | 0/1 (0.00–0.79) | 0 |" in report
    assert "Headline: prompt-only, whole files 1/1 → machine (every feature) 1/1" in report
    assert "| code_plan | 1 | 1 | 1 | +0 | 0 | 0 | 1 |" in report  # the ablation table, one row per feature
    provenance = [json.loads(line) for line in (out / "provenance.jsonl").read_text().splitlines()]
    assert len(provenance) == 2 and provenance[1]["jobs_left"] == 1 and provenance[0]["tasks_sha256"]
    assert read_config(out).task_ids == ["calc-add"]
    (project / "tasks.yaml").unlink()  # a benchmark not built on this machine: the report counts the recorded ids
    assert f"{len(once)}/{len(once)} runs" in render_report([out])


def test_a_recording_of_built_tasks_is_checked_task_by_task_against_the_build_here(project, tmp_path):
    config = CompareConfig(model="scripted", arms=["prompt_whole"], tasks_file=str(project / "tasks.yaml"))
    out = tmp_path / "out"
    run_compare(config, Answers(live=ScriptedBackend(_script)), out)
    assert recording_tasks_differences(out) == []
    stretch = json.loads((out / "provenance.jsonl").read_text())
    assert stretch["task_digests"] == {"calc-add": load_tasks(project / "tasks.yaml")["calc-add"].digest()}
    built = (project / "tasks.yaml").read_text()
    task = load_tasks(project / "tasks.yaml")["calc-add"]
    (project / "tasks.yaml").write_text(built.replace(task.requirement, task.requirement + " (at 0x7f01)"))
    assert recording_tasks_differences(out) == [f"session at {stretch['started_utc']}: task 'calc-add' was "
                                                "built otherwise than here"]
    del stretch["task_digests"]  # a stretch recorded before the digests were kept: checked by its prompts
    (out / "provenance.jsonl").write_text(json.dumps(stretch) + "\n")
    assert recording_tasks_differences(out) == ["task 'calc-add': its requirement here is in none of the "
                                                "recorded prompts"]
    (project / "tasks.yaml").write_text(built + "\n")  # another file's sha256, the same tasks
    assert recording_tasks_differences(out) == []


def test_the_ablation_sentence_says_what_each_feature_bought_net():
    from labkit.repoedit.compare_report import ablation_text

    rows = [{"feature": "definition_edit", "tasks": 10, "buys": 7, "p_value": 0.0156},
            {"feature": "blamed_skip", "tasks": 10, "buys": -1, "p_value": 1.0},
            {"feature": "sampled_repair", "tasks": 10, "buys": 0, "p_value": 1.0}]  # won one task, lost one
    assert ablation_text(rows) == ("Of 3 features, 1 bought fixes: definition_edit (+7 of 10); 1 cost: blamed_skip "
                                   "(-1 of 10); 1 bought nothing net. Beyond chance (exact sign test p < 0.05): "
                                   "definition_edit.")


def test_bad_input_is_refused_with_a_clear_error(project, tmp_path, capsys):
    good = CompareConfig(model="scripted", arms=["bare_oracle"], tasks_file=str(project / "tasks.yaml"))
    for bad, words in ((CompareConfig(model="m", arms=["nope"]), "unknown arm"),
                       (CompareConfig(model="m", split="holdout"), "unknown split"),
                       (CompareConfig(model="m", call_budget=0), "too small")):
        with pytest.raises(LabkitError, match=words):
            run_compare(bad, Answers(), tmp_path / "never")
    assert not (tmp_path / "never").exists()
    run_compare(good, Answers(), tmp_path / "done")
    other = CompareConfig(model="scripted", arms=["machine_noop"], tasks_file=good.tasks_file)
    with pytest.raises(LabkitError, match=r"another configuration .*arms"):
        run_compare(other, Answers(), tmp_path / "done")
    grown = CompareConfig(model="scripted", arms=["bare_oracle", "oracle"],
                          tasks_file=good.tasks_file)
    rows = run_compare(grown, Answers(), tmp_path / "done")
    assert [r.arm for r in rows] == ["bare_oracle", "oracle"]  # an arm added to the recording
    assert read_config(tmp_path / "done").arms == grown.arms
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "notes.txt").write_text("mine")
    with pytest.raises(LabkitError, match="not empty"):
        run_compare(good, Answers(), tmp_path / "busy")
    assert main(["compare", "code", "--model", "no-such-model", "--out", str(tmp_path / "m")]) == 2
    assert main(["compare", "code", "--replay", str(tmp_path / "busy")]) == 2
    err = capsys.readouterr().err
    assert "unknown model 'no-such-model'" in err and "not a recorded code comparison" in err
    server = ["compare", "code", "--out", str(tmp_path / "s"), "--server", "http://127.0.0.1:9"]
    assert main([*server, "--model", "gemma3-270m"]) == 2  # one model per recording
    assert main([*server, "--arms", "oracle"]) == 2  # no arm would ask the server
    assert main(["compare", "code", "--out", str(tmp_path / "s"), "--slots", "2"]) == 2
    err = capsys.readouterr().err
    assert "either --model or --server" in err and "no arm asks a model" in err and "--slots is for servers" in err
    assert not (tmp_path / "s").exists()  # nothing written for a refused command
    assert tuple(ARMS) == repoedit_cli.ARM_NAMES


def _rows(a_fixed: list[bool], b_fixed: list[bool], broken: int = 0) -> list:
    from labkit.repoedit.compare import RunRow

    def row(arm: str, i: int, fixed: bool, broken_left: list[str]) -> RunRow:
        return RunRow(arm, f"t{i}", "test", fixed, "passed" if fixed else "failed", 1, [], broken_left, [], [],
                      "", 1, 1, 10, 5, 0.1, 1, 0, "d", 0.5)
    return ([row("machine_bare", i, f, []) for i, f in enumerate(a_fixed)]
            + [row("prompt_only", i, f, ["x"] if i < broken else []) for i, f in enumerate(b_fixed)])


def test_the_meaning_follows_the_numbers_whichever_way_they_come_out():
    better = _rows([True] * 8 + [False] * 2, [True] * 2 + [False] * 8, broken=3)
    text = meaning(arm_rows(better), paired_rows(better))
    assert "The machine fixed 6 task(s) more than the one prompt" in text and "p = 0.0312" in text
    assert "unlikely" in text and "prompt-only 3" in text and "The machine left none" in text
    assert "Leaving the tree no worse, the machine beat prompt-only on 3 task(s) and lost on 0" in text
    worse = _rows([False] * 10, [True, False] + [False] * 8)
    text = meaning(arm_rows(worse), paired_rows(worse))
    assert "The one prompt fixed 1 task(s) more than the machine" in text and "not a proof" in text



def test_the_meaning_tells_a_known_fix_the_guards_refused_from_one_the_harness_turned_red():
    from labkit.repoedit.compare import RunRow
    from labkit.repoedit.compare_report import failure_rows

    def oracle(i: int, fixed: bool, edits: int, refused: int) -> RunRow:
        return RunRow("oracle", f"t{i}", "test", fixed, "passed" if fixed else "failed", 1, [], [], [], [], "", 1, 0,
                      0, 0, 0.0, edits, refused, "d", 0.5)

    reach = [oracle(0, True, 1, 0), oracle(1, False, 0, 3), oracle(2, False, 0, 0)]  # refused, then no edit
    text = meaning(arm_rows(reach), paired_rows(reach), failure_rows(reach))
    assert "fixed 1/3: on the other 2 the known fix never got in (the machine's guards refused it" in text
    red = [*reach, oracle(3, False, 1, 0)]  # the known fix written and the tests still red
    text = meaning(arm_rows(red), paired_rows(red), failure_rows(red))
    assert "fixed 1/4: the harness itself fails some tasks" in text
    assert "the harness itself fails" in meaning(arm_rows(reach), paired_rows(reach))  # no failures given

def test_below_the_ceiling_counts_only_the_tasks_the_ceiling_fixed_and_the_arm_did_not():
    from labkit.repoedit.compare_report import below_ceiling

    rows = _rows([True, False, False, False, False], [True, True, True, False, False])  # machine_bare, prompt_only
    rows[2] = replace(rows[2], edits=0, refused=2)  # t2: every answer machine_bare gave was refused
    rows[3] = replace(rows[3], edits=0)  # t3: nothing written, on a task the ceiling did not fix either
    assert below_ceiling(rows, "machine_bare", ceiling="prompt_only") == {"every answer refused": 1,
                                                                         "edited, still red": 1}  # t1, t2
    assert below_ceiling(rows, "prompt_only", ceiling="machine_bare") == {}  # it fixed the one task the other did
    assert below_ceiling(rows, "machine_bare", ceiling="oracle") == {}  # no ceiling recorded: nothing to count

def test_a_recording_through_the_cassettes_replays_row_for_row_and_a_changed_prompt_stops_it(project, tmp_path):
    from labkit.llm.errors import CassetteMiss
    from labkit.repoedit.compare import replay_compare

    config = CompareConfig(model="scripted", arms=["prompt_only", "prompt_tools", "machine_bare"],
                           tasks_file=str(project / "tasks.yaml"))
    out = tmp_path / "rec"
    run_compare(config, Answers(live=ScriptedBackend(_script)), out)
    assert replay_compare(out, tmp_path / "again") == []
    tasks = project / "tasks.yaml"
    tasks.write_text(tasks.read_text().replace("add(a, b) must return", "add(a, b) shall return"))
    with pytest.raises(CassetteMiss):
        replay_compare(out, tmp_path / "third", arms=["prompt_only"])


def test_runs_spread_over_two_servers_give_one_servers_rows(project, tmp_path):
    """The code comparison on the one runner: a pool of two servers, runs at once, the rows of one backend."""
    from labkit.llm.pool import ServerPool

    class Server(ScriptedBackend):
        def __init__(self, url: str) -> None:
            super().__init__(_script)
            self.url = url

        def describe(self) -> dict:
            return {**super().describe(), "backend": "openai_http", "server": self.url, "model_sha256": "sha-a"}

    config = CompareConfig(model="scripted", arms=["prompt_only", "prompt_tools", "machine_bare", "machine",
                                                   "bare_oracle"], tasks_file=str(project / "tasks.yaml"))
    alone = run_compare(config, Answers(live=Server("http://only")), tmp_path / "one")
    a, b = Server("http://a"), Server("http://b")
    spread = run_compare(config, Answers(live=ServerPool([a, b])), tmp_path / "two")
    assert replay_differences(alone, spread) == [] and [r.arm for r in spread] == config.arms
    assert [r.digest for r in spread] == [r.digest for r in alone] and a.requests and b.requests
    assert (tmp_path / "two" / "runs.jsonl").read_text().count("\n") == len(config.arms)


def test_seed_form_counts_the_first_headline_pair_of_a_recording_and_says_it_in_one_line():
    from labkit.repoedit.compare_report import seed_form, seed_form_text, summarize

    folder = Path(__file__).resolve().parents[1] / "data" / "repoedit" / "compare-plus" / "qwen2.5-coder-1.5b"
    form = seed_form(folder)
    assert form is not None and (form["lower"], form["upper"]) == ("prompt_whole", "machine")
    fixed = {r["arm"]: r["tasks_solved"] for r in summarize(folder)["arms"]}
    assert (form["lower_fixed"], form["upper_fixed"]) == (fixed["prompt_whole"], fixed["machine"])
    paired = next(p for p in summarize(folder)["paired"]
                  if (p["measure"], p["a"], p["b"]) == ("fixed", "machine", "prompt_whole"))
    assert (form["upper_better"], form["lower_better"]) == (paired["a_better"], paired["b_better"])
    text = seed_form_text(folder)
    assert f"{form['lower_fixed']}/{form['tasks']} →" in text and "the kit's projects" in text


def test_seed_form_of_a_recording_made_in_stretches_says_how_many_of_its_tasks_it_holds(tmp_path):
    import shutil

    from labkit.repoedit.compare_report import seed_form, seed_form_text

    folder = tmp_path / "partial"
    shutil.copytree(Path(__file__).resolve().parents[1] / "data" / "repoedit" / "compare-plus"
                    / "qwen2.5-coder-1.5b", folder)
    assert "recorded so far" not in seed_form_text(folder)
    config = json.loads((folder / "compare.json").read_text())
    tasks = list(dict.fromkeys(r.task for r in load_rows(folder / "runs.jsonl")))
    config["task_ids"] = [*tasks, "not-yet-1", "not-yet-2"]
    (folder / "compare.json").write_text(json.dumps(config))
    form = seed_form(folder)
    assert form is not None and (form["tasks"], form["planned_tasks"]) == (len(tasks), len(tasks) + 2)
    assert f"recorded so far: {len(tasks)} of its {len(tasks) + 2} tasks" in seed_form_text(folder)
