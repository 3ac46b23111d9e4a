"""Each of the three invariants fires when a deliberately broken part breaks it.

The broken parts are small subclasses of the real ones, each with one honest bug: an executor that
runs something other than what was validated, a runtime that writes twice, one that retries an
unknown write blindly, one that takes an unknown write for a success.
"""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from labkit.errors import InvariantViolation
from labkit.events import InvariantViolated, RunStarted
from labkit.runtime import (
    TASKS,
    ActionState,
    DraftStore,
    Executor,
    FaultPlan,
    Runtime,
    Signer,
    TickClock,
    World,
    args_sha256,
    runtime_invariants,
)
from labkit.runtime.events import StatusChecked, ToolCalled, ToolResult, Validation
from labkit.runtime.executor import Delivery, UnauthorizedAction
from labkit.runtime.faults import Fault
from labkit.runtime.state import RunState
from labkit.store import EventLog


def world(tmp_path: Path) -> World:
    return World(DraftStore(tmp_path / "drafts.sqlite", "w"))


def violations(rt: Runtime) -> list[str]:
    return [e.invariant for e in rt.events if isinstance(e, InvariantViolated)]


class SwappingExecutor(Executor):
    """Bug: ignores the token and runs the action with other arguments."""

    def execute(self, run_id: str, action: ActionState, fault: Fault | None = None) -> Delivery:
        if action.tool == "read_record":
            action = ActionState(**{**action.__dict__, "args": {"id": "R08"}})
        return self._run_tool(action, fault)


def test_executing_something_else_than_was_validated_fires_invariant_1(tmp_path: Path) -> None:
    w = world(tmp_path)
    rt = Runtime(TASKS["diff3"], None, w, clock=TickClock(), executor=SwappingExecutor(w, Signer(), "policy-1"))
    r = rt.run()
    assert violations(rt) == ["executed_implies_validated"]
    assert (r.status, r.outcome) == ("FAILED", "failed") and "executed_implies_validated" in r.reason


class DoubleWriteRuntime(Runtime):
    """Bug: executes every write a second time "to be sure"."""

    def _in_executing(self, s: RunState) -> bool:
        done = super()._in_executing(s)
        if s.action is not None and s.action.side_effect and not self.machine.finished:
            super()._in_executing(self.state)
        return done


def test_repeating_a_write_fires_invariant_3_before_the_second_write(tmp_path: Path) -> None:
    rt = DoubleWriteRuntime(TASKS["diff3"], None, world(tmp_path), clock=TickClock())
    r = rt.run()
    assert violations(rt) == ["single_side_effect"]
    assert r.outcome == "failed"
    assert len(rt.world.drafts.calls()) == 1  # the violation stopped the second call


class BlindRetryRuntime(Runtime):
    """Bug: after a write timeout it re-executes without asking whether the write happened."""

    def _in_unknown(self, s: RunState) -> bool:
        self.machine.fire("confirmed_absent")
        return True


def test_blind_retry_of_an_unknown_write_fires_invariant_3(tmp_path: Path) -> None:
    rt = BlindRetryRuntime(TASKS["diff3"], None, world(tmp_path), clock=TickClock(),
                           faults=FaultPlan.parse("write_timeout@1:landed"))
    rt.run()
    assert violations(rt) == ["single_side_effect"]
    assert len(rt.world.drafts.calls()) == 1


class OptimisticRuntime(Runtime):
    """Bug: takes a write that timed out for a success."""

    def _in_unknown(self, s: RunState) -> bool:
        self.machine.fire("confirmed_present")
        return True


def test_committing_an_unobserved_write_fires_invariant_2(tmp_path: Path) -> None:
    rt = OptimisticRuntime(TASKS["diff3"], None, world(tmp_path), clock=TickClock(),
                           faults=FaultPlan.parse("write_timeout@1:lost"))
    r = rt.run()
    assert violations(rt) == ["committed_implies_observed"]
    assert r.outcome == "failed"
    assert rt.world.drafts.drafts() == {}  # and indeed nothing was saved


def test_on_violation_raise_stops_with_an_exception(tmp_path: Path) -> None:
    rt = DoubleWriteRuntime(TASKS["diff3"], None, world(tmp_path), clock=TickClock(), on_violation="raise")
    with pytest.raises(InvariantViolation, match="single_side_effect"):
        rt.run()


