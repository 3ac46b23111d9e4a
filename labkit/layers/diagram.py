"""A layered machine as one Mermaid flowchart: one subgraph per layer, the cross-layer rules as dotted links.

Each subgraph is titled with the layer's name and the question it answers; forward-only layers say
so. Graph edges chosen by a router carry ``router: key``. The lifecycle subgraph is drawn too,
labelled as a view, because a reader should see that it has its own (small) table even though
nothing ever sets it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from labkit.errors import LabkitError
from labkit.layers.graph import NEXT, Router
from labkit.layers.layer import Layer

if TYPE_CHECKING:
    from labkit.layers.machine import LayeredSpec


def _node_id(layer: str, state: str) -> str:
    return f"{layer}_{state}"


def _title(layer: Layer, kind: str) -> str:
    words = [layer.name, f"— {layer.question}" if layer.question else "", kind]
    return " ".join(w for w in words if w)


def _draw_layer(layer: Layer, kind: str, labels: Mapping[tuple[str, str], str] | None = None) -> list[str]:
    lines = [f'    subgraph {layer.name} ["{_title(layer, kind)}"]', "    direction LR"]
    for state in layer.table.states:
        shape = ('(["{0}"])' if state == layer.initial else '[["{0}"]]' if state in layer.table.terminal
                 else '["{0}"]').format(state)
        lines.append(f"        {_node_id(layer.name, state)}{shape}")
    for row in layer.table.rows:
        label = (labels or {}).get((row.source, row.event), row.event)
        lines.append(f"        {_node_id(layer.name, row.source)} -->|{label}| {_node_id(layer.name, row.dest)}")
    lines.append("    end")
    return lines


def layered_mermaid(spec: LayeredSpec, current: Mapping[str, str] | str | None = None) -> str:
    """The Mermaid text for ``spec``. ``current`` highlights states: ``{"phase": "WRITING", ...}``.

    A string ``"layer:STATE,layer:STATE"`` is accepted too (that is what ``labkit diagram --current`` passes);
    a bare name is a node of the graph.
    """
    lines = ["flowchart TB"]
    for layer in spec.layers:
        kind = f"(forward-only: {' < '.join(layer.order)})" if layer.order else "(whitelist)"
        lines += _draw_layer(layer, kind)
    graph = spec.graph
    labels = {(source, key): (f"{edge.name}: {key}" if isinstance(edge, Router) else NEXT)
              for source, edge in graph.edges.items()
              for key in (edge.routes if isinstance(edge, Router) else [NEXT])}
    lines += _draw_layer(graph.layer, "(nodes and routers; restarts at its start)", labels)
    lines += _draw_layer(spec.lifecycle, "(a view computed from the layers; never set)")
    for rule in spec.rules:
        for when in sorted(rule.when):
            for then in sorted(rule.then):
                lines.append(f"    {_node_id(rule.layer, when)} -.->|rule {rule.name}| {_node_id(rule.other, then)}")
    highlighted = _parse_current(spec, current)
    if highlighted:
        lines.append("    classDef current fill:#ffd54f,stroke:#e65100,stroke-width:3px")
        lines.append("    class " + ",".join(_node_id(n, s) for n, s in highlighted.items()) + " current")
    return "\n".join(lines) + "\n"


def _parse_current(spec: LayeredSpec, current: Mapping[str, str] | str | None) -> dict[str, str]:
    if current is None:
        return {}
    if isinstance(current, str) and ":" not in current:
        current = {spec.graph.name: current}  # a bare name is a node: the trace viewer passes the status
    if isinstance(current, str):
        pairs = [p.partition(":") for p in current.split(",") if p.strip()]
        if any(not sep for _, sep, _ in pairs):
            raise LabkitError(f"cannot highlight '{current}' in a layered machine",
                              "write layer:STATE pairs separated by commas, e.g. phase:WRITING,flow:REVIEWING.")
        current = {name.strip(): state.strip() for name, _, state in pairs}
    for name, state in current.items():
        if state not in spec.layer(name).table.states:
            raise LabkitError(f"cannot highlight '{state}': it is not a state of layer '{name}'",
                              f"use one of: {', '.join(spec.layer(name).table.states)}.")
    return dict(current)
