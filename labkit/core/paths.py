"""Test paths from a transition table (model-based testing: a row added is a row tested).

``transitions``: event sequences that together take every row; ``pairs`` adds one refusal per (state,
event) the machine must turn down; :func:`drive` runs a suite on a real machine, forcing guards."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from labkit.core.errors import IllegalTransition, LabkitError
from labkit.core.machine import LabMachine
from labkit.core.table import Row, TransitionTable

Cover = Literal["transitions", "pairs"]
COVERS: tuple[str, ...] = ("transitions", "pairs")

RefusalReason = Literal["impossible", "unhandled", "terminal", "guard"]


@dataclass(frozen=True)
class Refusal:
    """A (state, event) the machine must refuse, reached by ``prefix``; ``blocked``: guards that must fail."""

    prefix: tuple[Row, ...]
    state: str
    event: str
    reason: RefusalReason
    blocked: tuple[str, ...] = ()


@dataclass(frozen=True)
class PathSuite:
    """Event sequences that cover a table's rows, and the refusals that go with them."""

    table: TransitionTable
    cover: Cover
    paths: tuple[tuple[Row, ...], ...]
    refusals: tuple[Refusal, ...] = ()
    lower_bound: int = 0

    @property
    def covered(self) -> set[Row]:
        return {row for path in self.paths for row in path}

    @property
    def steps(self) -> int:
        return sum(len(p) for p in self.paths)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form (every step names its guard, or null)."""
        def step(row: Row) -> dict[str, Any]:
            return {"source": row.source, "event": row.event, "dest": row.dest, "guard": row.guard}

        return {
            "table": self.table.name, "cover": self.cover, "initial": self.table.initial,
            "rows": len(self.table.rows), "covered": len(self.covered), "steps": self.steps,
            "lower_bound": self.lower_bound,
            "method": "greedy walk over breadth-first shortest routes to the nearest untaken row",
            "paths": [[step(r) for r in path] for path in self.paths],
            "refusals": [{"prefix": [step(r) for r in f.prefix], "state": f.state, "event": f.event,
                          "reason": f.reason, "blocked_guards": list(f.blocked)} for f in self.refusals],
        }

    def render(self) -> str:
        """The suite as text: one numbered line per sequence, then the refusals."""
        t = self.table
        lines = [f"table {t.name}: {len(self.covered)} of {len(t.rows)} rows covered by {len(self.paths)} "
                 f"event sequence(s), {self.steps} steps (at least {self.lower_bound} needed: one per row "
                 f"into a terminal state); every sequence starts in {t.initial}"]
        for i, path in enumerate(self.paths, 1):
            lines.append(f"{i:3}. " + ", ".join(_show(r) for r in path))
        if self.cover == "pairs":
            lines.append(f"{len(self.refusals)} (state, event) pair(s) the machine must refuse:")
            for f in self.refusals:
                route = ", ".join(r.event + (f" [{r.guard}]" if r.guard else "") for r in f.prefix)
                route = route or "nothing (the initial state)"
                blocked = f" with {', '.join(f.blocked)} false" if f.blocked else ""
                lines.append(f"     {f.state} + {f.event}{blocked} ({f.reason}): after {route}")
        return "\n".join(lines)


def _show(row: Row) -> str:
    guard = f" [{row.guard}]" if row.guard else ""
    return f"{row.event}{guard} -> {row.dest}"


def shortest_routes(table: TransitionTable, start: str) -> dict[str, tuple[Row, ...]]:
    """For every state reachable from ``start``: a shortest row sequence to it (breadth-first, rows in
    table order, so the result is the same on every run)."""
    routes: dict[str, tuple[Row, ...]] = {start: ()}
    queue = deque([start])
    while queue:
        state = queue.popleft()
        for row in table.rows:
            if row.source == state and row.dest not in routes:
                routes[row.dest] = (*routes[state], row)
                queue.append(row.dest)
    return routes


def transition_cover(table: TransitionTable) -> tuple[tuple[Row, ...], ...]:
    """Sequences from the initial state that together take every row (the greedy walk above)."""
    untaken = list(dict.fromkeys(table.rows))
    paths: list[tuple[Row, ...]] = []
    while untaken:
        path: list[Row] = []
        here = table.initial
        while True:
            routes = shortest_routes(table, here)
            reachable = [r for r in untaken if r.source in routes]
            if not reachable:
                break
            nearest = min(reachable, key=lambda r: len(routes[r.source]))  # first in table order on ties
            for row in (*routes[nearest.source], nearest):
                path.append(row)
                if row in untaken:
                    untaken.remove(row)
            here = nearest.dest
        if not path:  # cannot happen for a checked table (every state is reachable)
            raise LabkitError(f"rows {untaken} of table '{table.name}' cannot be reached", "check the table.")
        paths.append(tuple(path))
    return tuple(paths)


def refusals(table: TransitionTable) -> tuple[Refusal, ...]:
    """Every (state, event) the machine must refuse, each with a shortest route to its state."""
    routes = shortest_routes(table, table.initial)
    impossible = set(table.impossible)
    unhandled = set(table.unhandled())
    found: list[Refusal] = []
    for state in table.states:
        for event in table.events:
            reason: RefusalReason | None = None
            blocked: tuple[str, ...] = ()
            rows = table.rows_for(state, event)
            if state in table.terminal:
                reason = "terminal"
            elif (state, event) in impossible:
                reason = "impossible"
            elif (state, event) in unhandled:
                reason = "unhandled"
            elif rows and all(r.guard for r in rows) and not _exclusive(rows):
                reason, blocked = "guard", tuple(dict.fromkeys(r.guard for r in rows if r.guard))
            if reason is not None:
                found.append(Refusal(routes[state], state, event, reason, blocked))
    return tuple(found)


def _exclusive(rows: Sequence[Row]) -> bool:
    """Whether the rows are a ``g`` / ``not g`` split, of which one always fires."""
    return (len(rows) == 2 and rows[0].guard_name == rows[1].guard_name
            and rows[0].negated != rows[1].negated)


def tables_of(spec: Any) -> list[TransitionTable]:
    """The checked tables behind a catalog entry: the table itself, or each layer of a layered machine."""
    if isinstance(spec, TransitionTable):
        return [spec]
    layers = getattr(spec, "all_layers", None)
    if layers is None:
        raise LabkitError(f"cannot derive paths from a {type(spec).__name__}",
                          "give a transition table, or a layered machine (its layers are covered one by one).")
    return [layer.table for layer in layers()]


def build_suite(table: TransitionTable, cover: str = "transitions") -> PathSuite:
    """The path suite of ``table`` for ``cover`` (``transitions`` or ``pairs``)."""
    if cover not in COVERS:
        raise LabkitError(f"unknown cover '{cover}'", f"use one of: {', '.join(COVERS)}.")
    into_terminal = {r for r in table.rows if r.dest in table.terminal}
    return PathSuite(table=table, cover=cover, paths=transition_cover(table),  # type: ignore[arg-type]
                     refusals=refusals(table) if cover == "pairs" else (),
                     lower_bound=max(1, len(into_terminal)))


@dataclass
class ForcedGuards:
    """Guard predicates whose answers a test sets before each step (a guard is forced, not computed)."""

    values: dict[str, bool] = field(default_factory=dict)

    def predicate(self, name: str) -> Callable[[Any, Mapping[str, Any]], bool]:
        return lambda state, payload: self.values[name]

    def force(self, row: Row) -> None:
        """Make ``row``'s guard hold (``not g`` holds when ``g`` is false)."""
        if row.guard_name:
            self.values[row.guard_name] = not row.negated

    def block(self, guards: Sequence[str]) -> None:
        """Make every one of ``guards`` fail."""
        for guard in guards:
            name = guard[4:].strip() if guard.startswith("not ") else guard
            self.values[name] = guard.startswith("not ")