# ------------------------------------------------------------------ the checks on hand-written logs
def _log(*facts: object) -> EventLog:
    log = EventLog()
    log.append(RunStarted(table="planner_executor", initial="INIT"))
    for fact in facts:
        log.append(fact)  # type: ignore[arg-type]
    return log


def _check(log: EventLog) -> list[str]:
    return [i.name for i in runtime_invariants() if i.violation(RunState(), log.events)]


SHA = args_sha256({"id": "R03"})


def test_invariant_1_on_a_call_with_no_validation_and_on_a_stale_policy() -> None:
    call = ToolCalled(action_id="a1", attempt=1, tool="read_record", args_sha256=SHA, policy_version="p1",
                      side_effect=False)
    assert _check(_log(call)) == ["executed_implies_validated"]
    ok = Validation(verdict="allowed", action_id="a1", tool="read_record", args={"id": "R03"}, args_sha256=SHA,
                    policy_version="p0", token="t")
    assert _check(_log(ok, call)) == ["executed_implies_validated"]
    assert _check(_log(ok.model_copy(update={"policy_version": "p1"}), call)) == []


def test_invariant_3_counts_possible_effects_until_settled() -> None:
    def call(n: int) -> ToolCalled:
        return ToolCalled(action_id="a1", attempt=n, tool="save_draft", args_sha256="x", policy_version="p",
                          side_effect=True)

    def result(n: int, outcome: str) -> ToolResult:
        return ToolResult(action_id="a1", attempt=n, tool="save_draft", args_sha256="x",
                          outcome=outcome, side_effect=True)  # type: ignore[arg-type]

    absent = StatusChecked(action_id="a1", key="k", outcome="absent")
    assert "single_side_effect" in _check(_log(call(1), result(1, "timeout"), call(2)))
    assert "single_side_effect" not in _check(_log(call(1), result(1, "timeout"), absent, call(2),
                                                   result(2, "ok")))
    assert "single_side_effect" in _check(_log(call(1), result(1, "ok"), result(1, "ok")))


# ------------------------------------------------------------------ the executor's own refusal
def test_the_executor_refuses_actions_without_a_matching_token(tmp_path: Path) -> None:
    signer = Signer(b"k")
    ex = Executor(world(tmp_path), signer, "policy-1")
    args = {"id": "R03"}
    good = ActionState(action_id="a1", tool="read_record", args=args, args_sha256=args_sha256(args),
                       side_effect=False, policy_version="policy-1",
                       token=signer.token("run", "a1", "read_record", args_sha256(args), "policy-1", False))
    assert ex.execute("run", good).answers[0].outcome == "ok"
    tampered = [
        ActionState(**{**good.__dict__, "token": ""}),
        ActionState(**{**good.__dict__, "args": {"id": "R08"}}),
        ActionState(**{**good.__dict__, "human_grant": True}),
        ActionState(**{**good.__dict__, "action_id": "a2"}),
    ]
    for action in tampered:
        with pytest.raises(UnauthorizedAction):
            ex.execute("run", action)
    with pytest.raises(UnauthorizedAction):
        ex.execute("another-run", good)
    with pytest.raises(UnauthorizedAction):
        Executor(world(tmp_path), signer, "policy-2").execute("run", good)
    with pytest.raises(UnauthorizedAction):
        Executor(world(tmp_path), Signer(b"other"), "policy-1").execute("run", good)


def test_no_public_executor_method_runs_a_tool_without_a_token(tmp_path: Path) -> None:
    """Every public way into the executor checks the token: an unsigned write reaches no tool."""
    w = world(tmp_path)
    ex = Executor(w, Signer(b"k"), "policy-1")
    args = {"key": "k1", "text": "unsigned"}
    unsigned = ActionState(action_id="a1", tool="save_draft", args=args, args_sha256=args_sha256(args),
                           side_effect=True, policy_version="policy-1")
    values = {"run_id": "run", "action": unsigned, "fault": None}
    public = [name for name, fn in inspect.getmembers(ex, callable)
              if not name.startswith("_") and name != "authorize"]
    assert "execute" in public
    for name in public:
        method = getattr(ex, name)
        params = inspect.signature(method).parameters
        with pytest.raises(UnauthorizedAction):
            method(**{p: values[p] for p in params if p in values})
    assert w.drafts.calls() == [] and w.drafts.drafts() == {}
