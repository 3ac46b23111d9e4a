"""A tool is one declaration: a new tool, declared here and nowhere else, runs through every part.

Each test adds one :class:`ToolSpec` (in this file only) to the runtime's tool set and runs it
through the validator, the executor with the fault injector, the machine (observation, status
query, commit, replay), the free loop, the fault-schedule parser and the trace viewer. No other
code knows the tool's name.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict, Field

from labkit.core.errors import LabkitError
from labkit.core.reducer import replay
from labkit.course.viewer import Trace, render_timeline, run_view
from labkit.runtime import TOOLS, DraftStore, FaultPlan, TickClock, World
from labkit.runtime.events import (
    DuplicateDelivery,
    FaultInjected,
    Observation,
    StatusChecked,
    ToolResult,
    Validation,
)
from labkit.runtime.free_loop import run_free, score_free
from labkit.runtime.inject import INJECTED_DENIAL, deliver
from labkit.runtime.invariants import runtime_invariants
from labkit.runtime.loop import Runtime
from labkit.runtime.planner import Candidate, PlannerContext, Proposal
from labkit.runtime.state import OBSERVATION_KINDS, empty_run_state, reduce_run
from labkit.runtime.table import FAULTS, planner_executor_table, state_guards
from labkit.runtime.task import Goal, Task, verify
from labkit.runtime.tools import CallContext, ToolAnswer, ToolSpec, text_sha256

CONTRACTS = {"C01": {"id": "C01", "plan": "pro", "ends": "2027-03"},
             "C02": {"id": "C02", "plan": "basic", "ends": "2026-12"}}


class ReadContractArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    id: str = Field(pattern=r"^C\d{2}$")


class SaveNoteArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    key: str = Field(pattern=r"^note-\d+$")
    text: str = Field(min_length=1)


def _read_contract(world: World, args: BaseModel, ctx: CallContext) -> ToolAnswer:
    contract = CONTRACTS.get(args.id)  # type: ignore[attr-defined]
    return ToolAnswer("ok", data=dict(contract)) if contract else ToolAnswer("error", detail="no such contract")


def _save_note(world: World, args: BaseModel, ctx: CallContext) -> ToolAnswer:
    key, text = args.key, args.text  # type: ignore[attr-defined]
    changed = world.drafts.save(key, text, request=ctx.action_id)
    return ToolAnswer("ok", data={"key": key, "sha256": text_sha256(text), "changed": changed})


# The whole of each new tool: one declaration.
READ_CONTRACT = ToolSpec("read_contract", ReadContractArgs, False, "read one contract by id (read-only)",
                         run=_read_contract)
SAVE_NOTE = ToolSpec("save_note", SaveNoteArgs, True, "save a note under a key (idempotent by key)",
                     run=_save_note, lost_reply="no answer from the note area (the note may be saved)")


class ReactivePlanner:
    """Proposes from a function of the context (a test's stand-in for a model)."""

    name = "script"

    def __init__(self, propose: Any) -> None:
        self._propose = propose

    def propose(self, ctx: PlannerContext) -> Proposal:
        return self._propose(ctx)  # type: ignore[no-any-return]


def _reads_c01(ctx: PlannerContext) -> Proposal:
    if "C01" in ctx.records:
        return Proposal(claims_done=True)
    assert any(t["name"] == "read_contract" for t in ctx.tools)  # the planner is offered the new tool
    return Proposal(candidates=(Candidate(action="read_contract", args={"id": "C02"}),  # forbidden
                                Candidate(action="read_contract", args={"id": "C01"})))


def _saves_a_note(ctx: PlannerContext) -> Proposal:
    if "note-1" in ctx.drafts:
        return Proposal(claims_done=True)
    return Proposal(candidates=(Candidate(action="save_note", args={"key": "note-1", "text": "call back"}),))


def _tools(spec: ToolSpec) -> dict[str, ToolSpec]:
    return {**TOOLS, spec.name: spec}


def _world(tmp_path: Path, area: str) -> World:
    return World(DraftStore(tmp_path / "drafts.sqlite", area))


def _replayed(events: Any) -> Any:
    result = replay(events, reduce_run, empty_run_state(), runtime_invariants(), planner_executor_table(),
                    state_guards())
    assert result.violations == ()
    return result.state


READ_TASK = Task(id="contract", description="read contract C01", goal=Goal(reads=("C01",)),
                 forbidden_records=("C02",))
NOTE_TASK = Task(id="note", description="save a note", goal=Goal(draft_key="note-1"))


def test_a_new_read_tool_runs_through_validator_executor_faults_machine_and_viewer(tmp_path: Path) -> None:
    tools = _tools(READ_CONTRACT)
    faults = FaultPlan.parse("read_timeout/read_contract@1,duplicate_result/read_contract@2", tools)
    rt = Runtime(READ_TASK, ReactivePlanner(_reads_c01), _world(tmp_path, "m"), clock=TickClock(), faults=faults,
                 tools=tools)
    result = rt.run()
    assert result.outcome == "succeeded"
    # validator: the forbidden contract is denied by policy, the allowed one is chosen (schema checked)
    first = next(e for e in rt.events if isinstance(e, Validation))
    assert [(f.verdict, f.code) for f in first.findings] == [("denied", "forbidden"), ("allowed", None)]
    assert first.tool == "read_contract" and not first.side_effect
    # executor + fault injector: the timeout strikes call 1 (a read: retried), a duplicate call 2
    calls = [(e.tool, e.outcome) for e in rt.events if isinstance(e, ToolResult)]
    assert calls == [("read_contract", "timeout"), ("read_contract", "ok")]
    assert [e.target for e in rt.events if isinstance(e, FaultInjected)] == ["read_contract"] * 3
    assert len([e for e in rt.events if isinstance(e, DuplicateDelivery)]) == 1
    # machine: the declared observation is committed into the run state; replay agrees
    observed = next(e for e in rt.events if isinstance(e, Observation))
    assert observed.kind == "record_read" and observed.facts == CONTRACTS["C01"]
    assert dict(rt.state.reads) == {"C01": CONTRACTS["C01"]}
    assert _replayed(rt.events) == rt.state
    assert verify(READ_TASK, rt.world, rt.events, claimed=result.outcome).passed
    # viewer: the trace and the state view show the new tool without knowing it
    trace = Trace.from_catalog(list(rt.events))
    called = next(i for i, e in enumerate(rt.events) if isinstance(e, ToolResult))
    assert run_view(trace.state_before(called))["action"].startswith("a1 read_contract, attempts=1, call open")
    assert run_view(rt.state)["reads"] == "C01"
    assert "read_contract" in render_timeline(trace)


def test_the_free_loop_runs_the_same_declaration_and_reads_what_the_machine_refused(tmp_path: Path) -> None:
    tools = _tools(READ_CONTRACT)
    world = _world(tmp_path, "free")
    free = run_free(READ_TASK, ReactivePlanner(_reads_c01), world, FaultPlan.parse("read_timeout/read_contract@1",
                                                                                 tools), tools=tools)
    steps = [(s["action"], s["args"]["id"], s["outcome"]) for s in free.transcript]
    assert steps[:2] == [("read_contract", "C02", "timeout"), ("read_contract", "C02", "ok")]
    # it runs the first candidate, the forbidden one, every time, and never reads C01
    assert free.stop == "max_iterations" and set(steps[1:]) == {("read_contract", "C02", "ok")}
    score = score_free(READ_TASK, world, free, tools)
    assert "forbidden_untouched" in {c.name for c in score.verdict.failed()}


def test_a_new_write_tool_is_settled_by_its_status_query_never_repeated(tmp_path: Path) -> None:
    tools = _tools(SAVE_NOTE)
    world = _world(tmp_path, "m")
    faults = FaultPlan.parse("write_timeout/save_note@1:landed", tools)
    rt = Runtime(NOTE_TASK, ReactivePlanner(_saves_a_note), world, clock=TickClock(), faults=faults, tools=tools)
    assert rt.run().outcome == "succeeded"
    result = next(e for e in rt.events if isinstance(e, ToolResult))
    assert (result.tool, result.outcome, result.side_effect) == ("save_note", "timeout", True)
    assert result.detail == SAVE_NOTE.lost_reply  # the declared lost reply
    assert [(e.key, e.outcome) for e in rt.events if isinstance(e, StatusChecked)] == [("note-1", "present")]
    assert dict(rt.state.drafts)["note-1"]["text"] == "call back"
    assert world.drafts.repeated_keys() == {}
    assert _replayed(rt.events) == rt.state
    called = next(i for i, e in enumerate(rt.events) if isinstance(e, ToolResult))
    assert run_view(Trace.from_catalog(list(rt.events)).state_before(called))["action"].startswith(
        "a1 save_note(write), attempts=1, call open")


def test_the_free_loop_repeats_or_assumes_the_new_write_under_the_same_fault(tmp_path: Path) -> None:
    tools = _tools(SAVE_NOTE)
    faults = FaultPlan.parse("write_timeout/save_note@1:landed", tools)
    assumed = run_free(NOTE_TASK, ReactivePlanner(_saves_a_note), _world(tmp_path, "a"), faults, tools=tools)
    assert assumed.unknown_writes_taken_as_success == 1 and assumed.transcript[0]["taken_as_saved"]
    world = _world(tmp_path, "r")
    retried = run_free(NOTE_TASK, ReactivePlanner(_saves_a_note), world, faults, on_timeout="retry", tools=tools)
    assert retried.reported_success and world.drafts.repeated_keys() == {"note-1": 2}
    assert score_free(NOTE_TASK, world, retried, tools).repeated == 1


@pytest.mark.parametrize("item", ["write_timeout/read_contract@1", "crash/draft_status@1", "denied/nowhere@1"])
def test_a_fault_names_only_a_tool_whose_declaration_it_can_strike(item: str) -> None:
    with pytest.raises(LabkitError):
        FaultPlan.parse(item, _tools(READ_CONTRACT))


def test_every_declared_observation_kind_is_one_the_event_accepts_and_the_state_commits() -> None:
    kinds = Observation.model_fields["kind"].annotation.__args__  # type: ignore[union-attr]
    assert set(kinds) == set(OBSERVATION_KINDS)
    for tools in (TOOLS, _tools(READ_CONTRACT), _tools(SAVE_NOTE)):
        assert all(t.observation.kind in OBSERVATION_KINDS for t in tools.values())
        assert all((t.status_query is not None) == t.side_effect for t in tools.values())
        assert all(t.status_query is None or t.status_query.tool in tools for t in tools.values())


class Died(BaseException):
    """Stands for the runner being killed."""


def _die(reason: str) -> None:
    raise Died(reason)


@pytest.mark.parametrize(("fault", "answers", "saved"), [
    ("denied/save_note@1", [("denied", INJECTED_DENIAL)], False),
    ("write_timeout/save_note@1:lost", [("timeout", "no answer before the deadline")], False),
    ("write_timeout/save_note@1:landed", [("timeout", SAVE_NOTE.lost_reply)], True),
    ("duplicate_result/save_note@1", [("ok", ""), ("ok", "")], True),
    ("crash/save_note@1:lost", None, False),
    ("crash/save_note@1:landed", None, True),
])
def test_the_fault_injector_strikes_a_new_tool_as_its_declaration_says(
        tmp_path: Path, fault: str, answers: list[tuple[str, str]] | None, saved: bool) -> None:
    world = _world(tmp_path, "inject")
    plan = FaultPlan.parse(fault, _tools(SAVE_NOTE))
    args = SaveNoteArgs(key="note-1", text="call back")
    if answers is None:
        with pytest.raises(Died):
            deliver(SAVE_NOTE, world, args, CallContext(action_id="a1"), plan.faults[0], _die)
    else:
        got = deliver(SAVE_NOTE, world, args, CallContext(action_id="a1"), plan.faults[0], _die)
        assert [(a.outcome, a.detail) for a in got] == answers
    assert ("note-1" in world.drafts.drafts()) == saved


def test_every_fault_kind_a_tool_declares_is_a_declared_fault() -> None:
    for spec in (*TOOLS.values(), READ_CONTRACT, SAVE_NOTE):
        assert set(spec.fault_kinds) <= set(FAULTS), spec.name
