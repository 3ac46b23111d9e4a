"""The runtime: drives a planner–executor run one transition at a time.

planner -> validator -> executor -> observation -> reducer -> invariants -> append, the table choosing every
next state; an owed transition lets a killed run resume where it was. WAITING_HUMAN pauses until
:meth:`Runtime.decide`."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from labkit.core.errors import LabkitError
from labkit.core.events import Event, RunStarted
from labkit.core.machine import LabMachine
from labkit.core.store import EventLog
from labkit.runtime.events import (
    CandidateRecord,
    DuplicateDelivery,
    ExecutionRefused,
    FaultInjected,
    HumanDecision,
    Interpreted,
    Observation,
    Proposed,
    Resumed,
    StatusChecked,
    ToolCalled,
    ToolResult,
)
from labkit.runtime.executor import Executor, UnauthorizedAction, kill_runner
from labkit.runtime.faults import RUNNER, Fault, FaultPlan
from labkit.runtime.inject import disturb
from labkit.runtime.invariants import runtime_invariants
from labkit.runtime.planner import Planner, PlannerContext, PlannerError, Proposal, make_planner
from labkit.runtime.policy import Budget, Policy
from labkit.runtime.redact import redact, scrub_text
from labkit.runtime.state import RunState, commit_pending, empty_run_state, outcome_view, reduce_run
from labkit.runtime.table import planner_executor_table, state_guards
from labkit.runtime.task import Task, goal_met
from labkit.runtime.tools import TOOLS, CallContext, ToolSpec, World
from labkit.runtime.validator import DEFAULT_SECRET, Signer, Validator

RUNTIME_VERSION = "1"


@dataclass(frozen=True)
class PendingDecision:
    """The action a paused run waits on, as a person needs to see it."""

    action_id: str
    tool: str
    args: Mapping[str, Any]
    reason: str


@dataclass(frozen=True)
class RunResult:
    """How a run stands after :meth:`Runtime.run`: finished, or paused for a human."""

    run_id: str
    status: str
    outcome: str  # succeeded | failed | incomplete | needs_review | paused
    reason: str
    events: int
    planner_calls: int
    tool_calls: int
    state: RunState

    @property
    def succeeded(self) -> bool:
        return self.outcome == "succeeded"


class Runtime:
    """One run of a :class:`Task` with a planner over a :class:`World`; a non-empty ``log`` resumes it
    (settings from ``run_started``, the planner rebuilt by name when not given)."""

    def __init__(
        self,
        task: Task | None,
        planner: Planner | None,
        world: World,
        *,
        log: EventLog | None = None,
        clock: Callable[[], float] = time.time,
        secret: bytes = DEFAULT_SECRET,
        faults: FaultPlan | None = None,
        executor: Executor | None = None,
        on_violation: str = "FAILED",
        die: Callable[[str], None] = kill_runner,
        tools: Mapping[str, ToolSpec] = TOOLS,
    ) -> None:
        self.log = log if log is not None else EventLog()
        existing = list(self.log.events)
        logged_planner = ""
        if existing:
            task, faults, logged_planner = _from_run_started(existing[0], task)
        if task is None:
            raise LabkitError("a new run needs a task", "pass a Task (or resume an existing log).")
        self.task = task
        self.faults = faults if faults is not None else task.faults
        self.tools = dict(tools)
        self.policy: Policy = task.policy()
        if tools is not TOOLS:  # another tool set: the planner may use each of its visible tools
            self.policy = self.policy.model_copy(update={"allowlist": tuple(
                n for n, t in self.tools.items() if t.planner_visible)})
        self.budget: Budget = task.budget
        self.planner: Planner = planner if planner is not None else make_planner(logged_planner or task.planner, task)
        self.world = world
        self.clock = clock
        self.signer = Signer(secret)
        self.validator = Validator(self.policy, self.budget, self.signer, tools=self.tools)
        self._die = die  # what a ``crash`` fault calls: SIGKILL by default (see executor.kill_runner)
        self.executor = executor or Executor(world, self.signer, self.policy.version, tools=self.tools, die=die)
        self._inbox: list[tuple[str, int]] = []  # duplicate deliveries not yet recorded
        self._candidates: list[dict[str, Any]] | None = None  # the planner's unredacted candidates
        self.machine = LabMachine(
            planner_executor_table(),
            guards={**state_guards(), "goal_met": self._goal_met,
                    "escalate": lambda s, p: self.policy.escalate_denials},
            invariants=runtime_invariants(), reduce=reduce_run, empty=empty_run_state(), log=self.log,
            clock=clock, on_violation=on_violation,
            versions={"runtime": RUNTIME_VERSION, "policy": self.policy.version,
                      "tools": ",".join(sorted(self.tools))},
            params={"task": task.model_dump(mode="json"), "faults": self.faults.labels(),
                    "fault_plan": self.faults.model_dump(mode="json"), "planner": self.planner.name},
        )
        if existing and not self.machine.finished:
            # the gap since the last recorded event is down time, not work (see Budget.elapsed)
            s = self.state
            self.machine.record(Resumed(status=s.status, down_seconds=round(max(0.0, clock() - s.last_at), 6)))

    # ------------------------------------------------------------------ queries
    @property
    def state(self) -> RunState:
        return self.machine.state

    @property
    def events(self) -> Sequence[Event]:
        return self.log.events

    @property
    def run_id(self) -> str:
        return self.log.run_id

    def result(self) -> RunResult:
        s = self.state
        outcome = s.outcome or ("paused" if s.waiting else "running")
        reason = s.reason or (s.feedback if s.waiting else "")
        return RunResult(run_id=self.run_id, status=s.status, outcome=outcome, reason=reason,
                         events=len(self.log), planner_calls=s.planner_calls, tool_calls=s.tool_calls, state=s)

    def pending_decision(self) -> PendingDecision | None:
        """What a person must approve or refuse, while the run waits in WAITING_HUMAN (None once a
        decision is recorded: a runner stopped before acting on it owes the transition, not a new answer)."""
        s = self.state
        if not s.waiting or s.action is None or s.owed is not None:
            return None
        return PendingDecision(s.action.action_id, s.action.tool, dict(s.action.args), s.feedback)

    def context(self) -> PlannerContext:
        """The planner's view of the run: short, redacted, built from the state alone."""
        s = self.state
        now = self.clock()
        remaining: dict[str, Any] = {"steps": self.budget.max_steps - s.planner_calls,
                                     "tool_calls": self.budget.max_tool_calls - s.tool_calls}
        if self.budget.max_seconds is not None:
            remaining["seconds"] = round(self.budget.max_seconds - self.budget.elapsed(s, now), 3)
        if self.budget.max_tokens is not None:
            remaining["tokens"] = self.budget.max_tokens - s.tokens
        return PlannerContext(
            task_id=self.task.id, goal=self.task.description, state=s.status, step=s.planner_calls,
            k=self.task.k, tools=tuple(t.describe() for t in self.tools.values()
                                       if t.planner_visible and t.name in self.policy.allowlist),
            records={k: dict(v) for k, v in s.reads.items()}, drafts=tuple(s.drafts), feedback=s.feedback,
            remaining=remaining, policy_version=self.policy.version)

    # ------------------------------------------------------------------ driving
    def run(self, max_steps: int = 10_000) -> RunResult:
        """Step until the run finishes or waits for a human; return where it stands."""
        for _ in range(max_steps):
            if not self.step():
                break
        else:
            raise LabkitError(f"run {self.run_id} did not finish within {max_steps} steps",
                              "this is a runtime bug: budgets should have ended it; read its log.")
        return self.result()

    def step(self) -> bool:
        """Do one transition (and record the facts that lead to it). False when nothing can happen."""
        s = self.state
        if self.machine.finished:
            return False
        self._crash_at_boundary(s)
        if s.owed is not None:
            trigger, payload = s.owed
            self.machine.fire(trigger, **dict(payload))
            return True
        handler = getattr(self, f"_in_{s.status.lower()}")
        return bool(handler(s))

    def _crash_at_boundary(self, s: RunState) -> None:
        """Strike a due ``crash@n`` fault (once: the log remembers that it struck)."""
        for fault in self.faults.faults:
            if fault.target != RUNNER or len(self.log) < fault.nth:
                continue
            label = fault.label()
            if any(isinstance(e, FaultInjected) and e.fault == "crash" and e.detail == label for e in self.log.events):
                continue
            self._record(FaultInjected(fault="crash", state=s.status, target=RUNNER, detail=label))
            self._die(f"{label}: the runner is killed at a step boundary")
            raise RuntimeError("the crash fault's die() returned; it must end the runner")

    def decide(self, approve: bool, *, by: str = "human", note: str = "") -> RunResult:
        """Record a person's decision on the pending action and continue the run."""
        pending = self.pending_decision()
        if pending is None and self.state.waiting:
            raise LabkitError(f"run {self.run_id} already holds a decision it has not acted on yet",
                              "resume the run (labkit run with its --run-id) instead of deciding again.")
        if pending is None:
            raise LabkitError(f"run {self.run_id} is not waiting for a decision (it is in {self.state.status})",
                              "decide only while the run is in WAITING_HUMAN.")
        self.machine.record(HumanDecision(action_id=pending.action_id, decision="approve" if approve else "refuse",
                                          by=by, note=scrub_text(note)[:200]))
        return self.run()

    # ------------------------------------------------------------------ one handler per state
    def _goal_met(self, state: RunState, payload: Mapping[str, Any]) -> bool:
        return goal_met(self.task.goal, commit_pending(state))

    def _record(self, event: Event) -> None:
        self.machine.record(event)

    def _stop(self, outcome: str, reason: str) -> bool:
        self.machine.fire("budget_exhausted", outcome=outcome, reason=reason)
        return True

    def _fault(self, target: str, n: int) -> Fault | None:
        found = self.faults.at(target, n)
        return found[0] if found else None

    def _in_init(self, s: RunState) -> bool:
        self.machine.fire("start")
        return True

    def _in_planning(self, s: RunState) -> bool:
        why = self.budget.exhausted(s, self.clock())
        if why is None and s.plan_retries > self.budget.max_retries:
            why = f"retries in PLANNING: {s.plan_retries} replans without progress (max {self.budget.max_retries})"
        if why:
            return self._stop("incomplete", why)
        ctx = self.context()
        problem = ""
        try:
            proposal = self.planner.propose(ctx)
            if not isinstance(proposal, Proposal):
                raise PlannerError(f"planner returned {type(proposal).__name__}, not a Proposal")
        except PlannerError as exc:
            proposal, problem = Proposal(usage=exc.usage), exc.message
        fault = self._fault("planner", s.planner_calls + 1)
        if fault is not None:
            proposal = self._disturb(proposal, fault)
        if proposal.note:
            self._record(Interpreted(step=s.planner_calls, planner=self.planner.name,
                                     about_seq=s.last_observation_seq, note=scrub_text(proposal.note)))
        kept = proposal.candidates[: self.task.k]
        self._record(Proposed(
            step=s.planner_calls, planner=self.planner.name, claims_done=proposal.claims_done,
            candidates=[CandidateRecord(action=c.action, args=redact(c.args),
                                        rationale_summary=scrub_text(c.rationale_summary)) for c in kept],
            dropped=len(proposal.candidates) - len(kept), problem=scrub_text(problem)[:300],
            policy_version=self.policy.version, usage=proposal.usage))
        # the real (unredacted) candidates are what the validator checks
        self._candidates = [c.model_dump() for c in kept]
        return True

    def _disturb(self, proposal: Proposal, fault: Fault) -> Proposal:
        self._record(FaultInjected(fault=fault.kind, state="PLANNING", target="planner",
                                   detail=f"planner call {fault.nth}"))
        return disturb(proposal, fault)

    def _in_validating(self, s: RunState) -> bool:
        now = self.clock()
        if s.candidates:
            # the validator checks what the planner really proposed; after a resume only the logged
            # (redacted) candidates exist, and those are checked instead
            real = self._candidates
            candidates = real if real is not None and len(real) == len(s.candidates) else list(s.candidates)
            proposal = next(e for e in reversed(self.log.events) if isinstance(e, Proposed))
            verdict = self.validator.validate(s, candidates, now=now, proposed_under=proposal.policy_version)
        elif s.action is not None:  # a human approved the action in flight: validate it again, with the grant
            verdict = self.validator.validate(
                s, [{"action": s.action.tool, "args": dict(s.action.args)}], now=now,
                action_id=s.action.action_id, grant=True)
        else:
            raise LabkitError("VALIDATING with nothing to validate", "this is a runtime bug; read the log.")
        self._candidates = None
        self._record(verdict)
        return True

    def _in_executing(self, s: RunState) -> bool:
        action = s.action
        assert action is not None, "EXECUTING without an action"
        if action.call_open:  # the runner stopped during the call: its outcome is unknown
            self._record(ToolResult(action_id=action.action_id, attempt=action.attempts, tool=action.tool,
                                    args_sha256=action.args_sha256, outcome="interrupted",
                                    side_effect=action.side_effect,
                                    detail="the runner stopped before the answer was recorded"))
            return True
        if action.attempts > self.budget.max_retries:
            outcome = "needs_review" if action.side_effect else "incomplete"
            return self._stop(outcome, f"retries in EXECUTING: {action.tool} tried {action.attempts} times")
        try:  # the executor checks first: a refused attempt is its own fact, never a call
            attempt = self.executor.authorize(s)
        except UnauthorizedAction as exc:
            self._record(ExecutionRefused(action_id=action.action_id, attempt=action.attempts + 1, tool=action.tool,
                                          args_sha256=action.args_sha256, code=exc.code,
                                          reason=scrub_text(exc.message)[:300]))
            return True
        n = sum(1 for e in self.log.events if isinstance(e, ToolCalled) and e.tool == action.tool) + 1
        fault = self._fault(action.tool, n)
        if fault is not None:
            self._record(FaultInjected(fault=fault.kind, state="EXECUTING", target=action.tool,
                                       detail=f"{action.tool} call {n}"))
        self._record(ToolCalled(action_id=action.action_id, attempt=attempt.number, tool=action.tool,
                                args_sha256=action.args_sha256, policy_version=self.policy.version,
                                side_effect=action.side_effect))
        if self.machine.finished:  # an invariant stopped the run: the tool must not run
            return True
        delivery = self.executor.execute(attempt, fault)
        first = delivery.answers[0]
        self._record(ToolResult(action_id=action.action_id, attempt=attempt.number, tool=action.tool,
                                args_sha256=delivery.ran_args_sha256, outcome=first.outcome,
                                side_effect=action.side_effect, data=redact(dict(first.data)),
                                detail=scrub_text(first.detail)))
        self._inbox = [(action.action_id, attempt.number)] * (len(delivery.answers) - 1)
        if fault is not None and fault.kind == "duplicate_result" and not self.machine.finished:
            self._record(FaultInjected(fault=fault.kind, state="OBSERVING", target=action.tool,
                                       detail="the answer will arrive twice"))
        return True

    def _in_observing(self, s: RunState) -> bool:
        action = s.action
        assert action is not None, "OBSERVING without an action"
        if self._inbox:
            action_id, attempt = self._inbox.pop()
            self._record(DuplicateDelivery(action_id=action_id, attempt=attempt, tool=action.tool))
            return True
        result = next(e for e in reversed(self.log.events)
                      if isinstance(e, ToolResult) and e.action_id == action.action_id)
        observes = self.tools[action.tool].observation  # what the tool's declaration says its answer is
        self._record(Observation(action_id=action.action_id, tool=action.tool, kind=observes.kind,
                                 facts=observes.facts(result.data, action.args)))
        return True

    def _in_committing(self, s: RunState) -> bool:
        action_id = s.action.action_id if s.action else str((s.pending or {}).get("action_id", ""))
        self.machine.fire("committed", action_id=action_id)
        return True

    def _in_unknown(self, s: RunState) -> bool:
        action = s.action
        assert action is not None, "UNKNOWN without an action"
        if action.status_checks > self.budget.max_retries:
            return self._stop("needs_review", f"retries in UNKNOWN: {action.status_checks} status queries "
                              f"could not settle whether {action.action_id} took effect")
        late = self.budget.out_of_time(s, self.clock())
        if late:
            return self._stop("needs_review", f"{late}; the outcome of {action.action_id} is still unknown")
        query = self.tools[action.tool].status_query  # the write's declared status query
        assert query is not None, f"UNKNOWN after {action.tool}, which declares no status query"
        key = query.key(action.args)
        n = sum(1 for e in self.log.events if isinstance(e, StatusChecked)) + 1
        fault = self._fault(query.tool, n)
        if fault is not None:
            self._record(FaultInjected(fault=fault.kind, state="UNKNOWN", target=query.tool,
                                       detail=f"status query {n}"))
            self._record(StatusChecked(action_id=action.action_id, key=key, outcome="unavailable",
                                       detail=query.unavailable))
            return True
        status = self.tools[query.tool]
        args = status.args.model_validate(query.query_args(action.args))
        answer = status.call(self.world, args, CallContext(action_id=action.action_id))
        self._record(StatusChecked(action_id=action.action_id, key=key, outcome=query.outcome(action.args, answer),
                                   sha256=str(answer.data.get("sha256", ""))))
        return True

    def _in_waiting_human(self, s: RunState) -> bool:
        late = self.budget.waited_too_long(s, self.clock())
        if late:
            return self._stop("incomplete", late)
        return False


def _from_run_started(first: Event, task: Task | None) -> tuple[Task, FaultPlan, str]:
    """The task, fault plan and planner name a logged run was started with."""
    if not isinstance(first, RunStarted) or "task" not in first.params:
        raise LabkitError("the log does not start a planner–executor run", "resume a log written by labkit run.")
    logged = Task.model_validate(first.params["task"])
    plan = FaultPlan.model_validate(first.params.get("fault_plan", {}))
    if task is not None and task.id != logged.id:
        raise LabkitError(f"the log holds a run of task {logged.id!r}, not {task.id!r}",
                          "resume with the task that started the run (or pass task=None).")
    return logged, plan, str(first.params.get("planner", ""))


def run_task(task: Task, world: World, *, planner: Planner | None = None, log: EventLog | None = None,
             clock: Callable[[], float] = time.time, faults: FaultPlan | None = None) -> Runtime:
    """Build a runtime for ``task`` and run it until it finishes or waits; return the runtime."""
    runtime = Runtime(task, planner, world, log=log, clock=clock, faults=faults)
    runtime.run()
    return runtime


__all__ = ["PendingDecision", "RunResult", "Runtime", "outcome_view", "run_task"]
