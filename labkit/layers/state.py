"""The state of a layered run and its pure reducer; the lifecycle is not a field but a view of it."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from labkit.core.events import Event, InvariantViolated, RunStarted
from labkit.layers.events import (
    AbortRequested,
    LayerMoved,
    LoopStarted,
    LoopStopped,
    ModelCalled,
    MoveRefused,
    Noted,
    RouteRefused,
    ToolCalled,
)


@dataclass(frozen=True)
class LayeredState:
    """Where every layer is, the nodes' memo, and control facts (``halted``, a pending ``aborted`` seq,
    ``transient`` restart states); ``status`` mirrors the graph position for core tools."""

    status: str = ""
    table: str = ""
    seq: int = -1
    layers: Mapping[str, str] = field(default_factory=dict)
    transient: Mapping[str, str] = field(default_factory=dict)
    memo: Mapping[str, Any] = field(default_factory=dict)
    running: bool = False
    aborted: int | None = None
    halted: str | None = None
    model_calls: int = 0
    tool_calls: int = 0
    violations: tuple[str, ...] = ()

    def layer(self, name: str) -> str:
        return self.layers[name]


def reduce_layers(state: LayeredState, event: Event) -> LayeredState:
    """Fold one event into the state (pure: a new state, the old one untouched)."""
    r = dataclasses.replace
    if isinstance(event, LayerMoved):
        layers = {**state.layers, event.layer: event.dest}
        status = layers.get(state.table, state.status)
        return r(state, layers=layers, status=status, seq=event.seq)
    if isinstance(event, RunStarted):
        layers = dict(event.params.get("layers", {}))
        return LayeredState(status=event.initial, table=event.table, seq=event.seq, layers=layers,
                            memo=dict(event.params.get("memo", {})),
                            transient=dict(event.params.get("transient", {})))
    if isinstance(event, Noted):
        return r(state, memo={**state.memo, event.key: event.value}, seq=event.seq)
    if isinstance(event, ModelCalled):
        return r(state, model_calls=state.model_calls + 1, seq=event.seq)
    if isinstance(event, ToolCalled):
        return r(state, tool_calls=state.tool_calls + 1, seq=event.seq)
    if isinstance(event, AbortRequested):
        return r(state, aborted=event.seq if state.aborted is None else state.aborted, seq=event.seq)
    if isinstance(event, LoopStarted):
        # a (re)start puts transient layers back at their initial state and is the user's decision to go on
        layers = {**state.layers, **state.transient}
        return r(state, running=True, aborted=None, layers=layers,
                 status=layers.get(state.table, state.status), seq=event.seq)
    if isinstance(event, LoopStopped):
        return r(state, running=False, seq=event.seq)
    if isinstance(event, MoveRefused | RouteRefused):
        what = (f"{event.layer} {event.source} -> {event.dest} refused" if isinstance(event, MoveRefused)
                else f"router {event.router} returned undeclared key '{event.key}'")
        return r(state, halted=what, seq=event.seq)
    if isinstance(event, InvariantViolated):
        return r(state, halted=f"rule {event.invariant} broken", violations=(*state.violations, event.invariant),
                 seq=event.seq)
    return r(state, seq=event.seq)

