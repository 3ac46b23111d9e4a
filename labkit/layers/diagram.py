"""A layered machine as one Mermaid flowchart: one subgraph per layer, the cross-layer rules as dotted links.

Each subgraph is titled with the layer's name and the question it answers; forward-only layers say
so. Graph edges chosen by a router carry ``router: key``. The lifecycle subgraph is drawn too,
labelled as a view, because a reader should see that it has its own (small) table even though
nothing ever sets it.
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import pairwise
from typing import TYPE_CHECKING, Any

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


def _kind(spec: LayeredSpec, layer: Layer) -> str:
    if layer is spec.lifecycle:
        return "view: computed, never set"
    if layer is spec.graph.layer:
        return "transient: restarts at its start"
    return f"forward-only ({len(layer.order)} ordered)" if layer.order else "whitelist"


def draw_layer_stack(spec: LayeredSpec, current: Mapping[str, Any], ax: Any = None, title: str = "") -> Any:
    """Draw ``spec`` as a stack of bands, one per layer, with the state each layer is in filled.

    Where the Mermaid flowchart shows every row, this picture shows what the rows hide: the layers
    are separate machines, each in one state at a time, tied only by the cross-layer rules (dotted)
    and by the lifecycle, which is computed from the persisted layers (the arrows on the right).
    ``current`` maps a layer's name to its state (a :func:`labkit.layers.timeline` row fits, and
    may carry the lifecycle too). Returns the matplotlib axes drawn on.
    """
    import matplotlib.pyplot as plt
    from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

    bands = [*spec.all_layers(), spec.lifecycle]
    states = _parse_current(spec, {k: v for k, v in current.items() if k in {b.name for b in bands}})
    if ax is None:
        _, ax = plt.subplots(figsize=(12, 1.15 * len(bands) + 0.4))
    width, label_width = 12.0, 2.6
    centres: dict[tuple[str, str], tuple[float, float]] = {}
    for row, layer in enumerate(bands):
        y = len(bands) - 1 - row
        names = layer.table.states
        step = (width - label_width) / len(names)
        ax.text(0, y + 0.12, layer.name, fontsize=10, fontweight="bold", va="center")
        ax.text(0, y - 0.2, f"{layer.question}?\n{_kind(spec, layer)}", fontsize=7, va="center", color="#444444")
        for i, state in enumerate(names):
            x = label_width + step * (i + 0.5)
            centres[(layer.name, state)] = (x, y)
            here = states.get(layer.name) == state
            ax.add_patch(FancyBboxPatch((x - step * 0.44, y - 0.2), step * 0.88, 0.4,
                                        boxstyle="round,pad=0.02", linewidth=2 if here else 0.8,
                                        facecolor="#ffd54f" if here else "white",
                                        edgecolor="#e65100" if here else "#888888",
                                        linestyle="--" if not layer.persisted and layer is not spec.lifecycle
                                        else "-"))
            ax.text(x, y, state, ha="center", va="center", fontsize=7 if len(names) > 8 else 8,
                    fontweight="bold" if here else "normal")
        if layer.order:  # a forward-only layer: its order is its only direction
            for a, b in pairwise(layer.order):
                (xa, ya), (xb, _) = centres[(layer.name, a)], centres[(layer.name, b)]
                ax.add_patch(FancyArrowPatch((xa + step * 0.44, ya), (xb - step * 0.44, ya),
                                             arrowstyle="-|>", mutation_scale=9, color="#555555"))
    for rule in spec.rules:
        for when in rule.when:
            for then in rule.then:
                (x1, y1), (x2, y2) = centres[(rule.layer, when)], centres[(rule.other, then)]
                ax.plot([x1, x2], [y1 + (0.2 if y2 > y1 else -0.2), y2 + (-0.2 if y2 > y1 else 0.2)],
                        linestyle=":", color="#1565c0", linewidth=0.9)
    life_y = 0
    for layer in spec.layers:
        y = centres[(layer.name, layer.table.states[-1])][1]
        ax.add_patch(FancyArrowPatch((width + 0.05, y), (width + 0.05, life_y + 0.15),
                                     connectionstyle="arc3,rad=-0.3", arrowstyle="-|>", mutation_scale=10,
                                     color="#2e7d32"))
    ax.text(width + 0.6, life_y + 0.9, "computed\nfrom", fontsize=7, color="#2e7d32", ha="center")
    ax.text(label_width, -0.5, "dotted: the cross-layer rules (" + "; ".join(r.name for r in spec.rules)
            + "); dashed boxes: a transient layer; filled: the state each layer is in", fontsize=7, color="#444444")
    ax.set_xlim(-0.1, width + 0.9)
    ax.set_ylim(-0.65, len(bands) - 0.45)
    ax.axis("off")
    if title:
        ax.set_title(title, fontsize=10, loc="left")
    return ax
