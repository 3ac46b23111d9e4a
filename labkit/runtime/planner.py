"""The planner interface: given a short, redacted context, propose at most K candidate actions.

A planner owns no permission. Implement ``name`` and ``propose(context) -> Proposal`` (raise
:class:`PlannerError` on an unreadable answer) and :func:`register_planner` a factory for ``--planner``."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from labkit.core.errors import LabkitError
from labkit.runtime.events import Usage
from labkit.runtime.records import differences_text

if TYPE_CHECKING:
    from labkit.runtime.task import Task

RATIONALE_MAX = 200


class Candidate(BaseModel):
    """One proposed action. ``rationale_summary`` is a short public summary, never hidden reasoning."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    action: str
    args: dict[str, Any] = Field(default_factory=dict)
    rationale_summary: str = Field("", max_length=RATIONALE_MAX)


class Proposal(BaseModel):
    """A planner's answer. No candidates (with ``claims_done``) is how a planner says "done"; the
    machine believes it only if the goal predicate holds."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    candidates: tuple[Candidate, ...] = ()
    note: str = Field("", max_length=RATIONALE_MAX)
    claims_done: bool = False
    usage: Usage = Field(default_factory=Usage)


class PlannerContext(BaseModel):
    """The slice of the run a planner sees (built from the log, so redacted)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    task_id: str
    goal: str
    state: str
    step: int  # planner calls so far in this run (0 for the first)
    k: int
    tools: tuple[Mapping[str, Any], ...]
    records: Mapping[str, Mapping[str, Any]]  # committed reads, redacted
    drafts: tuple[str, ...]  # keys of committed drafts
    feedback: str = ""
    remaining: Mapping[str, Any] = Field(default_factory=dict)
    policy_version: str = ""


class PlannerError(LabkitError):
    """The planner's answer could not be read; ``usage`` charges a failed call's tokens to the budget."""

    def __init__(self, message: str, hint: str | None = None, *, usage: Usage | None = None) -> None:
        super().__init__(message, hint)
        self.usage = usage or Usage()


def proposal_schema(context: PlannerContext) -> dict[str, Any]:
    """A JSON schema for a model's answer in this context: at most ``k`` candidates, each naming one
    of the offered tools with that tool's argument schema. Use it for grammar-constrained generation;
    the validator still checks everything (schema-valid is not the same as correct)."""
    from labkit.runtime.tools import TOOLS

    options = []
    for tool in context.tools:
        spec = TOOLS.get(str(tool.get("name")))
        if spec is None:
            continue
        options.append({
            "type": "object",
            "properties": {"action": {"const": spec.name}, "args": spec.args.model_json_schema(),
                           "rationale_summary": {"type": "string", "maxLength": RATIONALE_MAX}},
            "required": ["action", "args", "rationale_summary"], "additionalProperties": False})
    return {
        "type": "object",
        "properties": {
            "candidates": {"type": "array", "maxItems": context.k, "items": {"anyOf": options}},
            "note": {"type": "string", "maxLength": RATIONALE_MAX},
            "claims_done": {"type": "boolean"}},
        "required": ["candidates"], "additionalProperties": False}


def parse_proposal(text: str, usage: Usage | None = None) -> Proposal:
    """Read a model's JSON answer into a :class:`Proposal`, or raise :class:`PlannerError` saying why
    (carrying ``usage``, so that the tokens of an unreadable answer still count)."""
    import json

    from pydantic import ValidationError

    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise PlannerError(f"the answer is not JSON ({exc.msg} at column {exc.colno})",
                           "constrain the model with proposal_schema(context).", usage=usage) from None
    if not isinstance(data, dict):
        raise PlannerError(f"the answer is a JSON {type(data).__name__}, not an object", "answer with an object.",
                           usage=usage)
    try:
        return Proposal.model_validate({**data, "usage": usage or Usage()})
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(answer)"
        raise PlannerError(f"the answer does not fit a proposal: {where}: {first['msg']}",
                           "answer with {candidates: [{action, args, rationale_summary}], note, "
                           "claims_done}.", usage=usage) from None


@runtime_checkable
class Planner(Protocol):
    """Anything with a ``name`` and ``propose(context) -> Proposal``."""

    name: str

    def propose(self, context: PlannerContext) -> Proposal: ...


class DiffPlanner:
    """A scripted planner: read these records, then save their differences under this key (no key: read
    only), deciding from the context alone, so a resumed run proposes the same."""

    def __init__(self, reads: Sequence[str], key: str | None, name: str = "scripted-diff") -> None:
        self.reads = list(reads)
        self.key = key
        self.name = name
        self.calls = 0

    def propose(self, context: PlannerContext) -> Proposal:
        self.calls += 1
        note = f"{len([r for r in self.reads if r in context.records])} of {len(self.reads)} records read"
        for rid in self.reads:
            if rid not in context.records:
                return Proposal(candidates=(Candidate(action="read_record", args={"id": rid},
                                                      rationale_summary=f"{rid} is needed for the comparison"),),
                                note=note)
        if self.key is not None and self.key not in context.drafts:
            text = differences_text(context.records[r] for r in self.reads)
            return Proposal(candidates=(Candidate(action="save_draft", args={"text": text, "key": self.key},
                                                  rationale_summary="all records read; save the differences"),),
                            note=note)
        return Proposal(note="the draft is saved" if self.key else "the records are read", claims_done=True)


class ScriptPlanner:
    """Replays a fixed list of proposals, one per planner call (``context.step``), then says done."""

    def __init__(self, steps: Sequence[Proposal], name: str = "scripted-list") -> None:
        self.steps = list(steps)
        self.name = name
        self.calls = 0

    def propose(self, context: PlannerContext) -> Proposal:
        self.calls += 1
        if context.step < len(self.steps):
            return self.steps[context.step]
        return Proposal(claims_done=True)


PlannerFactory = Callable[["Task"], Planner]
_PLANNERS: dict[str, PlannerFactory] = {}


def register_planner(name: str, factory: PlannerFactory) -> None:
    """Make ``name`` usable in task files, ``labkit run --planner`` and resumed runs."""
    _PLANNERS[name] = factory


def planner_names() -> list[str]:
    return sorted(_PLANNERS)


def make_planner(name: str, task: Task) -> Planner:
    """The planner registered as ``name``, built for ``task``."""
    factory = _PLANNERS.get(name)
    if factory is None:
        raise LabkitError(f"unknown planner '{name}'", f"use one of: {', '.join(planner_names())}, or "
                          "register yours with labkit.runtime.planner.register_planner.")
    return factory(task)


def _diff_factory(task: Task) -> Planner:
    return DiffPlanner(task.goal.reads, task.goal.draft_key)  # no draft_key: a read-only task


register_planner("scripted-diff", _diff_factory)
