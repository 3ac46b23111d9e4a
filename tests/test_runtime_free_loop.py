"""The free loop against the machine, under the same seeded faults and the same verifier."""

from __future__ import annotations

from pathlib import Path

from labkit.runtime import TASKS, DraftStore, FaultPlan, TickClock, World, make_planner, verify
from labkit.runtime.free_loop import compare, machine_stopped_on_word, machine_unknown_writes_committed, run_free
from labkit.runtime.loop import Runtime


def world(tmp_path: Path, area: str) -> World:
    return World(DraftStore(tmp_path / "drafts.sqlite", area))


def test_assume_ok_records_a_lost_write_as_success(tmp_path: Path) -> None:
    task = TASKS["diff3"]
    w = world(tmp_path, "a")
    run = run_free(task, make_planner("scripted-diff", task), w, FaultPlan.parse("write_timeout@1:lost"))
    assert run.reported_success and run.stop == "model_said_done" and run.unknown_writes_taken_as_success == 1
    assert not verify(task, w, claimed="succeeded").passed  # there is no draft


def test_retry_repeats_a_write_that_happened(tmp_path: Path) -> None:
    task = TASKS["diff3"]
    w = world(tmp_path, "b")
    run = run_free(task, make_planner("scripted-diff", task), w, FaultPlan.parse("write_timeout@1:landed"),
                   on_timeout="retry")
    assert run.reported_success
    assert w.drafts.repeated_keys() == {"diff-R03-R05-R11": 2}


def test_premature_done_ends_the_free_loop(tmp_path: Path) -> None:
    task = TASKS["diff3"]
    w = world(tmp_path, "c")
    run = run_free(task, make_planner("scripted-diff", task), w, FaultPlan.parse("premature_done@2"))
    assert run.stop == "model_said_done" and run.reported_success and run.planner_calls == 2
    assert not verify(task, w, claimed="succeeded").passed


def test_the_machine_under_the_same_faults(tmp_path: Path) -> None:
    task = TASKS["diff3"]
    for n, faults in enumerate(["write_timeout@1:lost", "write_timeout@1:landed", "premature_done@2"]):
        w = world(tmp_path, f"m{n}")
        rt = Runtime(task, None, w, clock=TickClock(), faults=FaultPlan.parse(faults))
        assert rt.run().outcome == "succeeded"
        assert verify(task, w, rt.events).passed
        assert machine_unknown_writes_committed(rt.events) == 0
        assert machine_stopped_on_word(rt.events, task) == 0
        assert w.drafts.repeated_keys() == {}


def test_comparison_table_machine_scores_zero_and_the_free_loop_does_not() -> None:
    table = compare(range(24))
    rows = {r["arm"]: r for r in table.as_dicts()}
    machine, assume, retry = rows["machine"], rows["free loop (assume_ok)"], rows["free loop (retry)"]
    for metric in ("false success", "unknown write taken as success", "repeated side effects",
                   "stopped on the model's word"):
        assert machine[metric] == 0, metric
    assert machine["verified success"] == machine["runs"] == 24
    assert assume["unknown write taken as success"] > 0
    assert retry["repeated side effects"] > 0
    assert assume["stopped on the model's word"] == assume["runs"]
    assert assume["false success"] > 0 and retry["false success"] > 0
    assert "arm" in table.render()