MachineFactory = Callable[[TransitionTable, Mapping[str, Callable[[Any, Mapping[str, Any]], bool]]], LabMachine]


def _default_machine(table: TransitionTable, guards: Mapping[str, Callable[[Any, Mapping[str, Any]], bool]]
                     ) -> LabMachine:
    return LabMachine(table, guards=guards, clock=lambda: 0.0)


def _walk(machine: LabMachine, forced: ForcedGuards, path: Sequence[Row], label: str) -> list[str]:
    problems = []
    for i, row in enumerate(path):
        forced.force(row)
        try:
            event = machine.fire(row.event)
        except LabkitError as exc:
            return [*problems, f"{label} step {i + 1} {row}: refused ({exc})"]
        if (event.source, event.dest) != (row.source, row.dest):
            problems.append(f"{label} step {i + 1} {row}: went {event.source} -> {event.dest}")
            return problems
    return problems


def drive(suite: PathSuite, make_machine: MachineFactory = _default_machine) -> list[str]:
    """Run ``suite`` on fresh machines; return what went wrong ([] when followed). A refusal must raise
    :class:`IllegalTransition` and leave log and state as they were."""
    table = suite.table
    forced = ForcedGuards({name: False for name in table.guard_names()})
    guards = {name: forced.predicate(name) for name in table.guard_names()}
    problems: list[str] = []
    for n, path in enumerate(suite.paths, 1):
        problems += _walk(make_machine(table, guards), forced, path, f"sequence {n}")
    for f in suite.refusals:
        machine = make_machine(table, guards)
        label = f"refusal {f.state} + {f.event} ({f.reason})"
        walked = _walk(machine, forced, f.prefix, label)
        if walked:
            problems += walked
            continue
        forced.block(f.blocked)
        before = (len(machine.log), machine.log.head, machine.status)
        try:
            event = machine.fire(f.event)
        except IllegalTransition:
            after = (len(machine.log), machine.log.head, machine.status)
            if after != before:
                problems.append(f"{label}: refused, but the log or state changed ({before} -> {after})")
        except LabkitError as exc:
            problems.append(f"{label}: raised {type(exc).__name__} ({exc}), not IllegalTransition")
        else:
            problems.append(f"{label}: the machine took it ({event.source} -> {event.dest})")
    return problems
