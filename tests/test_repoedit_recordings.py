"""Facts the issue promises about the recorded code comparisons, read from their logs (no model, no pytest).

The 270M model used to die at the plan step (it copied the prompt's placeholder as a file name); with a
closed plan and code planning one-file projects, every one of its machine runs must get as far as an edit.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from labkit.core.store import load_events

DATA = Path(__file__).resolve().parents[1] / "data" / "repoedit"
PLUS = DATA / "compare-plus"


@pytest.mark.parametrize("model", ["gemma3-270m", "qwen2.5-coder-1.5b"])
def test_every_recorded_machine_run_reaches_the_edit_state(model):
    logs = sorted((PLUS / model / "logs" / "machine_plus").glob("*.jsonl"))
    assert len(logs) == 10
    for log in logs:
        dests = [e.dest for e in load_events(log) if e.type == "transitioned"]
        assert "EDIT_FILE" in dests, f"{log.name}: the run never reached EDIT_FILE ({dests})"


# ----------------------------------------------------------------------------- best of 3, recorded beside
BEST_OF = [(DATA / kind, DATA / f"{kind}-best-of") for kind in ("compare-plus", "humaneval-fix")]


@pytest.mark.parametrize(("greedy", "best"), BEST_OF, ids=lambda p: p.name)
def test_a_best_of_recording_keeps_the_greedy_tree_where_its_first_try_was_kept(greedy, best):
    """Its first tries were answered from the greedy recording (`--reuse`): where the first try's tree was kept,
    it is the greedy arm's tree, digest for digest; and a best-of arm fixes every task its greedy arm fixed."""
    from labkit.repoedit.compare import load_rows, read_config
    from labkit.repoedit.compare_report import summarize

    model = "qwen2.5-coder-1.5b"
    rows = {(r.arm, r.task): r for r in load_rows(greedy / model / "runs.jsonl")}
    best_rows = load_rows(best / model / "runs.jsonl")
    assert len(best_rows) == len(read_config(best / model).jobs())
    for row in best_rows:
        base = rows[(row.arm.removesuffix("_best_of_3"), row.task)]
        if row.status.startswith("try 1 of 3") or row.status.startswith("no try of 3"):
            assert row.digest == base.digest, (row.arm, row.task)
        assert row.fixed or not base.fixed, (row.arm, row.task)
    assert summarize([greedy / model, best / model])["runs"] == len(rows) + len(best_rows)


@pytest.mark.slow
def test_the_best_of_recording_on_the_kits_projects_replays_row_for_row(tmp_path):
    from labkit.repoedit.compare import replay_compare

    assert replay_compare(DATA / "compare-plus-best-of" / "qwen2.5-coder-1.5b", tmp_path / "again") == []


# ----------------------------------------------------------------------------- the ablation on HumanEval
IDLE_ON_ONE_FILE = ("closed_plan", "plan_references", "plan_example", "follow_traceback")


def test_on_one_file_projects_the_plan_features_change_no_tree():
    """Code plans a one-file project, so the plan prompt's features never act and a red run's traceback blames
    no file outside the plan: switched off, the machine must leave the very tree it left with them, task by
    task. (If this fails, a feature acts where the docs say it cannot, or the recording is not the machine's.)"""
    from labkit.repoedit.compare import load_rows

    model = "qwen2.5-coder-1.5b"
    full = {r.task: r for r in load_rows(DATA / "humaneval-fix" / model / "runs.jsonl") if r.arm == "machine"}
    rows = load_rows(DATA / "humaneval-fix-ablation" / model / "runs.jsonl")
    idle = [r for r in rows if r.arm.removeprefix("machine_without_") in IDLE_ON_ONE_FILE]
    assert len(idle) == len(IDLE_ON_ONE_FILE) * len(full) == 4 * 106  # every task of the test split, each arm
    for row in idle:
        assert (row.digest, row.fixed) == (full[row.task].digest, full[row.task].fixed), (row.arm, row.task)


def test_what_was_refused_where_no_edit_got_through_is_read_from_every_such_run() -> None:
    from labkit.repoedit.compare import load_rows
    from labkit.repoedit.compare_report import refusals_without_edit

    folder = DATA / "humaneval-fix-ablation" / "qwen2.5-coder-1.5b"
    arm = "machine_without_definition_edit"
    found = refusals_without_edit(folder, arm)
    nothing_applied = [r for r in load_rows(folder / "runs.jsonl") if r.arm == arm and r.edits == 0]
    assert sum(found.values()) == len(nothing_applied) == 40  # one count per run, none missed
    # the path docs/results.md and notebook 09 describe: a search text that did not apply, then skips refused
    assert found[("blamed_skip", "does_not_apply")] == 34 and next(iter(found)) == ("blamed_skip", "does_not_apply")
    assert refusals_without_edit(folder, "no_such_arm") == {}


# ----------------------------------------------------------------------------- the free loop, recorded beside
def test_the_free_loop_is_paired_with_the_machine_on_the_kits_projects():
    from labkit.repoedit.compare_report import summarize

    pairs = {(p["measure"], p["a"], p["b"]): p for p in summarize(PLUS / "qwen2.5-coder-1.5b")["paired"]}
    fixed = pairs[("fixed", "machine", "prompt_tools")]
    assert (fixed["tasks"], fixed["a_better"], fixed["b_better"], fixed["p_value"]) == (10, 7, 0, 0.015625)
    kept = pairs[("no test left broken", "machine", "prompt_tools")]
    assert (kept["a_better"], kept["b_better"]) == (5, 0)  # the loop's failed edits stay in the tree
