"""Machines in layers: several checked tables, declared routers, cross-layer rules and a lifecycle view
(the demo is :mod:`labkit.layers.writing`, notebook 08)."""

from labkit.layers.diagram import draw_layer_stack
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
from labkit.layers.graph import NEXT, Graph, Node, Router, declared_keys
from labkit.layers.layer import CrossRule, Layer, Refusal
from labkit.layers.machine import Ctx, LayeredMachine, calls_after_abort, replay_layers, timeline
from labkit.layers.spec import LayeredSpec
from labkit.layers.state import LayeredState, reduce_layers

__all__ = ["NEXT", "AbortRequested", "CrossRule", "Ctx", "Graph", "Layer", "LayerMoved", "LayeredMachine",
           "LayeredSpec", "LayeredState", "LoopStarted", "LoopStopped", "ModelCalled", "MoveRefused", "Node",
           "Noted", "Refusal", "RouteRefused", "Router", "ToolCalled", "calls_after_abort", "declared_keys",
           "draw_layer_stack", "reduce_layers", "replay_layers", "timeline"]
