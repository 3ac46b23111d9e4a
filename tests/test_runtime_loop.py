"""The runtime drives a run through the table: faults, budgets, the human pause, replay."""

from __future__ import annotations

from pathlib import Path

import pytest

from labkit.core.events import Transitioned
from labkit.core.reducer import find_divergence, replay
from labkit.core.store import SqliteLog
from labkit.runtime import (
    TASKS,
    Budget,
    Candidate,
    DiffPlanner,
    DraftStore,
    FaultPlan,
    PlannerContext,
    Proposal,
    Runtime,
    ScriptPlanner,
    Task,
    TickClock,
    Usage,
    World,
    empty_run_state,
    make_planner,
    reduce_run,
    register_planner,
    runtime_invariants,
    verify,
)
from labkit.runtime.events import Observation, Proposed, StatusChecked, ToolCalled, ToolResult


def world(tmp_path: Path, area: str = "run-0") -> World:
    return World(DraftStore(tmp_path / "drafts.sqlite", area))


def run(tmp_path: Path, faults: str = "none", task: Task = TASKS["diff3"], **kw: object) -> Runtime:
    rt = Runtime(task, None, world(tmp_path), clock=TickClock(), faults=FaultPlan.parse(faults), **kw)  # type: ignore[arg-type]
    rt.run()
    return rt


def triggers(rt: Runtime) -> list[str]:
    return [f"{e.source}>{e.trigger}>{e.dest}" for e in rt.events if isinstance(e, Transitioned)]


def test_normal_run_succeeds_and_the_world_agrees(tmp_path: Path) -> None:
    rt = run(tmp_path)
    r = rt.result()
    assert (r.status, r.outcome) == ("SUCCEEDED", "succeeded")
    assert r.planner_calls == 4 and r.tool_calls == 4
    verdict = verify(rt.task, rt.world, rt.events)
    assert verdict.passed, verdict.failed()
    assert sorted(rt.state.reads) == ["R03", "R05", "R11"]


@pytest.mark.parametrize("faults", ["none", "bad_args@2", "unknown_tool@1", "read_timeout@2", "write_timeout@1",
                                    "write_timeout@1:lost", "duplicate_result/save_draft@1", "premature_done@2",
                                    "status_timeout@1,write_timeout@1"])
def test_recoverable_faults_end_in_verified_success_and_replay_to_the_same_state(tmp_path: Path,
                                                                                 faults: str) -> None:
    rt = run(tmp_path, faults)
    assert rt.result().outcome == "succeeded", rt.result()
    assert verify(rt.task, rt.world, rt.events).passed
    replayed = replay(rt.events, reduce_run, empty_run_state(), runtime_invariants())
    assert replayed.state == rt.state
    assert replayed.violations == ()
    assert find_divergence(rt.events, rt.machine.states, reduce_run, empty_run_state()) is None


def test_read_timeout_is_retried_in_place(tmp_path: Path) -> None:
    moves = triggers(run(tmp_path, "read_timeout@2"))
    assert "EXECUTING>timeout>EXECUTING" in moves and not any("UNKNOWN" in m for m in moves)


@pytest.mark.parametrize(("landed", "settled"), [(True, "confirmed_present"), (False, "confirmed_absent")])
def test_write_timeout_goes_to_unknown_and_is_settled_by_the_status_query(tmp_path: Path, landed: bool,
                                                                          settled: str) -> None:
    rt = run(tmp_path, "write_timeout@1" + ("" if landed else ":lost"))
    moves = triggers(rt)
    assert "EXECUTING>timeout>UNKNOWN" in moves and f"UNKNOWN>{settled}>" + (
        "COMMITTING" if landed else "EXECUTING") in moves
    saves = [e for e in rt.events if isinstance(e, ToolCalled) and e.tool == "save_draft"]
    assert len(saves) == (1 if landed else 2)
    assert rt.world.drafts.repeated_keys() == {}
    assert len(rt.world.drafts.calls()) == 1


def test_duplicate_delivery_is_recorded_and_counted_once(tmp_path: Path) -> None:
    rt = run(tmp_path, "duplicate_result/save_draft@1")
    assert "OBSERVING>duplicate_result>OBSERVING" in triggers(rt)
    assert len([e for e in rt.events if isinstance(e, ToolResult) and e.tool == "save_draft"]) == 1


