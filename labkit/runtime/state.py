"""The run state of the planner–executor machine, exactly the fold of :func:`reduce_run` over a run's
events, including ``owed``: the transition the latest fact calls for, fired on resume after a crash."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from labkit.core.events import Event, InvariantViolated, RunStarted, Transitioned
from labkit.runtime.events import (
    DuplicateDelivery,
    ExecutionRefused,
    FaultInjected,
    HumanDecision,
    Observation,
    Proposed,
    Resumed,
    StatusChecked,
    ToolCalled,
    ToolResult,
    Validation,
)

SUCCEEDED = "SUCCEEDED"
FAILED = "FAILED"

# How each typed tool outcome moves the machine (interrupted = the answer was never recorded).
OUTCOME_TRIGGER = {"ok": "ok", "error": "error", "denied": "denied", "timeout": "timeout",
                   "interrupted": "timeout"}


@dataclass(frozen=True)
class ObservationKind:
    """How one observation kind's facts are committed: ``into`` the :class:`RunState` mapping, ``key`` the
    fact naming the entry, ``keep`` the facts kept (None: all)."""

    name: str
    into: str
    key: str
    keep: tuple[str, ...] | None = None

    def commit(self, entries: Mapping[str, Any], facts: Mapping[str, Any]) -> dict[str, Any]:
        entry = dict(facts) if self.keep is None else {f: facts.get(f, "") for f in self.keep}
        return {**entries, str(facts.get(self.key, "")): entry}


OBSERVATION_KINDS: dict[str, ObservationKind] = {k.name: k for k in (
    ObservationKind("record_read", into="reads", key="id"),  # what was read: record id -> the redacted record
    ObservationKind("draft_saved", into="drafts", key="key", keep=("sha256", "text")),  # key -> {sha256, text}
)}


@dataclass(frozen=True)
class ActionState:
    """The logical action in flight: validated (or denied) once, possibly executed several times."""

    action_id: str
    tool: str
    args: Mapping[str, Any]
    args_sha256: str
    side_effect: bool
    policy_version: str
    token: str = ""  # empty while the action is denied and waits for a human
    human_grant: bool = False
    attempts: int = 0  # ToolCalled events for this action
    call_open: bool = False  # a ToolCalled without its ToolResult: outcome unknown
    status_checks: int = 0
    last_outcome: str = ""
    last_status: str = ""  # what the latest status query since the last attempt found ("" if none)


@dataclass(frozen=True)
class RunState:
    """Everything a planner–executor run knows, rebuilt from its log alone."""

    status: str = ""
    table: str = ""
    seq: int = -1
    transitions: int = 0
    violations: tuple[str, ...] = ()
    run_id: str = ""
    params: Mapping[str, Any] = field(default_factory=dict)
    started_at: float = 0.0
    last_at: float = 0.0
    waiting_since: float = -1.0  # when the run entered WAITING_HUMAN (-1: not waiting)
    waited: float = 0.0  # seconds spent waiting for people, which the time budget does not count
    down: float = 0.0  # seconds the run was stopped (a crash) before a resume, not counted either
    # budget use
    planner_calls: int = 0
    tokens: int = 0
    cost: float = 0.0
    tool_calls: int = 0
    plan_retries: int = 0  # re-entries of PLANNING since the last commit
    actions: int = 0  # logical action ids handed out
    # the step in progress
    candidates: tuple[Mapping[str, Any], ...] = ()
    claims_done: bool = False
    action: ActionState | None = None
    pending: Mapping[str, Any] | None = None  # observed facts waiting to be committed
    owed: tuple[str, Mapping[str, Any]] | None = None
    feedback: str = ""  # what the planner should know about the last step (an error, a rejection)
    last_observation_seq: int = -1
    # what has been committed
    reads: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # record id -> redacted record
    drafts: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # key -> {sha256, text}
    # how it ended
    outcome: str = ""  # succeeded | failed | incomplete | needs_review ("" while running)
    reason: str = ""
    faults: tuple[tuple[str, str], ...] = ()  # (fault, state) annotations, for coverage

    @property
    def finished(self) -> bool:
        return self.status in (SUCCEEDED, FAILED)

    @property
    def waiting(self) -> bool:
        return self.status == "WAITING_HUMAN"


def empty_run_state() -> RunState:
    return RunState()


def commit_pending(state: RunState) -> RunState:
    """The state with observed-but-uncommitted facts committed: the goal guard decides on it before the
    commit fires."""
    pending = state.pending
    if pending is None:
        return state
    kind = OBSERVATION_KINDS.get(str(pending.get("kind", "")))
    if kind is None:
        return dataclasses.replace(state, pending=None)
    return dataclasses.replace(state, pending=None, **{kind.into: kind.commit(getattr(state, kind.into),
                                                                              pending.get("facts", {}))})


def _owe(state: RunState, trigger: str, **payload: Any) -> RunState:
    return dataclasses.replace(state, owed=(trigger, payload))


def _on_transition(state: RunState, event: Transitioned) -> RunState:
    s = dataclasses.replace(state, status=event.dest, transitions=state.transitions + 1, owed=None)
    if event.dest == "WAITING_HUMAN" and event.source != "WAITING_HUMAN":
        s = dataclasses.replace(s, waiting_since=event.at)
    elif event.source == "WAITING_HUMAN" and event.dest != "WAITING_HUMAN" and s.waiting_since >= 0:
        s = dataclasses.replace(s, waited=s.waited + event.at - s.waiting_since, waiting_since=-1.0)
    trigger = event.trigger
    if trigger in ("allowed", "denied"):  # the proposal is settled; a denied action waits in `action`
        s = dataclasses.replace(s, candidates=())
    elif trigger == "no_proposal":
        s = dataclasses.replace(s, candidates=(), plan_retries=s.plan_retries + 1,
                                feedback="you proposed nothing, but the goal is not verified yet")
    elif trigger == "rejected":
        s = dataclasses.replace(s, candidates=(), plan_retries=s.plan_retries + 1)
    elif trigger == "error":
        s = dataclasses.replace(s, action=None, plan_retries=s.plan_retries + 1)
    elif trigger == "committed":
        s = commit_pending(s)
        s = dataclasses.replace(s, action=None, plan_retries=0, feedback="")
    if event.dest in (SUCCEEDED, FAILED):
        outcome = str(event.payload.get("outcome") or ("succeeded" if event.dest == SUCCEEDED else "failed"))
        reason = str(event.payload.get("reason") or (
            f"goal predicate holds (after '{trigger}')" if event.dest == SUCCEEDED else trigger))
        s = dataclasses.replace(s, outcome=outcome, reason=reason)
    return s


def _with_action(state: RunState, **changes: Any) -> RunState:
    if state.action is None:
        return state
    return dataclasses.replace(state, action=dataclasses.replace(state.action, **changes))


def _on_validation(s: RunState, e: Validation) -> RunState:
    if e.verdict in ("allowed", "denied"):
        same = s.action is not None and s.action.action_id == e.action_id
        action = ActionState(
            action_id=e.action_id, tool=e.tool, args=dict(e.args), args_sha256=e.args_sha256,
            side_effect=e.side_effect, policy_version=e.policy_version, token=e.token,
            human_grant=e.human_grant,
            attempts=s.action.attempts if same and s.action else 0)
        s = dataclasses.replace(s, action=action, actions=s.actions if same else s.actions + 1)
        if e.verdict == "allowed":
            return _owe(s, "allowed", action_id=e.action_id)
        return _owe(dataclasses.replace(s, feedback=e.reason), "denied", action_id=e.action_id,
                    outcome="failed", reason=f"denied: {e.reason}")
    if e.verdict == "rejected":
        return _owe(dataclasses.replace(s, feedback=e.reason), "rejected", reason=e.reason)
    return _owe(s, "budget_exhausted", outcome="incomplete", reason=f"budget: {e.reason}")


def _on_tool_result(s: RunState, e: ToolResult) -> RunState:
    s = _with_action(s, call_open=False, last_outcome=e.outcome)
    feedback = s.feedback
    if e.outcome in ("error", "denied"):
        feedback = f"{e.tool} {e.outcome}: {e.detail}"
    payload: dict[str, Any] = {"action_id": e.action_id, "attempt": e.attempt}
    if e.outcome == "denied":
        payload.update(outcome="failed", reason=f"denied by {e.tool}: {e.detail}")
    return _owe(dataclasses.replace(s, feedback=feedback), OUTCOME_TRIGGER[e.outcome], **payload)


def _on_status(s: RunState, e: StatusChecked) -> RunState:
    checks = s.action.status_checks + 1 if s.action else 1
    if s.action is not None and s.action.action_id == e.action_id:
        s = _with_action(s, status_checks=checks, last_status=e.outcome)
    if e.outcome == "present":
        args = s.action.args if s.action else {}
        facts = {"key": e.key, "sha256": e.sha256, "text": args.get("text", "")}
        s = dataclasses.replace(s, pending={"kind": "draft_saved", "facts": facts, "action_id": e.action_id},
                                last_observation_seq=e.seq)
        return _owe(s, "confirmed_present", action_id=e.action_id)
    if e.outcome == "absent":
        return _owe(s, "confirmed_absent", action_id=e.action_id)
    return _owe(s, "status_unavailable", action_id=e.action_id, detail=e.detail)


def reduce_run(state: RunState, event: Event) -> RunState:
    """Fold one event into the run state. Pure: the same events always give the same state."""
    s = dataclasses.replace(state, seq=event.seq, last_at=event.at)
    if isinstance(event, Transitioned):
        return _on_transition(s, event)
    if isinstance(event, RunStarted):
        return RunState(status=event.initial, table=event.table, seq=event.seq, run_id=event.run_id,
                        params=dict(event.params), started_at=event.at, last_at=event.at)
    if isinstance(event, InvariantViolated):
        s = dataclasses.replace(s, status=event.dest, violations=(*s.violations, event.invariant), owed=None)
        if event.dest in (SUCCEEDED, FAILED):
            s = dataclasses.replace(s, outcome="failed", reason=f"invariant {event.invariant}: {event.detail}")
        return s
    if isinstance(event, Proposed):
        s = dataclasses.replace(
            s, planner_calls=s.planner_calls + 1, tokens=s.tokens + event.usage.tokens,
            cost=s.cost + event.usage.cost, candidates=tuple(c.model_dump() for c in event.candidates),
            claims_done=event.claims_done)
        return _owe(s, "proposed") if event.candidates else _owe(s, "no_proposal")
    if isinstance(event, Validation):
        return _on_validation(s, event)
    if isinstance(event, ToolCalled):
        attempts = s.action.attempts + 1 if s.action else 1
        s = _with_action(s, attempts=attempts, call_open=True, last_status="")
        return dataclasses.replace(s, tool_calls=s.tool_calls + 1)
    if isinstance(event, ExecutionRefused):  # the tool never ran: nothing is counted as a call
        return _owe(dataclasses.replace(s, feedback=f"the executor refused {event.tool}: {event.reason}"),
                    "error", action_id=event.action_id, reason=f"executor refused ({event.code})")
    if isinstance(event, ToolResult):
        return _on_tool_result(s, event)
    if isinstance(event, DuplicateDelivery):
        return _owe(s, "duplicate_result", action_id=event.action_id)
    if isinstance(event, Observation):
        s = dataclasses.replace(s, pending={"kind": event.kind, "facts": dict(event.facts),
                                            "action_id": event.action_id},
                                last_observation_seq=event.seq)
        return _owe(s, "observed" if event.via == "tool_result" else "confirmed_present",
                    action_id=event.action_id)
    if isinstance(event, StatusChecked):
        return _on_status(s, event)
    if isinstance(event, HumanDecision):
        if event.decision == "approve":
            return _owe(s, "approved", action_id=event.action_id)
        return _owe(s, "refused", action_id=event.action_id, outcome="failed",
                    reason=f"a human refused action {event.action_id}" + (f": {event.note}" if event.note else ""))
    if isinstance(event, FaultInjected):
        return dataclasses.replace(s, faults=(*s.faults, (event.fault, event.state)))
    if isinstance(event, Resumed):  # keeps `owed`: the resumed runtime fires it first
        if s.waiting_since >= 0:  # the pause already leaves this time out of the budget
            return s
        return dataclasses.replace(s, down=s.down + event.down_seconds)
    return s


def outcome_view(state: RunState) -> dict[str, Any]:
    """The part of a final state that must not depend on how the run got there (uninterrupted or resumed)."""
    return {
        "status": state.status,
        "outcome": state.outcome,
        "reads": sorted(state.reads),
        "drafts": {k: v.get("sha256", "") for k, v in sorted(state.drafts.items())},
    }
