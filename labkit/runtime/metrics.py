"""Per-run numbers, read from the event log alone (so any stored run can be measured again)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from labkit.core.events import Event, InvariantViolated, RunStarted, Transitioned
from labkit.core.reducer import replay
from labkit.runtime.events import ExecutionRefused, FaultInjected, Proposed, ToolResult, Validation
from labkit.runtime.state import empty_run_state, reduce_run


def run_metrics(events: Sequence[Event]) -> dict[str, Any]:
    """Termination, planner calls and tokens, retries, rejections (by typed code) and time of one run."""
    state = replay(events, reduce_run, empty_run_state()).state
    proposals = [e for e in events if isinstance(e, Proposed)]
    verdicts = [e for e in events if isinstance(e, Validation)]
    findings = [f for v in verdicts for f in v.findings]
    moves = [e for e in events if isinstance(e, Transitioned)]
    first = events[0] if events and isinstance(events[0], RunStarted) else None
    return {
        "run_id": first.run_id if first else "",
        "task": first.params.get("task", {}).get("id", "") if first else "",
        "planner": first.params.get("planner", "") if first else "",
        "faults": first.params.get("faults", "") if first else "",
        "status": state.status,
        "outcome": state.outcome or ("paused" if state.waiting else "running"),
        "reason": state.reason,
        "planner_calls": state.planner_calls,
        "prompt_tokens": sum(p.usage.prompt_tokens for p in proposals),
        "completion_tokens": sum(p.usage.completion_tokens for p in proposals),
        "cost": state.cost,
        "unreadable_planner_outputs": sum(1 for p in proposals if p.problem),
        "done_claims": sum(1 for p in proposals if p.claims_done),
        "tool_calls": state.tool_calls,  # calls that ran (or may have): refused attempts are not calls
        "executions_refused": sum(1 for e in events if isinstance(e, ExecutionRefused)),
        "rejections": sum(1 for f in findings if f.verdict == "rejected"),
        "schema_invalid": sum(1 for f in findings if f.verdict == "rejected" and f.code == "bad_args"),
        "not_allowlisted": sum(1 for f in findings if f.verdict == "rejected"
                               and f.code in ("unknown_tool", "not_allowlisted")),
        "denials": sum(1 for e in events if (isinstance(e, Validation) and e.verdict == "denied")
                       or (isinstance(e, ToolResult) and e.outcome == "denied")),
        "retries": sum(1 for m in moves if m.source == m.dest and m.trigger != "duplicate_result"),
        "replans": sum(1 for m in moves if m.dest == "PLANNING" and m.trigger not in ("committed", "start")),
        "unknown_outcomes": sum(1 for m in moves if m.dest == "UNKNOWN" and m.source != "UNKNOWN"),
        "human_waits": sum(1 for m in moves if m.dest == "WAITING_HUMAN"),
        "invariant_violations": sum(1 for e in events if isinstance(e, InvariantViolated)),
        "faults_injected": sum(1 for e in events if isinstance(e, FaultInjected)),
        "events": len(events),
        "seconds": round(state.last_at - state.started_at, 6),
    }
