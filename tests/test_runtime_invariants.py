"""Each of the three invariants fires when a deliberately broken part breaks it.

The broken parts are small subclasses of the real ones, each with one honest bug: an executor that
runs something other than what was validated, a runtime that writes twice, one that retries an
unknown write blindly, one that takes an unknown write for a success.
"""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from labkit.core.errors import IllegalTransition, InvariantViolation
from labkit.core.events import InvariantViolated, RunStarted, Transitioned
from labkit.core.machine import LabMachine
from labkit.core.store import EventLog
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
from labkit.runtime.executor import Attempt, Delivery, UnauthorizedAction
from labkit.runtime.faults import Fault
from labkit.runtime.state import RunState


def world(tmp_path: Path) -> World:
    return World(DraftStore(tmp_path / "drafts.sqlite", "w"))


def violations(rt: Runtime) -> list[str]:
    return [e.invariant for e in rt.events if isinstance(e, InvariantViolated)]


class SwappingExecutor(Executor):
    """Bug: ignores the token and runs the action with other arguments."""

    def execute(self, attempt: Attempt, fault: Fault | None = None) -> Delivery:
        action = attempt.action
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


def test_the_table_refuses_a_blind_retry_of_an_unknown_write(tmp_path: Path) -> None:
    """UNKNOWN --confirmed_absent--> EXECUTING needs a recorded status query that found nothing."""
    rt = BlindRetryRuntime(TASKS["diff3"], None, world(tmp_path), clock=TickClock(),
                           faults=FaultPlan.parse("write_timeout@1:landed"))
    with pytest.raises(IllegalTransition, match=r"confirmed_absent.*guard holds: status_checked"):
        rt.run()
    assert rt.state.status == "UNKNOWN" and isinstance(rt.events[-1], Transitioned)  # nothing was recorded
    assert rt.events[-1].dest == "UNKNOWN"
    assert len(rt.world.drafts.calls()) == 1


def test_a_status_query_that_found_the_write_absent_opens_the_retry(tmp_path: Path) -> None:
    rt = Runtime(TASKS["diff3"], None, world(tmp_path), clock=TickClock(),
                 faults=FaultPlan.parse("write_timeout@1:lost"))
    assert rt.run().outcome == "succeeded"
    checks = [e for e in rt.events if isinstance(e, StatusChecked)]
    retry = next(e for e in rt.events if isinstance(e, Transitioned) and e.trigger == "confirmed_absent")
    assert [c.outcome for c in checks] == ["absent"] and checks[0].seq < retry.seq


def test_invariant_3_still_catches_a_blind_retry_behind_a_lying_guard(tmp_path: Path) -> None:
    """Defence in depth: a runtime whose status guard lies is stopped by the side-effect count."""
    rt = BlindRetryRuntime(TASKS["diff3"], None, world(tmp_path), clock=TickClock(),
                           faults=FaultPlan.parse("write_timeout@1:landed"))
    rt.machine.guards["status_checked"] = lambda s, p: True
    rt.machine = LabMachine(rt.machine.table, guards=rt.machine.guards, invariants=rt.machine.invariants,
                            reduce=rt.machine.reduce, empty=rt.machine.empty, log=rt.log, clock=rt.clock,
                            on_violation="FAILED")
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
def executing(action: ActionState, run_id: str = "run", status: str = "EXECUTING") -> RunState:
    return RunState(status=status, run_id=run_id, action=action)


def signed_read(signer: Signer) -> ActionState:
    args = {"id": "R03"}
    return ActionState(action_id="a1", tool="read_record", args=args, args_sha256=args_sha256(args),
                       side_effect=False, policy_version="policy-1",
                       token=signer.token("run", "a1", "read_record", args_sha256(args), "policy-1", False))


def test_the_executor_refuses_actions_without_a_matching_token(tmp_path: Path) -> None:
    signer = Signer(b"k")
    ex = Executor(world(tmp_path), signer, "policy-1")
    good = signed_read(signer)
    assert ex.execute(ex.authorize(executing(good))).answers[0].outcome == "ok"
    tampered = {
        "no_token": ActionState(**{**good.__dict__, "token": ""}),
        "bad_token": ActionState(**{**good.__dict__, "args": {"id": "R08"}}),
    }
    for code, action in tampered.items():
        with pytest.raises(UnauthorizedAction) as err:
            ex.authorize(executing(action))
        assert err.value.code == code
    for action in (ActionState(**{**good.__dict__, "human_grant": True}),
                   ActionState(**{**good.__dict__, "action_id": "a2"})):
        with pytest.raises(UnauthorizedAction, match="no valid validation token"):
            ex.authorize(executing(action))
    with pytest.raises(UnauthorizedAction, match="no valid validation token"):
        ex.authorize(executing(good, run_id="another-run"))
    with pytest.raises(UnauthorizedAction) as err:
        Executor(world(tmp_path), signer, "policy-2").authorize(executing(good))
    assert err.value.code == "policy_version"
    with pytest.raises(UnauthorizedAction) as err:
        Executor(world(tmp_path), Signer(b"other"), "policy-1").authorize(executing(good))
    assert err.value.code == "bad_token"


@pytest.mark.parametrize("status", ["VALIDATING", "OBSERVING", "UNKNOWN", "WAITING_HUMAN", "SUCCEEDED", "FAILED"])
def test_the_executor_refuses_a_signed_write_outside_executing(tmp_path: Path, status: str) -> None:
    w = world(tmp_path)
    signer = Signer(b"k")
    args = {"key": "k1", "text": "signed"}
    write = ActionState(action_id="a1", tool="save_draft", args=args, args_sha256=args_sha256(args),
                        side_effect=True, policy_version="policy-1",
                        token=signer.token("run", "a1", "save_draft", args_sha256(args), "policy-1", False))
    ex = Executor(w, signer, "policy-1")
    with pytest.raises(UnauthorizedAction) as err:
        ex.authorize(executing(write, status=status))
    assert err.value.code == "out_of_state"
    assert w.drafts.calls() == []
    assert ex.execute(ex.authorize(executing(write))).answers[0].outcome == "ok"  # the same action, in EXECUTING
    assert len(w.drafts.calls()) == 1


