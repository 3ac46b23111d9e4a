"""The free loop against the machine, under the same seeded faults and the same verifier."""

from __future__ import annotations

from pathlib import Path

from labkit.runtime import TASKS, DraftStore, FaultPlan, TickClock, World, make_planner, verify
from labkit.runtime.free_loop import (
    compare,
    machine_stopped_on_word,
    machine_unknown_writes_committed,
    machine_write_steps,
    run_free,
    score_free,
    unknown_writes_counted_done,
)
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
    for metric in ("false success", "reported success, goal unmet", "unknown write counted as done",
                   "repeated side effects"):
        assert machine[metric] == 0, metric
    assert machine["verified success"] == machine["runs"] == 24
    assert assume["unknown write counted as done"] > 0
    assert retry["repeated side effects"] > 0
    assert assume["false success"] > 0 and retry["false success"] > 0
    assert assume["reported success, goal unmet"] > 0 and retry["reported success, goal unmet"] > 0
    assert "arm" in table.render()


def test_a_free_loop_that_stops_on_its_word_with_the_goal_met_is_not_counted() -> None:
    """Stopping on the model's word is scored by the world, as for the machine: no fault that breaks the
    goal, no count (the old column counted every free-loop stop on the model's claim)."""
    rows = {r["arm"]: r for r in compare(range(6), kinds=("read_timeout",)).as_dicts()}
    for arm, row in rows.items():
        assert row["verified success"] == row["runs"] == 6, arm
        assert (row["false success"], row["reported success, goal unmet"]) == (0, 0), arm


def _doctored_unobserved_commit() -> list:
    """The write_timeout trace cut at UNKNOWN, then committed with no status query (a broken machine)."""
    from labkit import EventLog, Transitioned, load_events
    from labkit.runtime.traces import TRACES_DIR

    events = load_events(TRACES_DIR / "write_timeout_unknown.jsonl")
    cut = next(i for i, e in enumerate(events) if isinstance(e, Transitioned) and e.dest == "UNKNOWN") + 1
    write_id = [e.payload["action_id"] for e in events[:cut]
                if isinstance(e, Transitioned) and e.trigger == "allowed"][-1]
    log = EventLog(events[0].run_id)
    extra = [Transitioned(trigger="confirmed_present", source="UNKNOWN", dest="COMMITTING", payload={}),
             Transitioned(trigger="committed", source="COMMITTING", dest="SUCCEEDED", payload={"action_id": write_id})]
    for event in [*events[:cut], *extra]:
        log.append(event.model_copy(update={"hash": "", "seq": -1, "prev_hash": ""}), at=event.at)
    return list(log.events)


def test_one_write_audit_for_both_arms(tmp_path: Path) -> None:
    task = TASKS["diff3"]
    # the machine's count is read from its log, so a broken machine's log scores 1
    doctored = _doctored_unobserved_commit()
    assert unknown_writes_counted_done(machine_write_steps(doctored)) == 1
    assert machine_unknown_writes_committed(doctored) == 1
    # a healthy machine under the same fault settles the write first: 0
    w = world(tmp_path, "m")
    rt = Runtime(task, None, w, clock=TickClock(), faults=FaultPlan.parse("write_timeout@1:landed"))
    rt.run()
    steps = machine_write_steps(rt.events)
    assert [s.kind for s in steps] == ["answer", "settled", "counted_done"]
    assert unknown_writes_counted_done(steps) == 0
    # the free loops, by the same function over their transcripts
    for strategy, expected in (("assume_ok", 1), ("retry", 0)):
        w = world(tmp_path, strategy)
        free = run_free(task, make_planner("scripted-diff", task), w, FaultPlan.parse("write_timeout@1:landed"),
                        on_timeout=strategy)  # type: ignore[arg-type]
        got = score_free(task, w, free)
        assert got.unknown_counted_done == expected == free.unknown_writes_taken_as_success, strategy
        assert got.verdict.goal_holds and got.reported  # the draft is there either way
        assert got.repeated == (1 if strategy == "retry" else 0) and got.false_success == (strategy == "retry")
        assert not got.goal_unmet


def test_the_free_loop_is_graded_on_its_reads_too(tmp_path: Path) -> None:
    """verify sees the loop's transcript as tool results, so a forbidden read fails it as it fails the machine."""
    task = TASKS["diff3"].model_copy(update={"forbidden_records": ("R05",)})
    w = world(tmp_path, "f")
    free = run_free(task, make_planner("scripted-diff", task), w, FaultPlan())
    got = score_free(task, w, free)
    assert got.reported and got.verdict.goal_holds and got.false_success and not got.goal_unmet
    assert [c.name for c in got.verdict.failed()] == ["forbidden_untouched"]
