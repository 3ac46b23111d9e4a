"""A layered machine as a stack of bands, one per layer, the state each layer is in filled (notebook 08)."""

from __future__ import annotations

from collections.abc import Mapping
from itertools import pairwise
from typing import Any

from labkit.layers.layer import Layer
from labkit.layers.spec import LayeredSpec


def _kind(spec: LayeredSpec, layer: Layer) -> str:
    if layer is spec.lifecycle:
        return "view: computed, never set"
    if layer is spec.graph.layer:
        return "transient: restarts at its start"
    return f"forward-only ({len(layer.order)} ordered)" if layer.order else "whitelist"


def draw_layer_stack(spec: LayeredSpec, current: Mapping[str, Any], ax: Any = None, title: str = "") -> Any:
    """Draw ``spec`` as bands with each layer's ``current`` state filled, rules dotted and the lifecycle
    arrows on the right; returns the axes."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

    bands = [*spec.all_layers(), spec.lifecycle]
    states = spec.highlighted({k: v for k, v in current.items() if k in {b.name for b in bands}})
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
