"""The facts a layered machine records, registered in labkit's one union; refused moves and undeclared
router keys are recorded too, never only raised."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from labkit.core.events import Event, register_event


@register_event
class LayerMoved(Event):
    """Layer ``layer`` moved ``source -> dest`` by its table's row ``trigger``, while ``node`` ran."""

    type: Literal["layer_moved"] = "layer_moved"
    layer: str
    trigger: str
    source: str
    dest: str
    node: str = ""


@register_event
class MoveRefused(Event):
    """A node needed ``layer`` in ``dest`` and the layer's table refused; the run stops here."""

    type: Literal["move_refused"] = "move_refused"
    layer: str
    source: str
    dest: str
    node: str
    reason: str


@register_event
class RouteRefused(Event):
    """Router ``router`` returned ``key``, which it never declared; the run stops instead of crashing."""

    type: Literal["route_refused"] = "route_refused"
    router: str
    node: str
    key: str
    declared: list[str]


@register_event
class Noted(Event):
    """A node wrote a fact into the run's memo (``key`` = ``value``); routers and later nodes read it."""

    type: Literal["noted"] = "noted"
    node: str
    key: str
    value: Any


@register_event
class ModelCalled(Event):
    """One completion. ``began_after`` is the seq of the last event when the call began."""

    type: Literal["node_model_called"] = "node_model_called"
    node: str
    prompt: str
    text: str
    began_after: int
    prompt_tokens: int = 0
    completion_tokens: int = 0


@register_event
class ToolCalled(Event):
    """One tool call (a side effect such as saving a section). ``began_after`` as for model calls."""

    type: Literal["node_tool_called"] = "node_tool_called"
    node: str
    tool: str
    args: dict[str, Any] = Field(default_factory=dict)
    result: Any = None
    began_after: int


@register_event
class AbortRequested(Event):
    """Somebody asked the run to stop; the inner loop honours it at its next checkpoint."""

    type: Literal["abort_requested"] = "abort_requested"
    reason: str = ""


@register_event
class LoopStarted(Event):
    """The loop began working (``resumed``: on a log that already held a run)."""

    type: Literal["loop_started"] = "loop_started"
    resumed: bool = False


@register_event
class LoopStopped(Event):
    """The loop stopped working, and why: finished, aborted, refused, route_refused, invariant, budget."""

    type: Literal["loop_stopped"] = "loop_stopped"
    reason: str
    node: str = ""