def test_the_executor_refuses_a_replayed_attempt(tmp_path: Path) -> None:
    """The same attempt of the same action runs once: authorizing it again, or running it twice, is refused."""
    w = world(tmp_path)
    signer = Signer(b"k")
    args = {"key": "k1", "text": "once"}
    write = ActionState(action_id="a1", tool="save_draft", args=args, args_sha256=args_sha256(args),
                        side_effect=True, policy_version="policy-1",
                        token=signer.token("run", "a1", "save_draft", args_sha256(args), "policy-1", False))
    ex = Executor(w, signer, "policy-1")
    state = executing(write)
    attempt = ex.authorize(state)
    assert attempt.number == 1
    ex.execute(attempt)
    with pytest.raises(UnauthorizedAction) as err:
        ex.execute(attempt)  # the same attempt again
    assert err.value.code == "replayed"
    with pytest.raises(UnauthorizedAction) as err:
        ex.authorize(state)  # the stale state that was already honoured
    assert err.value.code == "replayed"
    assert len(w.drafts.calls()) == 1
    # a run state that recorded the first attempt asks for the second one, which is a new attempt
    retried = executing(ActionState(**{**write.__dict__, "attempts": 1}))
    assert ex.authorize(retried).number == 2


def test_no_public_executor_method_runs_a_tool_without_a_token(tmp_path: Path) -> None:
    """Every public way into the executor checks the token: an unsigned write reaches no tool."""
    w = world(tmp_path)
    ex = Executor(w, Signer(b"k"), "policy-1")
    args = {"key": "k1", "text": "unsigned"}
    unsigned = ActionState(action_id="a1", tool="save_draft", args=args, args_sha256=args_sha256(args),
                           side_effect=True, policy_version="policy-1")
    values = {"state": executing(unsigned), "attempt": Attempt("run", unsigned, 1), "fault": None}
    public = [name for name, fn in inspect.getmembers(ex, callable) if not name.startswith("_")]
    assert {"authorize", "execute"} <= set(public)
    for name in public:
        method = getattr(ex, name)
        params = inspect.signature(method).parameters
        with pytest.raises(UnauthorizedAction):
            method(**{p: values[p] for p in params if p in values})
    assert w.drafts.calls() == [] and w.drafts.drafts() == {}


class ForgingRuntime(Runtime):
    """Bug (or attack): hands the executor the action with a token that the validator never issued."""

    def _in_executing(self, s: RunState) -> bool:
        if s.action is not None and not s.action.call_open:
            forged = ActionState(**{**s.action.__dict__, "token": "f" * 64})
            s = RunState(**{**s.__dict__, "action": forged})
        return super()._in_executing(s)


def test_a_forged_token_is_refused_and_the_log_shows_a_refusal_not_a_call(tmp_path: Path) -> None:
    from labkit.runtime import run_metrics
    from labkit.runtime.events import ExecutionRefused
    from labkit.runtime.report import render_trace

    w = world(tmp_path)
    rt = ForgingRuntime(TASKS["diff3"], None, w, clock=TickClock())
    r = rt.run()
    refusals = [e for e in rt.events if isinstance(e, ExecutionRefused)]
    assert refusals and {e.code for e in refusals} == {"bad_token"}
    assert not any(isinstance(e, ToolCalled | ToolResult) for e in rt.events)
    assert w.drafts.calls() == [] and r.tool_calls == 0
    assert r.outcome == "incomplete"  # every attempt refused: the run replans until its retries run out
    m = run_metrics(rt.events)
    assert m["tool_calls"] == 0 and m["executions_refused"] == len(refusals)
    text = render_trace(rt.events)
    assert "executor REFUSES read_record" in text and "executor calls" not in text
    after = rt.events[refusals[0].seq + 1]
    assert isinstance(after, Transitioned) and (after.source, after.trigger, after.dest) == \
        ("EXECUTING", "error", "PLANNING")


def test_an_executor_with_another_key_refuses_and_nothing_runs(tmp_path: Path) -> None:
    """An unsigned-for-this-executor action (the runtime signs with one key, the executor checks another)."""
    from labkit.runtime.events import ExecutionRefused

    w = world(tmp_path)
    rt = Runtime(TASKS["diff3"], None, w, clock=TickClock(), executor=Executor(w, Signer(b"other"), "policy-1"))
    rt.run()
    assert any(isinstance(e, ExecutionRefused) for e in rt.events)
    assert not any(isinstance(e, ToolCalled) for e in rt.events) and w.drafts.calls() == []


def test_a_run_ended_by_a_result_records_nothing_after_it(tmp_path: Path) -> None:
    """A result that breaks invariant 1 ends the run; the duplicate-delivery annotation that would follow it is
    not written (a finished run stays finished), and the run ends cleanly instead of raising."""
    w = world(tmp_path)
    rt = Runtime(TASKS["diff3"], None, w, clock=TickClock(), executor=SwappingExecutor(w, Signer(), "policy-1"),
                 faults=FaultPlan.parse("duplicate_result@1"))
    r = rt.run()
    assert (r.status, violations(rt)) == ("FAILED", ["executed_implies_validated"])
    assert isinstance(rt.events[-1], InvariantViolated)
