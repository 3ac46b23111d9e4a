"""One layer of a layered machine (a dimension of state with its own checked table, moved by destination)
and :class:`CrossRule`, an implication between layers checked after every step. A forward-only layer
refuses backward rows at build and backward moves at run time."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from labkit.core.errors import TableError
from labkit.core.invariants import Invariant
from labkit.core.table import Row, TransitionTable


@dataclass(frozen=True)
class Refusal:
    """Why a layer will not move: the sentence a log and a learner read."""

    layer: str
    source: str
    dest: str
    reason: str


@dataclass(frozen=True)
class Layer:
    """A named dimension with its own table; ``order`` makes it forward-only, ``question`` is what it answers,
    ``persisted=False`` restarts it on every (re)start. Build one with :meth:`build`."""

    name: str
    table: TransitionTable
    question: str = ""
    order: tuple[str, ...] | None = None
    persisted: bool = True

    @classmethod
    def build(cls, name: str, states: Sequence[str], rows: Iterable[Row | tuple[Any, ...]], initial: str,
              terminal: Iterable[str] = (), *, question: str = "", order: Sequence[str] | None = None,
              persisted: bool = True) -> Layer:
        """Check the table and, for a forward-only layer, its order (layers take no guards)."""
        table = TransitionTable.build(name, states, rows, initial, terminal)
        problems = [f"row {r}: layer tables take no guards (declare the choice as a router instead)"
                    for r in table.rows if r.guard]
        ordered = tuple(order) if order is not None else None
        if ordered is not None:
            if sorted(ordered) != sorted(table.states):
                problems.append(f"the order of forward-only layer '{name}' must list each state once: "
                                f"order {list(ordered)}, states {list(table.states)}")
            else:
                rank = {s: i for i, s in enumerate(ordered)}
                problems += [f"row {r} moves backward in forward-only layer '{name}' "
                             f"({r.source} is #{rank[r.source] + 1}, {r.dest} is #{rank[r.dest] + 1} "
                             f"of {' < '.join(ordered)})"
                             for r in table.rows if rank[r.dest] < rank[r.source]]
        if problems:
            raise TableError(problems)
        return cls(name=name, table=table, question=question, order=ordered, persisted=persisted)

    @property
    def forward_only(self) -> bool:
        return self.order is not None

    @property
    def initial(self) -> str:
        return self.table.initial

    def row_to(self, source: str, dest: str) -> Row | Refusal:
        """The row that moves ``source`` to ``dest``, or a :class:`Refusal` saying why there is none."""
        if dest not in self.table.states:
            return Refusal(self.name, source, dest, f"'{dest}' is not a state of layer '{self.name}' "
                           f"(states: {', '.join(self.table.states)})")
        if self.order is not None and self.order.index(dest) < self.order.index(source):
            return Refusal(self.name, source, dest, f"layer '{self.name}' only moves forward "
                           f"({' < '.join(self.order)}); {source} -> {dest} goes back")
        rows = [r for r in self.table.rows if r.source == source and r.dest == dest]
        if not rows:
            allowed = sorted({r.dest for r in self.table.rows if r.source == source})
            return Refusal(self.name, source, dest, f"layer '{self.name}' has no row {source} -> {dest}; "
                           f"from {source} it may go to: {', '.join(allowed) or 'nowhere'}")
        return rows[0]


@dataclass(frozen=True)
class CrossRule:
    """When ``layer`` is in ``when``, ``other`` must be in ``then``: ``CrossRule("complete_means_flow_idle",
    "phase", {"COMPLETE"}, "flow", {"IDLE"})``."""

    name: str
    layer: str
    when: frozenset[str]
    other: str
    then: frozenset[str]

    def __init__(self, name: str, layer: str, when: Iterable[str], other: str, then: Iterable[str]) -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "layer", layer)
        object.__setattr__(self, "when", frozenset(when))
        object.__setattr__(self, "other", other)
        object.__setattr__(self, "then", frozenset(then))

    def __str__(self) -> str:
        when, then = ", ".join(sorted(self.when)), ", ".join(sorted(self.then))
        return f"{self.layer} in {{{when}}} => {self.other} in {{{then}}}"

    def violation(self, layers: dict[str, str]) -> str | None:
        """None when the rule holds for these layer states, else a sentence naming both layers."""
        here, there = layers.get(self.layer), layers.get(self.other)
        if here in self.when and there not in self.then:
            return (f"{self.layer} is {here} but {self.other} is {there}; "
                    f"the rule says {self} (the layers disagree)")
        return None

    def invariant(self) -> Invariant:
        """The rule as an invariant over a state that has a ``layers`` mapping."""
        return Invariant(self.name, lambda state, _events: self.violation(state.layers), str(self))