def test_premature_done_is_not_believed(tmp_path: Path) -> None:
    rt = run(tmp_path, "premature_done@1")
    assert "PLANNING>no_proposal>PLANNING" in triggers(rt)
    assert rt.result().outcome == "succeeded"
    first = next(e for e in rt.events if isinstance(e, Proposed))
    assert first.claims_done and not first.candidates


def test_denial_pauses_and_approval_resumes(tmp_path: Path) -> None:
    rt = run(tmp_path, task=TASKS["diff3-restricted"])
    r = rt.result()
    assert (r.status, r.outcome) == ("WAITING_HUMAN", "paused")
    pending = rt.pending_decision()
    assert pending is not None and pending.tool == "read_record" and pending.args == {"id": "R08"}
    r = rt.decide(True, by="supervisor", note="legal hold lifted")
    assert r.outcome == "succeeded"
    assert "WAITING_HUMAN>approved>VALIDATING" in triggers(rt)
    assert "R08" in rt.state.reads
    assert rt.state.reads["R08"]["national_id"] == "[redacted]"


def test_refusal_ends_the_run_failed(tmp_path: Path) -> None:
    rt = run(tmp_path, task=TASKS["diff3-restricted"])
    r = rt.decide(False, note="no")
    assert (r.status, r.outcome) == ("FAILED", "failed")
    assert "refused" in r.reason
    assert not verify(rt.task, rt.world, rt.events).passed


def test_denial_without_escalation_fails_at_once(tmp_path: Path) -> None:
    task = TASKS["diff3-restricted"].model_copy(update={"escalate_denials": False})
    r = run(tmp_path, task=task).result()
    assert (r.status, r.outcome) == ("FAILED", "failed") and "denied" in r.reason


def test_forbidden_record_is_denied_by_the_validator(tmp_path: Path) -> None:
    task = TASKS["diff3"].model_copy(update={"forbidden_records": ("R05",), "escalate_denials": False})
    rt = run(tmp_path, task=task)
    assert "VALIDATING>denied>FAILED" in triggers(rt)
    assert not any(isinstance(e, ToolCalled) and e.action_id == "a2" for e in rt.events)


def test_decide_refuses_when_not_waiting(tmp_path: Path) -> None:
    rt = run(tmp_path)
    with pytest.raises(Exception, match="not waiting"):
        rt.decide(True)


# --------------------------------------------------------------- budgets
def test_step_budget_ends_incomplete_not_success(tmp_path: Path) -> None:
    task = TASKS["diff3"].model_copy(update={"budget": Budget(max_steps=2)})
    r = run(tmp_path, task=task).result()
    assert (r.status, r.outcome) == ("FAILED", "incomplete") and r.reason.startswith("steps")


def test_time_budget_uses_the_injected_clock(tmp_path: Path) -> None:
    task = TASKS["diff3"].model_copy(update={"budget": Budget(max_seconds=3.0)})
    r = run(tmp_path, task=task).result()
    assert r.outcome == "incomplete" and "time" in r.reason


class _Spender:
    name = "spender"

    def propose(self, context: PlannerContext) -> Proposal:
        return Proposal(candidates=(Candidate(action="read_record", args={"id": f"R{context.step + 1:02d}"}),),
                        usage=Usage(prompt_tokens=300, completion_tokens=50, cost=0.01))


def test_token_and_cost_budgets(tmp_path: Path) -> None:
    task = TASKS["diff3"].model_copy(update={"budget": Budget(max_tokens=1000)})
    r = Runtime(task, _Spender(), world(tmp_path), clock=TickClock()).run()
    assert r.outcome == "incomplete" and r.reason.startswith("tokens") and r.planner_calls == 3
    task = TASKS["diff3"].model_copy(update={"budget": Budget(max_cost=0.025)})
    r = Runtime(task, _Spender(), world(tmp_path, "b"), clock=TickClock()).run()
    assert r.outcome == "incomplete" and r.reason.startswith("cost")


