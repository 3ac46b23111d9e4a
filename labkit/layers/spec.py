"""LayeredSpec: a layered machine's layers, graph, cross-layer rules and lifecycle view, checked when built,
drawn as one Mermaid flowchart for ``labkit diagram`` (a subgraph per layer, rules dotted)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from labkit.core.errors import LabkitError, TableError
from labkit.core.events import Event
from labkit.core.invariants import Invariant
from labkit.core.table import Row
from labkit.layers.graph import NEXT, Graph, Router
from labkit.layers.layer import CrossRule, Layer
from labkit.layers.state import LayeredState

View = Callable[[LayeredState], str]


@dataclass(frozen=True)
class LayeredSpec:
    """Everything a layered machine is made of; build it with :meth:`build`, which checks how the parts fit."""

    name: str
    layers: tuple[Layer, ...]
    graph: Graph
    rules: tuple[CrossRule, ...]
    view: View
    lifecycle: Layer

    @classmethod
    def build(cls, name: str, layers: Sequence[Layer], graph: Graph, rules: Sequence[CrossRule],
              view: View, lifecycle: Layer) -> LayeredSpec:
        """Check that names are unique and that every rule speaks of known layers and states."""
        spec = cls(name=name, layers=tuple(layers), graph=graph, rules=tuple(rules), view=view,
                   lifecycle=lifecycle)
        names = [layer.name for layer in spec.all_layers()]
        problems = [f"two layers are named '{n}'" for n in sorted({n for n in names if names.count(n) > 1})]
        states = {layer.name: set(layer.table.states) for layer in spec.all_layers()}
        for rule in spec.rules:
            for lname, wanted in ((rule.layer, rule.when), (rule.other, rule.then)):
                if lname not in states:
                    problems.append(f"rule {rule.name}: unknown layer '{lname}'")
                else:
                    problems += [f"rule {rule.name}: '{s}' is not a state of layer '{lname}'"
                                 for s in sorted(wanted - states[lname])]
        if graph.name != name:
            problems.append(f"the graph is named '{graph.name}' but the machine '{name}'; "
                            "use one name (the log's run_started names it)")
        if problems:
            raise TableError(problems)
        return spec

    def all_layers(self) -> tuple[Layer, ...]:
        """The persisted layers, then the graph's position (the lifecycle is a view, not among them)."""
        return (*self.layers, self.graph.layer)

    def layer(self, name: str) -> Layer:
        for layer in (*self.all_layers(), self.lifecycle):
            if layer.name == name:
                return layer
        raise LabkitError(f"machine '{self.name}' has no layer '{name}'",
                          f"use one of: {', '.join(x.name for x in self.all_layers())}.")

    def invariants(self) -> list[Invariant]:
        """The cross-layer rules as invariants, plus: the lifecycle view only takes its table's rows."""
        return [*(rule.invariant() for rule in self.rules), self._view_invariant()]

    def _view_invariant(self) -> Invariant:
        def check(state: LayeredState, events: Sequence[Event]) -> str | None:
            now = self.view(state)
            if now not in self.lifecycle.table.states:
                return f"the lifecycle view returned '{now}', not one of {', '.join(self.lifecycle.table.states)}"
            return None
        return Invariant("lifecycle_is_a_known_state", check, "the view returns a state of the lifecycle table")

    # -- what core tools (labkit replay, labkit diagram) read from a catalog table
    @property
    def initial(self) -> str:
        return self.graph.start

    @property
    def states(self) -> tuple[str, ...]:
        """The graph's nodes: a layered state's ``status`` is the graph's position."""
        return self.graph.layer.table.states

    @property
    def terminal(self) -> frozenset[str]:
        """None for replay's absorption check: reaching the graph's end node is followed by the loop's
        own ``loop_stopped`` record, so a layered run ends with its loop, not with a state."""
        return frozenset()

    @property
    def rows(self) -> tuple[Row, ...]:
        return tuple(row for layer in self.all_layers() for row in layer.table.rows)

    def unhandled(self) -> list[tuple[str, str]]:
        """Per persisted layer, (layer:state, event) pairs its table leaves open."""
        return [(f"{layer.name}:{s}", e) for layer in self.layers for s, e in layer.table.unhandled()]

    def to_mermaid(self, current: Mapping[str, str] | str | None = None) -> str:
        """The Mermaid text; ``current`` highlights states, as a mapping or ``"layer:STATE,layer:STATE"``."""
        lines = ["flowchart TB"]
        for layer in self.layers:
            kind = f"(forward-only: {' < '.join(layer.order)})" if layer.order else "(whitelist)"
            lines += _draw_layer(layer, kind)
        labels = {(source, key): (f"{edge.name}: {key}" if isinstance(edge, Router) else NEXT)
                  for source, edge in self.graph.edges.items()
                  for key in (edge.routes if isinstance(edge, Router) else [NEXT])}
        lines += _draw_layer(self.graph.layer, "(nodes and routers; restarts at its start)", labels)
        lines += _draw_layer(self.lifecycle, "(a view computed from the layers; never set)")
        for rule in self.rules:
            for when in sorted(rule.when):
                for then in sorted(rule.then):
                    lines.append(f"    {_node_id(rule.layer, when)} -.->|rule {rule.name}| "
                                 f"{_node_id(rule.other, then)}")
        highlighted = self.highlighted(current)
        if highlighted:
            lines.append("    classDef current fill:#ffd54f,stroke:#e65100,stroke-width:3px")
            lines.append("    class " + ",".join(_node_id(n, s) for n, s in highlighted.items()) + " current")
        return "\n".join(lines) + "\n"

    def highlighted(self, current: Mapping[str, str] | str | None) -> dict[str, str]:
        """``current`` as {layer: state}, each state checked against its layer (see :meth:`to_mermaid`)."""
        if current is None:
            return {}
        if isinstance(current, str) and ":" not in current:
            current = {self.graph.name: current}  # a bare name is a node: the trace viewer passes the status
        if isinstance(current, str):
            pairs = [p.partition(":") for p in current.split(",") if p.strip()]
            if any(not sep for _, sep, _ in pairs):
                raise LabkitError(f"cannot highlight '{current}' in a layered machine",
                                  "write layer:STATE pairs separated by commas, e.g. phase:WRITING,flow:REVIEWING.")
            current = {name.strip(): state.strip() for name, _, state in pairs}
        for name, state in current.items():
            if state not in self.layer(name).table.states:
                raise LabkitError(f"cannot highlight '{state}': it is not a state of layer '{name}'",
                                  f"use one of: {', '.join(self.layer(name).table.states)}.")
        return dict(current)


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
