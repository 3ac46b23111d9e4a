"""The workflow graph of a layered machine: nodes, fixed edges, and routers whose keys are declared.

A router's return annotation (``Literal[...]`` or ``Enum``) must match its map, and nodes declare the layer
states they enter and leave, so the build refuses typos and router-vs-whitelist conflicts before a run."""

from __future__ import annotations

import enum
import typing
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from labkit.core.errors import TableError
from labkit.core.table import Row
from labkit.layers.layer import Layer, Refusal

NEXT = "next"
"""The event name of a fixed (unconditional) edge in the graph layer's table."""


@dataclass(frozen=True)
class Node:
    """One step of work. ``run(ctx)`` does it; ``enters``/``leaves`` are the layer states it needs and leaves."""

    name: str
    run: Callable[[Any], None] | None = None
    enters: Mapping[str, str] = field(default_factory=dict)
    leaves: Mapping[str, str] = field(default_factory=dict)
    doc: str = ""


def declared_keys(fn: Callable[..., Any]) -> tuple[str, ...]:
    """The keys a router declares (``Literal["a", "b"]`` or an ``Enum``); :class:`TableError` otherwise."""
    name = getattr(fn, "__name__", repr(fn))
    try:
        hint = typing.get_type_hints(fn).get("return")
    except Exception as exc:  # an annotation that does not resolve is a declaration problem
        raise TableError([f"router {name}: its return annotation does not resolve ({exc})"]) from None
    if typing.get_origin(hint) is typing.Literal:
        keys = typing.get_args(hint)
    elif isinstance(hint, type) and issubclass(hint, enum.Enum):
        keys = tuple(member.value for member in hint)
    else:
        raise TableError([f"router {name}: declare its possible keys as the return annotation, "
                          f"e.g. -> Literal['review', 'finish'] or an Enum; found {hint!r}"])
    if not all(isinstance(k, str) and k for k in keys):
        raise TableError([f"router {name}: its keys must be non-empty strings, got {list(keys)!r}"])
    return tuple(keys)


@dataclass(frozen=True)
class Router:
    """A conditional edge: ``fn(state)`` returns one of ``keys``; ``routes`` maps each key to a node."""

    name: str
    fn: Callable[[Any], Any]
    keys: tuple[str, ...]
    routes: Mapping[str, str]

    @classmethod
    def declare(cls, fn: Callable[[Any], Any], routes: Mapping[str, str],
                keys: Iterable[str] | None = None) -> Router:
        """A router whose keys come from ``fn``'s return annotation (or are given as ``keys``)."""
        return cls(name=getattr(fn, "__name__", "router"), fn=fn,
                   keys=tuple(keys) if keys is not None else declared_keys(fn), routes=dict(routes))

    def choose(self, state: Any) -> str:
        """Call the router; an ``Enum`` member is read as its value. The key is *not* checked here."""
        key = self.fn(state)
        return key.value if isinstance(key, enum.Enum) else key

    def problems(self, nodes: set[str]) -> list[str]:
        declared, mapped = set(self.keys), set(self.routes)
        found = [f"router {self.name}: declared key '{k}' has no entry in its map (the run would stop there)"
                 for k in self.keys if k not in mapped]
        found += [f"router {self.name}: maps key '{k}', which the router never declares it returns "
                  "(dead entry, or the declaration is missing a key)" for k in self.routes if k not in declared]
        found += [f"router {self.name}: key '{k}' leads to '{d}', which is not a node"
                  for k, d in self.routes.items() if d not in nodes]
        return found


Edge = str | Router


@dataclass(frozen=True)
class Graph:
    """A checked workflow graph; its position is itself a (transient) layer named ``name``."""

    name: str
    nodes: Mapping[str, Node]
    edges: Mapping[str, Edge]
    start: str
    end: frozenset[str]
    layer: Layer

    @classmethod
    def build(cls, name: str, nodes: Sequence[Node], edges: Mapping[str, Edge], start: str,
              end: Iterable[str], layers: Sequence[Layer] = (), *, question: str = "what runs next") -> Graph:
        """Check routers, node declarations and edges against every layer's whitelist; return the graph."""
        by_name = {n.name: n for n in nodes}
        ends = frozenset(end)
        known = set(by_name) | ends
        layer_of = {layer.name: layer for layer in layers}
        problems: list[str] = []
        if len(by_name) != len(nodes):
            problems.append("two nodes share a name")
        for node in nodes:
            for part in ("enters", "leaves"):
                for lname, state in getattr(node, part).items():
                    if lname not in layer_of:
                        problems.append(f"node {node.name}: {part} unknown layer '{lname}'")
                    elif state not in layer_of[lname].table.states:
                        problems.append(f"node {node.name}: {part} '{state}', not a state of layer '{lname}'")
        for source, edge in edges.items():
            if source not in by_name:
                problems.append(f"edge from '{source}', which is not a node")
            if isinstance(edge, Router):
                problems += edge.problems(known)
            elif edge not in known:
                problems.append(f"edge {source} -> '{edge}': not a node")
        problems += [f"node {n}: no edge leaves it and it is not an end" for n in by_name if n not in edges]
        if problems:
            raise TableError(problems)
        problems += _whitelist_conflicts(by_name, edges, layer_of)
        if problems:
            raise TableError(problems)
        rows = [Row(source, key, dest) for source, edge in edges.items()
                for key, dest in (edge.routes.items() if isinstance(edge, Router) else [(NEXT, edge)])]
        layer = Layer.build(name, [*by_name, *sorted(ends - set(by_name))], rows, start, ends,
                            question=question, persisted=False)
        return cls(name=name, nodes=by_name, edges=dict(edges), start=start, end=ends, layer=layer)

    def routers(self) -> list[Router]:
        return [e for e in self.edges.values() if isinstance(e, Router)]


def _whitelist_conflicts(nodes: Mapping[str, Node], edges: Mapping[str, Edge],
                         layers: Mapping[str, Layer]) -> list[str]:
    """Edges whose destination needs a layer state the source's declared exit state cannot move to."""
    problems: list[str] = []
    for source, edge in edges.items():
        targets = edge.routes.items() if isinstance(edge, Router) else [(NEXT, edge)]
        exit_states = {**nodes[source].enters, **nodes[source].leaves}
        for key, dest in targets:
            if dest not in nodes:
                continue
            for lname, needed in nodes[dest].enters.items():
                left = exit_states.get(lname)
                if left is None or left == needed:
                    continue
                found = layers[lname].row_to(left, needed)
                if isinstance(found, Refusal):
                    via = f"router {edge.name} key '{key}'" if isinstance(edge, Router) else "a fixed edge"
                    problems.append(f"edge {source} -> {dest} ({via}): {source} leaves {lname} in {left}, "
                                    f"{dest} needs {needed}, and {found.reason}")
    return problems

