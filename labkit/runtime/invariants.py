"""The three invariants of the planner–executor machine, live and on replay: ``executed_implies_validated``,
``committed_implies_observed`` (a commit follows a typed success) and ``single_side_effect`` (unknown
writes count until settled)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from labkit.core.events import Event, Transitioned
from labkit.core.invariants import Invariant
from labkit.runtime.events import Observation, StatusChecked, ToolCalled, ToolResult, Validation


def _executed_implies_validated(state: Any, events: Sequence[Event]) -> str | None:
    last = events[-1] if events else None
    if not isinstance(last, ToolCalled | ToolResult):
        return None
    what = "ran" if isinstance(last, ToolResult) else "was about to run"
    allowed = [e for e in events[:-1] if isinstance(e, Validation) and e.verdict == "allowed"
               and e.action_id == last.action_id]
    if not allowed:
        return f"{last.tool} {what} for action {last.action_id!r}, which was never validated"
    match = [v for v in allowed if v.tool == last.tool and v.args_sha256 == last.args_sha256]
    if not match:
        return (f"{last.tool} {what} with arguments {last.args_sha256[:12]}, but action "
                f"{last.action_id} was validated for {allowed[-1].tool} with {allowed[-1].args_sha256[:12]}")
    if isinstance(last, ToolCalled) and all(v.policy_version != last.policy_version for v in match):
        return (f"action {last.action_id} ran under policy {last.policy_version!r}, "
                f"but was validated under {match[-1].policy_version!r}")
    return None


def observed_success(events: Sequence[Event], action_id: str) -> bool:
    """Whether ``events`` hold a typed success for ``action_id``: an observation, or a status query
    that found the draft. Invariant 2 and the comparison's log audits share this one definition."""
    return any((isinstance(e, Observation) and e.action_id == action_id)
               or (isinstance(e, StatusChecked) and e.action_id == action_id and e.outcome == "present")
               for e in events)


def _committed_implies_observed(state: Any, events: Sequence[Event]) -> str | None:
    last = events[-1] if events else None
    if not (isinstance(last, Transitioned) and last.trigger == "committed"):
        return None
    action_id = str(last.payload.get("action_id", ""))
    if not observed_success(events[:-1], action_id):
        return f"action {action_id!r} was committed, but no typed success was observed for it"
    return None


def side_effect_count(events: Sequence[Event], action_id: str) -> int:
    """Effects of one logical write that happened or may have: an ``ok`` is one; an unanswered, timed-out
    or interrupted call counts until a status query settles it."""
    done = pending = unsettled = 0
    for e in events:
        if isinstance(e, ToolCalled) and e.action_id == action_id and e.side_effect:
            pending += 1
        elif isinstance(e, ToolResult) and e.action_id == action_id and e.side_effect:
            pending = max(0, pending - 1)
            if e.outcome == "ok":
                done += 1
            elif e.outcome in ("timeout", "interrupted"):
                unsettled += 1
        elif isinstance(e, StatusChecked) and e.action_id == action_id and e.outcome != "unavailable":
            done += 1 if e.outcome == "present" else 0
            unsettled = 0
    return done + pending + unsettled


def _single_side_effect(state: Any, events: Sequence[Event]) -> str | None:
    last = events[-1] if events else None
    if not isinstance(last, ToolCalled | ToolResult | StatusChecked):
        return None
    if isinstance(last, ToolCalled | ToolResult) and not last.side_effect:
        return None
    count = side_effect_count(events, last.action_id)
    if count > 1:
        return (f"action {last.action_id!r} has taken effect, or may have, {count} times "
                "(at most once is allowed; settle an unknown write with a status query before retrying)")
    return None


EXECUTED_IMPLIES_VALIDATED = Invariant(
    "executed_implies_validated", _executed_implies_validated,
    "executed(action) => validated(action, policy_version)")
COMMITTED_IMPLIES_OBSERVED = Invariant(
    "committed_implies_observed", _committed_implies_observed,
    "committed(success) => observed(typed success)")
SINGLE_SIDE_EFFECT = Invariant(
    "single_side_effect", _single_side_effect, "side_effect_count(logical_action_id) <= 1")


def runtime_invariants() -> list[Invariant]:
    return [EXECUTED_IMPLIES_VALIDATED, COMMITTED_IMPLIES_OBSERVED, SINGLE_SIDE_EFFECT]
