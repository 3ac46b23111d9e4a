"""Tasks as data files, the goal predicate, the verifier, and the planner contract."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from labkit.core.errors import LabkitError
from labkit.runtime import (
    TASKS,
    Candidate,
    DraftStore,
    Goal,
    PlannerContext,
    Proposal,
    Runtime,
    Task,
    TickClock,
    Usage,
    World,
    goal_met,
    make_planner,
    register_planner,
    resolve_task,
    verify,
)
from labkit.runtime.planner import PlannerError
from labkit.runtime.records import differences, differences_text, load_records
from labkit.runtime.state import RunState
from labkit.runtime.task import draft_difference_problems


def test_a_task_file_loads_and_runs(tmp_path: Path) -> None:
    data = {"id": "diff-2", "description": "compare R02 and R04 under key d24",
            "goal": {"reads": ["R02", "R04"], "draft_key": "d24", "draft_covers_differences": True},
            "forbidden_records": ["R08"], "faults": {"faults": [{"kind": "write_timeout", "landed": False}]},
            "budget": {"max_steps": 10}}
    path = tmp_path / "diff-2.json"
    path.write_text(json.dumps(data))
    task = resolve_task(str(path))
    assert task.budget.max_steps == 10 and task.faults.faults[0].kind == "write_timeout"
    world = World(DraftStore(tmp_path / "d.sqlite"))
    rt = Runtime(task, None, world, clock=TickClock())
    assert rt.run().outcome == "succeeded"
    assert verify(task, world, rt.events).passed
    assert "status_checked" in [e.type for e in rt.events]


def test_task_files_with_mistakes_get_clear_errors(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"id": "x", "description": "d", "goal": {"reads": "R01", "oops": 1}}))
    with pytest.raises(LabkitError, match="goal"):
        Task.load(path)
    with pytest.raises(LabkitError, match="no task file"):
        Task.load(tmp_path / "missing.json")


def test_goal_predicate_is_over_state_only() -> None:
    goal = Goal(reads=("A", "B"), draft_key="k", draft_covers_differences=True)
    a = {"id": "A", "plan": "pro"}
    b = {"id": "B", "plan": "basic"}
    assert not goal_met(goal, RunState(reads={"A": a}))
    assert not goal_met(goal, RunState(reads={"A": a, "B": b}, drafts={"k": {"text": "nothing useful"}}))
    assert goal_met(goal, RunState(reads={"A": a, "B": b}, drafts={"k": {"text": "- plan: A=pro, B=basic"}}))


def _diff3_drafts() -> dict[str, str]:
    """Drafts for the built-in diff3 task (R03, R05, R11), built from the real record set."""
    records = load_records()
    goal = [records[r] for r in ("R03", "R05", "R11")]
    exact = differences_text(goal)
    lines = exact.splitlines()
    assert len(lines) >= 3, "diff3's records must differ in at least two fields for these drafts to mean much"
    return {
        "exact": exact,
        # the bug: R07's values appended to every line; each expected line is a prefix of a wrong one
        "extra record appended": differences_text([*goal, records["R07"]]).replace(", R07", "", 1),
        "missing a line": "\n".join(lines[:-1]) + "\n",
        "lines in another order": "\n".join([lines[0], *reversed(lines[1:])]) + "\n",
        "a right draft that also names another record": exact + "See also R07.\n",
        "an extra line": exact + "- note: R03=a, R05=b, R11=c\n",
        "an extra line without a bullet": exact + "status: R03=closed, R05=closed, R11=closed\n",
        "the right lines without bullets": exact.replace("- ", ""),
    }


def test_the_draft_check_is_exact_not_a_substring_match(tmp_path: Path) -> None:
    task = TASKS["diff3"]
    records = load_records()
    state_reads = {r: records[r] for r in (*task.goal.reads, "R07")}
    drafts = _diff3_drafts()
    wrong = drafts["extra record appended"]
    # the old check's blind spot: every expected line occurs in the wrong draft as a substring
    assert all(line in wrong for line in differences(records[r] for r in task.goal.reads))
    expected = {"exact": True, "lines in another order": True, "the right lines without bullets": True}
    for n, (name, text) in enumerate(drafts.items()):
        right = expected.get(name, False)
        state = RunState(reads=state_reads, drafts={task.goal.draft_key: {"text": text}})
        assert goal_met(task.goal, state) is right, name
        world = World(DraftStore(tmp_path / f"d{n}.sqlite"))
        world.drafts.save(task.goal.draft_key, text)
        verdict = verify(task, world, claimed="succeeded")
        assert verdict.passed is right, name
        assert [c.name for c in verdict.failed()] == ([] if right else ["draft_covers_differences"]), name
    problems = draft_difference_problems(wrong, [records[r] for r in task.goal.reads], task.goal.reads)
    assert any("outside the goal: ['R07']" in p for p in problems) and any("missing" in p for p in problems)


def test_a_run_that_saves_a_wrong_draft_does_not_succeed(tmp_path: Path) -> None:
    """The stop predicate refuses the wrong draft: the planner has nothing left, the run ends incomplete."""
    task = TASKS["diff3"]
    wrong = _diff3_drafts()["extra record appended"]

    class SavesWrong:
        name = "saves-wrong"

        def propose(self, ctx: PlannerContext) -> Proposal:
            unread = [r for r in (*task.goal.reads, "R07") if r not in ctx.records]
            if unread:
                return Proposal(candidates=(Candidate(action="read_record", args={"id": unread[0]}),))
            if task.goal.draft_key not in ctx.drafts:
                return Proposal(candidates=(Candidate(action="save_draft",
                                                      args={"key": task.goal.draft_key, "text": wrong}),))
            return Proposal(note="the draft is saved", claims_done=True)

    world = World(DraftStore(tmp_path / "d.sqlite"))
    rt = Runtime(task, SavesWrong(), world, clock=TickClock())
    result = rt.run()
    assert result.outcome == "incomplete" and "retries in PLANNING" in result.reason
    assert "SUCCEEDED" not in [getattr(e, "dest", None) for e in rt.events]
    verdict = verify(task, world, rt.events)
    assert not verdict.passed and {c.name for c in verdict.failed()} == {"draft_covers_differences",
                                                                        "reported_success"}


def test_verifier_grades_the_world_not_the_claim(tmp_path: Path) -> None:
    task = TASKS["diff3"]
    world = World(DraftStore(tmp_path / "d.sqlite"))
    assert not verify(task, world, claimed="succeeded").passed
    world.drafts.save("diff-R03-R05-R11", "wrong text")
    verdict = verify(task, world, claimed="succeeded")
    assert [c.name for c in verdict.failed()] == ["draft_covers_differences"]


def test_proposals_carry_no_hidden_reasoning() -> None:
    with pytest.raises(ValidationError):
        Proposal(candidates=(), reasoning="step by step ...")  # type: ignore[call-arg]
    with pytest.raises(ValidationError):
        Candidate(action="read_record", args={}, rationale_summary="x" * 201)


class BrokenModel:
    name = "broken-model"

    def propose(self, context: PlannerContext) -> Proposal:
        if context.step == 0:
            raise PlannerError("the model's answer was not JSON", usage=Usage(prompt_tokens=40, completion_tokens=9))
        return Proposal(candidates=(Candidate(action="read_record", args={"id": "R03"}),) * 5)


def test_planner_errors_are_recorded_and_k_is_enforced(tmp_path: Path) -> None:
    task = TASKS["diff3"].model_copy(update={"k": 2})
    rt = Runtime(task, BrokenModel(), World(DraftStore(tmp_path / "d.sqlite")), clock=TickClock())
    rt.run()
    proposals = [e for e in rt.events if e.type == "proposed"]
    assert "not JSON" in proposals[0].problem and proposals[0].candidates == []  # type: ignore[attr-defined]
    assert len(proposals[1].candidates) == 2 and proposals[1].dropped == 3  # type: ignore[attr-defined]
    assert proposals[0].usage.tokens == 49 and rt.state.tokens >= 49  # type: ignore[attr-defined]


def test_planners_are_registered_by_name(tmp_path: Path) -> None:
    register_planner("broken-model", lambda task: BrokenModel())
    task = TASKS["diff3"].model_copy(update={"planner": "broken-model"})
    assert make_planner("broken-model", task).name == "broken-model"
    with pytest.raises(LabkitError, match="unknown planner"):
        make_planner("nope", task)


def test_proposal_schema_and_parser_for_model_planners(tmp_path: Path) -> None:
    from labkit.runtime import parse_proposal, proposal_schema

    rt = Runtime(TASKS["diff3"], None, World(DraftStore(tmp_path / "d.sqlite")), clock=TickClock())
    schema = proposal_schema(rt.context())
    options = schema["properties"]["candidates"]["items"]["anyOf"]
    assert [o["properties"]["action"]["const"] for o in options] == ["read_record", "save_draft"]
    assert schema["properties"]["candidates"]["maxItems"] == 3
    good = parse_proposal('{"candidates": [{"action": "read_record", "args": {"id": "R01"}, '
                          '"rationale_summary": "first"}], "note": "start"}')
    assert good.candidates[0].args == {"id": "R01"}
    for bad, why in [("not json", "not JSON"), ("[1]", "not an object"), ('{"candidates": [{"act": 1}]}', "fit"),
                     ('{"candidates": [], "thoughts": "hidden"}', "fit")]:
        with pytest.raises(PlannerError, match=why):
            parse_proposal(bad)


def test_a_proposal_made_under_another_policy_is_stale() -> None:
    from labkit.runtime import Budget, Policy, Signer, Validator

    validator = Validator(Policy(version="policy-2"), Budget(), Signer())
    cands = [{"action": "read_record", "args": {"id": "R01"}}]
    stale = validator.validate(RunState(), cands, now=0.0, proposed_under="policy-1")
    assert stale.verdict == "rejected" and "policy-2" in stale.reason
    assert validator.validate(RunState(), cands, now=0.0, proposed_under="policy-2").verdict == "allowed"
