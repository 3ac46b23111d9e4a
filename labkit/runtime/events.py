"""The facts a planner–executor run records besides transitions: ``Proposed``, ``Interpreted``,
``Validation``, ``ToolCalled``/``ToolResult``, ``ExecutionRefused`` and ``Observation``. A fact that decides
the next transition names it (``RunState.owed``) so a resumed run fires it; tool data is redacted."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from labkit.core.events import Event, register_event


class Usage(BaseModel):
    """What one planner call cost. Scripted planners report zeros; LLM planners report real counts."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class CandidateRecord(BaseModel):
    """One proposed action as it is stored (arguments redacted)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    action: str
    args: dict[str, Any] = Field(default_factory=dict)
    rationale_summary: str = ""


@register_event
class Proposed(Event):
    """The planner proposed up to K candidates (or none: ``claims_done`` says whether it said "done")."""

    type: Literal["proposed"] = "proposed"
    step: int
    planner: str
    candidates: list[CandidateRecord] = Field(default_factory=list)
    dropped: int = 0  # candidates beyond K that were cut off
    claims_done: bool = False
    problem: str = ""  # why the planner's answer could not be read (then there are no candidates)
    policy_version: str = ""
    usage: Usage = Field(default_factory=Usage)


@register_event
class Interpreted(Event):
    """The planner's own reading of the latest observation: a derived record, not a fact."""

    type: Literal["interpreted"] = "interpreted"
    step: int
    planner: str
    about_seq: int  # the observation it refers to (-1: none yet)
    note: str


# Why the validator did not allow something, as a type rather than as wording: metrics and reports
# classify by this code, so rephrasing a message can never move a count.
FindingCode = Literal[
    "unknown_tool",  # no planner-visible tool of that name
    "not_allowlisted",  # a real tool, but not in the policy's allowlist
    "bad_args",  # arguments not an object, or not fitting the tool's schema
    "personal_data",  # arguments carry an id or phone number
    "already_saved",  # the same draft text is already saved in this run
    "policy_version",  # the proposal was made under another policy version
    "forbidden",  # the policy forbids this record (a denial: a person may grant it)
    "budget",  # tool calls or time used up
    "no_candidate",  # the proposal held nothing to check
]


class Finding(BaseModel):
    """The validator's verdict on one candidate; ``code`` says why it was not allowed (None if allowed)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    index: int
    action: str
    verdict: Literal["allowed", "rejected", "denied", "over_budget"]
    reason: str = ""
    code: FindingCode | None = None


@register_event
class Validation(Event):
    """The validator's decision on a proposal; ``verdict`` is the transition it owes. Allowed: the exact
    ``args``, their digest and the HMAC ``token``; refused: the typed ``code`` and a ``reason`` for people."""

    type: Literal["validation"] = "validation"
    verdict: Literal["allowed", "rejected", "denied", "over_budget"]
    findings: list[Finding] = Field(default_factory=list)
    action_id: str = ""
    tool: str = ""
    args: dict[str, Any] = Field(default_factory=dict)
    args_sha256: str = ""
    side_effect: bool = False
    policy_version: str = ""
    token: str = ""
    human_grant: bool = False
    reason: str = ""
    code: FindingCode | None = None  # the deciding finding's code when not allowed


@register_event
class ToolCalled(Event):
    """The executor authorized this attempt and is about to run the tool (write-ahead: without a
    ``ToolResult`` the outcome is unknown; a refused attempt is :class:`ExecutionRefused` instead)."""

    type: Literal["tool_called"] = "tool_called"
    action_id: str
    attempt: int
    tool: str
    args_sha256: str
    policy_version: str
    side_effect: bool


# Why the executor refused an attempt, as a type (see ``labkit.runtime.executor.UnauthorizedAction``).
RefusalCode = Literal[
    "unknown_tool",  # the executor has no tool of that name
    "no_token",  # the action carries no validation token
    "bad_token",  # the token does not match the action, the run or the key
    "policy_version",  # validated under another policy than the executor enforces
    "out_of_state",  # the run is not in EXECUTING, or has no such action in flight
    "replayed",  # this attempt of this action was already authorized once
]


@register_event
class ExecutionRefused(Event):
    """The executor refused an attempt: the tool did not run, and nothing counts as a call."""

    type: Literal["execution_refused"] = "execution_refused"
    action_id: str
    attempt: int
    tool: str
    args_sha256: str
    code: RefusalCode
    reason: str = ""


@register_event
class ToolResult(Event):
    """What the tool answered, redacted. ``outcome``: ``ok``, ``error``, ``denied``, ``timeout`` (a write may
    have happened) or ``interrupted``; ``args_sha256`` digests the arguments it ran with."""

    type: Literal["tool_result"] = "tool_result"
    action_id: str
    attempt: int
    tool: str
    args_sha256: str
    outcome: Literal["ok", "error", "denied", "timeout", "interrupted"]
    side_effect: bool
    data: dict[str, Any] = Field(default_factory=dict)
    detail: str = ""


@register_event
class DuplicateDelivery(Event):
    """The same tool answer arrived a second time; it is recorded and ignored."""

    type: Literal["duplicate_delivery"] = "duplicate_delivery"
    action_id: str
    attempt: int
    tool: str


@register_event
class Observation(Event):
    """A typed success fact (``record_read`` or ``draft_saved``) from an ``ok`` answer or a status query."""

    type: Literal["observation"] = "observation"
    action_id: str
    tool: str
    kind: Literal["record_read", "draft_saved"]
    via: Literal["tool_result", "status_query"] = "tool_result"
    facts: dict[str, Any] = Field(default_factory=dict)


@register_event
class StatusChecked(Event):
    """The answer of the draft status query used to settle an UNKNOWN write."""

    type: Literal["status_checked"] = "status_checked"
    action_id: str
    key: str
    outcome: Literal["present", "absent", "unavailable"]
    sha256: str = ""
    detail: str = ""


@register_event
class HumanDecision(Event):
    """A person approved or refused the action the run was waiting on."""

    type: Literal["human_decision"] = "human_decision"
    action_id: str
    decision: Literal["approve", "refuse"]
    by: str = "human"
    note: str = ""


@register_event
class FaultInjected(Event):
    """An experiment annotation: a declared fault was injected here. The runtime never reads it."""

    type: Literal["fault_injected"] = "fault_injected"
    fault: str
    state: str
    target: str = ""
    detail: str = ""


@register_event
class Resumed(Event):
    """A runtime picked the run up again from its log; ``down_seconds`` is left out of the time budget
    (unless it was waiting for a person), ``status`` is the state it resumes in."""

    type: Literal["resumed"] = "resumed"
    status: str
    down_seconds: float = Field(ge=0)