def test_a_planner_that_only_claims_done_runs_out_of_retries(tmp_path: Path) -> None:
    r = Runtime(TASKS["diff3"], ScriptPlanner([]), world(tmp_path), clock=TickClock()).run()
    assert (r.status, r.outcome) == ("FAILED", "incomplete") and "retries in PLANNING" in r.reason


def test_unsettled_write_ends_as_needs_review(tmp_path: Path) -> None:
    faults = "write_timeout@1," + ",".join(f"status_timeout@{n}" for n in range(1, 6))
    r = run(tmp_path, faults).result()
    assert (r.status, r.outcome) == ("FAILED", "needs_review")


def test_read_that_always_times_out_ends_incomplete(tmp_path: Path) -> None:
    r = run(tmp_path, ",".join(f"read_timeout@{n}" for n in range(1, 6))).result()
    assert (r.status, r.outcome) == ("FAILED", "incomplete") and "retries in EXECUTING" in r.reason


# --------------------------------------------------------------- separation of facts and readings
def test_observations_and_interpretations_are_separate_events(tmp_path: Path) -> None:
    rt = run(tmp_path)
    types = [e.type for e in rt.events]
    assert types.count("observation") == 4 and types.count("interpreted") >= 3
    obs = next(e for e in rt.events if isinstance(e, Observation))
    assert obs.facts["id"] == "R03" and "note" not in type(obs).model_fields


def test_status_query_is_recorded_as_a_fact(tmp_path: Path) -> None:
    rt = run(tmp_path, "write_timeout@1")
    status = [e for e in rt.events if isinstance(e, StatusChecked)]
    assert [s.outcome for s in status] == ["present"]


def test_run_into_sqlite_and_resume_the_paused_run_in_a_new_runtime(tmp_path: Path) -> None:
    db = tmp_path / "runs.sqlite"
    w = world(tmp_path, "r1")
    with SqliteLog(db, "r1") as log:
        first = Runtime(TASKS["diff3-restricted"], None, w, log=log, clock=TickClock()).run()
    assert first.outcome == "paused"
    with SqliteLog(db, "r1") as log:
        again = Runtime(TASKS["diff3-restricted"], None, w, log=log, clock=TickClock(start=100))
        assert again.state.status == "WAITING_HUMAN"
        r = again.decide(True)
    assert r.outcome == "succeeded"


def test_a_resumed_run_rebuilds_the_planner_it_was_started_with(tmp_path: Path) -> None:
    """The run logs its planner's name; a resume without a planner rebuilds that one, not the task's."""
    task = TASKS["diff3-restricted"]
    register_planner("resume-test-diff", lambda t: DiffPlanner(t.goal.reads, t.goal.draft_key or "d",
                                                              name="resume-test-diff"))
    db, w = tmp_path / "runs.sqlite", world(tmp_path, "p1")
    with SqliteLog(db, "p1") as log:
        first = Runtime(task, make_planner("resume-test-diff", task), w, log=log, clock=TickClock()).run()
    assert first.outcome == "paused" and task.planner != "resume-test-diff"
    with SqliteLog(db, "p1") as log:
        again = Runtime(None, None, w, log=log, clock=TickClock(start=100))
        assert again.planner.name == "resume-test-diff"
        assert again.decide(True).outcome == "succeeded"
        assert {e.planner for e in again.events if isinstance(e, Proposed)} == {"resume-test-diff"}


def test_time_spent_waiting_for_a_person_is_not_work_time(tmp_path: Path) -> None:
    task = TASKS["diff3-restricted"].model_copy(update={"budget": Budget(max_seconds=30.0)})
    clock = TickClock()
    rt = Runtime(task, None, world(tmp_path), clock=clock)
    assert rt.run().outcome == "paused"
    clock.now += 3600  # the supervisor answers an hour later
    assert rt.decide(True).outcome == "succeeded"
    assert rt.state.waited >= 3600


