"""The facts of a conversation, and the reducer that rebuilds its state from them.

Every user message, model call (with its prompt, raw answer and verdict), variable change (who,
in which step, old → new), failed contract and bot reply is an event in labkit's hash-chained log.
The conversation's state is a fold over those events, so a conversation replays from its log and
resumes after a crash exactly where it was.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Literal

from labkit.core.events import Event, InvariantViolated, RunStarted, Transitioned, register_event


@register_event
class UserSaid(Event):
    """The user's message number ``turn`` arrived while the dialog was in ``step``."""

    type: Literal["dialog_user"] = "dialog_user"
    turn: int
    step: str
    text: str


@register_event
class ModelCalled(Event):
    """One model call: the prompt, the raw answer and whether it kept the contract.

    ``attempt`` 1 is the first call of a turn, 2 the corrective re-ask. ``violation`` is empty for
    an answer that kept the contract, else a code from :class:`labkit.dialog.contract.Violation`.
    """

    type: Literal["dialog_call"] = "dialog_call"
    turn: int
    step: str
    attempt: int
    prompt: str
    raw: str
    prompt_tokens: int
    completion_tokens: int
    seconds: float
    violation: str = ""
    detail: str = ""


@register_event
class CacheRead(Event):
    """The model call just recorded read ``tokens`` of its prompt from a cache instead of evaluating them.

    Recorded only when a backend kept a declared prefix's KV state (or a server said it reused
    some); a recording made without a cache has none of these, and replays unchanged.
    """

    type: Literal["dialog_cache_read"] = "dialog_cache_read"
    turn: int
    attempt: int
    tokens: int


@register_event
class VariableChanged(Event):
    """A dialog variable changed: who changed it, in which step, from what to what."""

    type: Literal["dialog_variable"] = "dialog_variable"
    turn: int
    step: str
    name: str
    old: Any = None
    new: Any = None
    who: str = "model"


@register_event
class ContractFailed(Event):
    """The re-ask broke the contract too: the turn ends with a typed outcome, the step unchanged."""

    type: Literal["dialog_contract_failed"] = "dialog_contract_failed"
    turn: int
    step: str
    violation: str
    detail: str


@register_event
class BotSaid(Event):
    """The reply the user reads, the model's step summary, and the step it claims (prompt-only bots)."""

    type: Literal["dialog_bot"] = "dialog_bot"
    turn: int
    step: str
    text: str
    summary: str = ""
    signal: str = ""


@register_event
class CancelRequested(Event):
    """The model emitted ``cancel``; under ``cancel_confirm`` the bot asked to confirm instead of ending."""

    type: Literal["dialog_cancel_requested"] = "dialog_cancel_requested"
    turn: int
    step: str
    question: str


@register_event
class CancelAnswered(Event):
    """The user's answer to a cancel question: ``confirmed`` ends the conversation, else it goes on."""

    type: Literal["dialog_cancel_answered"] = "dialog_cancel_answered"
    turn: int
    step: str
    confirmed: bool


@register_event
class ValuesDropped(Event):
    """``grounded_values`` took values out of an answer: words the user never said (per field).

    ``signal`` is what the model emitted and ``kept_signal`` what the machine kept: a move whose
    needed value was dropped stays in the step instead (the step asks again).
    """

    type: Literal["dialog_values_dropped"] = "dialog_values_dropped"
    turn: int
    step: str
    dropped: dict[str, Any]
    unsaid: dict[str, list[str]]
    signal: str
    kept_signal: str


@register_event
class ValuesCut(Event):
    """``split_cut`` cut parts that belong to other variables out of free-text values (per field: the parts
    cut, and the value as the model wrote it); the value recorded next is what was left."""

    type: Literal["dialog_values_cut"] = "dialog_values_cut"
    turn: int
    step: str
    cut: dict[str, list[str]]
    written: dict[str, Any]


@dataclass(frozen=True)
class DialogState:
    """Where a conversation stands; ``status`` is the machine state (the current step)."""

    status: str = ""
    table: str = ""
    seq: int = -1
    transitions: int = 0
    violations: tuple[str, ...] = ()
    variables: dict[str, Any] = field(default_factory=dict)
    summaries: dict[str, str] = field(default_factory=dict)
    turns: tuple[tuple[str, str], ...] = ()  # ("user" | "bot", text)
    user_messages: int = 0
    calls: int = 0
    cached_tokens: int = 0  # prompt tokens read from a cache instead of evaluated (CacheRead)
    reasks: int = 0
    contract_violations: int = 0
    failures: int = 0
    claimed_step: str = ""  # the prompt-only bot's own idea of where it is
    pending_user: bool = False  # a user message is recorded but not yet answered (a crash mid-turn)
    pending_cancel: bool = False  # cancel_confirm: the bot asked whether to cancel, the user has not answered


def reduce_dialog(state: DialogState, event: Event) -> DialogState:
    """Fold one event into the conversation's state (pure; the state is never changed in place)."""
    replace = dataclasses.replace
    if isinstance(event, RunStarted):
        return DialogState(status=event.initial, table=event.table, seq=event.seq, claimed_step=event.initial)
    if isinstance(event, Transitioned):
        return replace(state, status=event.dest, seq=event.seq, transitions=state.transitions + 1)
    if isinstance(event, InvariantViolated):
        return replace(state, status=event.dest, seq=event.seq, violations=(*state.violations, event.invariant))
    if isinstance(event, UserSaid):
        return replace(state, seq=event.seq, turns=(*state.turns, ("user", event.text)),
                       user_messages=state.user_messages + 1, pending_user=True)
    if isinstance(event, ModelCalled):
        broken = 1 if event.violation else 0
        return replace(state, seq=event.seq, calls=state.calls + 1, reasks=state.reasks + (event.attempt > 1),
                       contract_violations=state.contract_violations + broken)
    if isinstance(event, CacheRead):
        return replace(state, seq=event.seq, cached_tokens=state.cached_tokens + event.tokens)
    if isinstance(event, VariableChanged):
        return replace(state, seq=event.seq, variables={**state.variables, event.name: event.new})
    if isinstance(event, ContractFailed):
        return replace(state, seq=event.seq, failures=state.failures + 1)
    if isinstance(event, BotSaid):
        summaries = {**state.summaries, event.step: event.summary} if event.summary else state.summaries
        return replace(state, seq=event.seq, turns=(*state.turns, ("bot", event.text)), summaries=summaries,
                       claimed_step=event.signal or state.claimed_step, pending_user=False)
    if isinstance(event, CancelRequested):
        return replace(state, seq=event.seq, pending_cancel=True)
    if isinstance(event, CancelAnswered):
        return replace(state, seq=event.seq, pending_cancel=False)
    return replace(state, seq=event.seq)
