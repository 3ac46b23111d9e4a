"""The planner–executor runtime: a small model proposes, an explicit state machine decides.

One concept per module: ``table`` (the table, faults, catalog entry); ``events`` and ``state`` (facts, the reducer
``reduce_run``); ``invariants``; ``records`` and ``redact`` (synthetic data, redaction); ``tools`` (:class:`ToolSpec`,
the draft area, :class:`World`); ``inject`` (how a fault changes one call); ``policy`` (permissions, budgets);
``validator`` and ``executor`` (allow with a token; run only with one, once per attempt, in EXECUTING); ``faults``,
``fuzz`` and ``bench``; ``planner``; ``task`` (tasks, goal predicate, verifier); ``loop`` and the ``free_loop`` it is
compared with; ``report``, ``metrics``, ``batch`` (seeded batches), ``traces`` (``data/traces``) and ``clock``.
"""

from labkit.runtime.clock import TickClock
from labkit.runtime.events import (
    CandidateRecord,
    DuplicateDelivery,
    ExecutionRefused,
    FaultInjected,
    Finding,
    HumanDecision,
    Interpreted,
    Observation,
    Proposed,
    Resumed,
    StatusChecked,
    ToolCalled,
    ToolResult,
    Usage,
    Validation,
)
from labkit.runtime.executor import Attempt, Delivery, Executor, UnauthorizedAction
from labkit.runtime.faults import Fault, FaultPlan, coverage_matrix, fault_states
from labkit.runtime.invariants import runtime_invariants, side_effect_count
from labkit.runtime.loop import PendingDecision, RunResult, Runtime, run_task
from labkit.runtime.metrics import run_metrics
from labkit.runtime.planner import (
    Candidate,
    DiffPlanner,
    Planner,
    PlannerContext,
    PlannerError,
    Proposal,
    ScriptPlanner,
    make_planner,
    parse_proposal,
    proposal_schema,
    register_planner,
)
from labkit.runtime.policy import Budget, Policy
from labkit.runtime.records import differences, differences_text, generate_records, load_records
from labkit.runtime.redact import redact, scrub_text
from labkit.runtime.report import TextTable, describe_event, render_trace
from labkit.runtime.state import ActionState, RunState, empty_run_state, outcome_view, reduce_run
from labkit.runtime.table import EVENT_SOURCES, FAULTS, STATES, TABLE_NAME, planner_executor_table, state_guards
from labkit.runtime.task import TASKS, Goal, Task, Verdict, goal_met, resolve_task, verify
from labkit.runtime.tools import INBOX_TOOLS, TOOLS, DraftStore, Observes, StatusQuery, ToolAnswer, ToolSpec, World
from labkit.runtime.validator import Signer, Validator, args_sha256

__all__ = [
    "EVENT_SOURCES",
    "FAULTS",
    "INBOX_TOOLS",
    "STATES",
    "TABLE_NAME",
    "TASKS",
    "TOOLS",
    "ActionState",
    "Attempt",
    "Budget",
    "Candidate",
    "CandidateRecord",
    "Delivery",
    "DiffPlanner",
    "DraftStore",
    "DuplicateDelivery",
    "ExecutionRefused",
    "Executor",
    "Fault",
    "FaultInjected",
    "FaultPlan",
    "Finding",
    "Goal",
    "HumanDecision",
    "Interpreted",
    "Observation",
    "Observes",
    "PendingDecision",
    "Planner",
    "PlannerContext",
    "PlannerError",
    "Policy",
    "Proposal",
    "Proposed",
    "Resumed",
    "RunResult",
    "RunState",
    "Runtime",
    "ScriptPlanner",
    "Signer",
    "StatusChecked",
    "StatusQuery",
    "Task",
    "TextTable",
    "TickClock",
    "ToolAnswer",
    "ToolCalled",
    "ToolResult",
    "ToolSpec",
    "UnauthorizedAction",
    "Usage",
    "Validation",
    "Validator",
    "Verdict",
    "World",
    "args_sha256",
    "coverage_matrix",
    "describe_event",
    "differences",
    "differences_text",
    "empty_run_state",
    "fault_states",
    "generate_records",
    "goal_met",
    "load_records",
    "make_planner",
    "outcome_view",
    "parse_proposal",
    "planner_executor_table",
    "proposal_schema",
    "redact",
    "reduce_run",
    "register_planner",
    "render_trace",
    "resolve_task",
    "run_metrics",
    "run_task",
    "runtime_invariants",
    "scrub_text",
    "side_effect_count",
    "state_guards",
    "verify",
]