def test_a_pause_can_have_its_own_deadline(tmp_path: Path) -> None:
    task = TASKS["diff3-restricted"].model_copy(update={"budget": Budget(max_wait_seconds=60.0)})
    clock = TickClock()
    rt = Runtime(task, None, world(tmp_path), clock=clock)
    assert rt.run().outcome == "paused"
    assert rt.run().outcome == "paused"  # asking again before the deadline changes nothing
    clock.now += 61
    r = rt.run()
    assert (r.status, r.outcome) == ("FAILED", "incomplete") and "no decision from a person" in r.reason


def test_a_policy_denial_approved_by_a_person_is_validated_again_with_the_grant(tmp_path: Path) -> None:
    task = TASKS["diff3"].model_copy(update={"forbidden_records": ("R05",)})
    rt = run(tmp_path, task=task)
    assert rt.result().outcome == "paused" and "VALIDATING>denied>WAITING_HUMAN" in triggers(rt)
    r = rt.decide(True, by="supervisor")
    assert r.outcome == "succeeded", r
    grants = [e for e in rt.events if e.type == "validation" and e.human_grant]  # type: ignore[attr-defined]
    assert len(grants) == 1 and grants[0].action_id == "a2"  # type: ignore[attr-defined]
    assert not verify(task, rt.world, rt.events).passed  # the verifier still reports the forbidden read


def test_a_wrong_draft_can_be_revised_but_not_saved_twice(tmp_path: Path) -> None:
    from labkit.runtime.records import differences_text, load_records

    ids = ("R03", "R05", "R11")
    right = differences_text(load_records()[r] for r in ids)
    reads = [Proposal(candidates=(Candidate(action="read_record", args={"id": r}),)) for r in ids]

    def save(text: str) -> Proposal:
        return Proposal(candidates=(Candidate(action="save_draft", args={"text": text, "key": "diff-R03-R05-R11"}),))

    rt = Runtime(TASKS["diff3"], ScriptPlanner([*reads, save("first try"), save("first try"), save(right)]),
                 world(tmp_path), clock=TickClock())
    assert rt.run().outcome == "succeeded"
    verdicts = [e.verdict for e in rt.events if e.type == "validation"]  # type: ignore[attr-defined]
    assert verdicts == ["allowed"] * 4 + ["rejected", "allowed"]  # the identical second save is refused
    assert len(rt.world.drafts.calls()) == 2 and rt.world.drafts.repeated_keys() == {}
    assert verify(rt.task, rt.world, rt.events).passed


def test_rejections_carry_a_typed_code_and_metrics_count_by_it(tmp_path: Path) -> None:
    from labkit.runtime import Validation, run_metrics
    from labkit.runtime.records import differences_text, load_records

    ids = ("R03", "R05", "R11")
    right = differences_text(load_records()[r] for r in ids)

    def one(action: str, **args: object) -> Proposal:
        return Proposal(candidates=(Candidate(action=action, args=args),))

    steps = [one("delete_drafts"), one("draft_status", key="k"), one("read_record", id=3),
             one("read_record", id="R03", phone="+41 79 123 45 67"),
             one("save_draft", text="call +1 555 123 4567", key="k"),
             *[one("read_record", id=r) for r in ids], one("save_draft", text=right, key="diff-R03-R05-R11")]
    task = TASKS["diff3"].model_copy(update={"budget": Budget(max_retries=10)})
    rt = Runtime(task, ScriptPlanner(steps), world(tmp_path), clock=TickClock())
    assert rt.run().outcome == "succeeded"
    rejected = [e for e in rt.events if isinstance(e, Validation) and e.verdict == "rejected"]
    assert [v.code for v in rejected] == ["unknown_tool", "unknown_tool", "bad_args", "bad_args", "personal_data"]
    assert [f.code for v in rejected for f in v.findings] == [v.code for v in rejected]
    m = run_metrics(rt.events)
    assert (m["rejections"], m["not_allowlisted"], m["schema_invalid"]) == (5, 2, 2)
    # the count follows the code, not the wording: reworded reasons change nothing
    reworded = [e.model_copy(update={"reason": "no", "findings": [f.model_copy(update={"reason": "no"})
                                                                  for f in e.findings]})
                if isinstance(e, Validation) else e for e in rt.events]
    assert {k: v for k, v in run_metrics(reworded).items() if k != "reason"} == \
        {k: v for k, v in m.items() if k != "reason"}
