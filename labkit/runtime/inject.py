"""The fault injector: how one fault changes one call, read from the tool's declaration, alike in every
arm (:func:`deliver`, :func:`disturb`). Timeouts give no answer (``write_timeout:landed``: the tool acted,
its ``lost_reply`` answers); ``denied``; ``duplicate_result``; ``crash`` (``die`` must not return)."""

from __future__ import annotations

from collections.abc import Callable

from pydantic import BaseModel

from labkit.runtime.faults import Fault
from labkit.runtime.planner import Candidate, Proposal
from labkit.runtime.tools import CallContext, ToolAnswer, ToolSpec, World

NO_ANSWER = "no answer before the deadline"
INJECTED_DENIAL = "permission denied by the data owner (injected)"
UNKNOWN_TOOL = "delete_drafts"  # what an ``unknown_tool`` fault makes the planner propose


def deliver(spec: ToolSpec, world: World, args: BaseModel, ctx: CallContext, fault: Fault | None,
            die: Callable[[str], None]) -> tuple[ToolAnswer, ...]:
    """Run ``spec`` once with ``fault`` applied: the answers that come back (two for a duplicate)."""
    kind = fault.kind if fault is not None else None
    if fault is not None and kind == "crash":  # the runner dies inside the call, before or after the tool acted
        if not fault.landed:
            die(f"crash before {spec.name} ran")
        spec.call(world, args, ctx)
        die(f"crash after {spec.name} ran")
        raise RuntimeError("the crash fault's die() returned; it must end the runner")
    if fault is not None and kind == "write_timeout" and fault.landed:
        spec.call(world, args, ctx)
        answer = ToolAnswer("timeout", detail=spec.lost_reply)
    elif kind in ("read_timeout", "write_timeout"):
        answer = ToolAnswer("timeout", detail=NO_ANSWER)
    elif kind == "denied":
        answer = ToolAnswer("denied", detail=INJECTED_DENIAL)
    else:
        answer = spec.call(world, args, ctx)
    return (answer, answer) if kind == "duplicate_result" else (answer,)


def disturb(proposal: Proposal, fault: Fault) -> Proposal:
    """The proposal as a planner fault leaves it: a premature "done", an unknown tool, or bad arguments
    (a wrong type and a stray field, as small models produce) in place of the first candidate."""
    if fault.kind == "premature_done":
        return Proposal(note=proposal.note, claims_done=True, usage=proposal.usage)
    if not proposal.candidates:
        return proposal
    first, *rest = proposal.candidates
    if fault.kind == "unknown_tool":
        bad = Candidate(action=UNKNOWN_TOOL, args={}, rationale_summary=first.rationale_summary)
    else:
        bad = Candidate(action=first.action, args={**{k: 12345 for k in first.args}, "extra": True},
                        rationale_summary=first.rationale_summary)
    return proposal.model_copy(update={"candidates": (bad, *rest)})
