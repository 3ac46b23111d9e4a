"""Declarative transition tables, checked when built (misspelt or unreachable states, rows that could both
fire). Guards are names; ``"not NAME"`` negates one, and a ``g``/``not g`` pair is the only split of a
(state, event) the build can prove deterministic."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from labkit.core.errors import TableError


@dataclass(frozen=True)
class Row:
    """One line of a transition table."""

    source: str
    event: str
    dest: str
    guard: str | None = None

    def __str__(self) -> str:
        guard = f" [{self.guard}]" if self.guard else ""
        return f"({self.source}, {self.event} -> {self.dest}{guard})"

    @property
    def guard_name(self) -> str | None:
        """The guard's predicate name without a leading ``not``."""
        if self.guard is None:
            return None
        return self.guard[4:].strip() if self.guard.startswith("not ") else self.guard

    @property
    def negated(self) -> bool:
        return self.guard is not None and self.guard.startswith("not ")


@dataclass(frozen=True)
class TransitionTable:
    """A checked transition table. Build one with :meth:`build`, which refuses broken tables."""

    name: str
    states: tuple[str, ...]
    rows: tuple[Row, ...]
    initial: str
    terminal: frozenset[str]
    impossible: frozenset[tuple[str, str]] = field(default_factory=frozenset)

    @classmethod
    def build(
        cls,
        name: str,
        states: Sequence[str],
        rows: Iterable[Row | tuple[Any, ...]],
        initial: str,
        terminal: Iterable[str],
        impossible: Iterable[tuple[str, str]] = (),
    ) -> TransitionTable:
        """Check the table and return it, or raise :class:`TableError` listing every problem; ``impossible``
        pairs are left out of :meth:`unhandled`."""
        table = cls(
            name=name,
            states=tuple(states),
            rows=tuple(r if isinstance(r, Row) else Row(*r) for r in rows),
            initial=initial,
            terminal=frozenset(terminal),
            impossible=frozenset(tuple(p) for p in impossible),
        )
        problems = table.problems()
        if problems:
            raise TableError(problems)
        return table

    # ----------------------------------------------------------------- checks
    def problems(self) -> list[str]:
        """Every structural problem of the table, as sentences naming the rows involved."""
        problems: list[str] = []
        known = set(self.states)
        if len(known) != len(self.states):
            dupes = sorted({s for s in self.states if self.states.count(s) > 1})
            problems.append(f"states listed twice: {', '.join(dupes)}")
        if self.initial not in known:
            problems.append(f"initial state '{self.initial}' is not among the states")
        for state in sorted(self.terminal - known):
            problems.append(f"terminal state '{state}' is not among the states")
        for row in self.rows:
            for role, state in (("source", row.source), ("dest", row.dest)):
                if state not in known:
                    problems.append(f"row {row}: unknown {role} state '{state}'")
            if row.guard is not None and not row.guard_name:
                problems.append(f"row {row}: empty guard name")
        problems += self._duplicate_and_nondeterministic_rows()
        for row in self.rows:
            if row.source in self.terminal:
                problems.append(f"row {row}: terminal state '{row.source}' must have no outgoing rows")
        if self.initial in known:
            reachable = self.reachable()
            for state in self.states:
                if state not in reachable:
                    problems.append(f"state '{state}' is unreachable from '{self.initial}'")
        sources = {r.source for r in self.rows}
        for state in self.states:
            if state not in self.terminal and state not in sources:
                problems.append(f"state '{state}' has no outgoing rows but is not terminal (a dead end)")
        for state, event in sorted(self.impossible):
            if state not in known:
                problems.append(f"impossible pair ({state}, {event}): unknown state '{state}'")
            elif any(r.source == state and r.event == event for r in self.rows):
                problems.append(f"impossible pair ({state}, {event}) is handled by a row; remove one of them")
        return problems

    def _duplicate_and_nondeterministic_rows(self) -> list[str]:
        problems: list[str] = []
        by_pair: dict[tuple[str, str], list[Row]] = {}
        for row in self.rows:
            by_pair.setdefault((row.source, row.event), []).append(row)
        for group in by_pair.values():
            if len(group) < 2:
                continue
            seen: set[Row] = set()
            for row in group:
                if row in seen:
                    problems.append(f"row {row} is listed twice")
                seen.add(row)
            distinct = list(dict.fromkeys(group))
            if len(distinct) < 2:
                continue
            names = {r.guard_name for r in distinct}
            exclusive = (len(distinct) == 2 and len(names) == 1 and None not in names
                         and distinct[0].negated != distinct[1].negated)
            if not exclusive:
                shown = ", ".join(str(r) for r in distinct)
                problems.append(
                    f"rows {shown} can both fire for the same (state, event); split them by guards "
                    "'g' and 'not g', or use different events")
        return problems

    # ----------------------------------------------------------------- queries
    @property
    def events(self) -> tuple[str, ...]:
        """Every event name used by some row, in first-use order."""
        return tuple(dict.fromkeys(r.event for r in self.rows))

    def reachable(self) -> set[str]:
        """States reachable from the initial state, following rows regardless of guards."""
        seen = {self.initial}
        queue = deque([self.initial])
        while queue:
            state = queue.popleft()
            for row in self.rows:
                if row.source == state and row.dest not in seen:
                    seen.add(row.dest)
                    queue.append(row.dest)
        return seen

    def rows_for(self, state: str, event: str) -> list[Row]:
        return [r for r in self.rows if r.source == state and r.event == event]

    def allowed_events(self, state: str) -> list[str]:
        """Events that have a row leaving ``state``, in table order."""
        return list(dict.fromkeys(r.event for r in self.rows if r.source == state))

    def unhandled(self) -> list[tuple[str, str]]:
        """(state, event) pairs of non-terminal states no row handles and nobody declared impossible."""
        handled = {(r.source, r.event) for r in self.rows}
        return [
            (state, event)
            for state in self.states
            if state not in self.terminal
            for event in self.events
            if (state, event) not in handled and (state, event) not in self.impossible
        ]

    def guard_names(self) -> set[str]:
        return {r.guard_name for r in self.rows if r.guard_name}

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form; :func:`table_from_dict` reads it back."""
        return {
            "name": self.name,
            "states": list(self.states),
            "initial": self.initial,
            "terminal": sorted(self.terminal),
            "rows": [[r.source, r.event, r.dest, r.guard] if r.guard else [r.source, r.event, r.dest]
                     for r in self.rows],
            "impossible": [list(p) for p in sorted(self.impossible)],
        }


def table_from_dict(data: Any) -> TransitionTable:
    """Build (and check) a table from :meth:`TransitionTable.to_dict`'s JSON, shape first (errors name keys)."""
    if not isinstance(data, dict):
        raise TableError([f"a table description is a JSON object, not {type(data).__name__}"])
    missing = [k for k in ("states", "initial", "terminal", "rows") if k not in data]
    if missing:
        raise TableError([f"the table description lacks the key(s): {', '.join(missing)}"])
    problems: list[str] = []

    def names(key: str, value: Any) -> bool:
        if isinstance(value, list) and all(isinstance(v, str) and v for v in value):
            return True
        problems.append(f"'{key}' must be a list of non-empty strings, got {value!r}")
        return False

    def row_ok(row: Any, sizes: tuple[int, ...]) -> bool:
        return (isinstance(row, list) and len(row) in sizes
                and all(isinstance(v, str) and v for v in row))

    names("states", data["states"])
    names("terminal", data["terminal"])
    if not isinstance(data["initial"], str):
        problems.append(f"'initial' must be a state name, got {data['initial']!r}")
    rows = data["rows"]
    if not isinstance(rows, list):
        problems.append(f"'rows' must be a list of rows, got {rows!r}")
    else:
        problems += [f"row {r!r} must be [source, event, dest] or [source, event, dest, guard] (strings)"
                     for r in rows if not row_ok(r, (3, 4))]
    impossible = data.get("impossible", [])
    if not isinstance(impossible, list):
        problems.append(f"'impossible' must be a list of [state, event] pairs, got {impossible!r}")
    else:
        problems += [f"impossible pair {p!r} must be [state, event] (strings)"
                     for p in impossible if not row_ok(p, (2,))]
    if problems:
        raise TableError(problems)
    return TransitionTable.build(
        name=str(data.get("name", "table")),
        states=data["states"],
        rows=[Row(*r) for r in rows],
        initial=data["initial"],
        terminal=data["terminal"],
        impossible=[tuple(p) for p in impossible],
    )
