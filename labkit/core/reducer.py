"""The replay reducer: state is a pure fold over the event log, so any state can be rebuilt from the log.

States of the layers above keep a ``status`` field (the machine state) so the checks here apply."""

from __future__ import annotations

import dataclasses
import gc
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from labkit.core.errors import LabkitError
from labkit.core.events import Event, InvariantViolated, RunStarted, Transitioned
from labkit.core.invariants import Invariant
from labkit.core.table import TransitionTable


@dataclass(frozen=True, slots=True)
class MachineState:
    """What the core knows about a run: where it is and how it got there."""

    status: str = ""
    table: str = ""
    seq: int = -1
    transitions: int = 0
    violations: tuple[str, ...] = ()


S = TypeVar("S")
Reduce = Callable[[S, Event], S]
Guard = Callable[[Any, Mapping[str, Any]], bool]
"""A guard sees the reduced state and the event's payload, and says whether its row may fire."""


_new_object = object.__new__
_SET_STATUS, _SET_TABLE, _SET_SEQ, _SET_TRANSITIONS, _SET_VIOLATIONS = (
    MachineState.__dict__[name].__set__ for name in ("status", "table", "seq", "transitions", "violations"))


def reduce_machine(state: MachineState, event: Event) -> MachineState:
    """The core reducer: follows run starts, transitions and invariant violations."""
    if isinstance(event, Transitioned):
        # Every step of every run comes here: this is
        # ``MachineState(event.dest, state.table, event.seq, state.transitions + 1, state.violations)``
        # at half the cost. A frozen dataclass's ``__init__`` fills each slot through
        # ``object.__setattr__``; the slot descriptors fill them directly. The result is the same
        # frozen instance (equal, hashable, immutable); ``tests/test_machine.py`` checks it field by field.
        new = _new_object(MachineState)
        _SET_STATUS(new, event.dest)
        _SET_TABLE(new, state.table)
        _SET_SEQ(new, event.seq)
        _SET_TRANSITIONS(new, state.transitions + 1)
        _SET_VIOLATIONS(new, state.violations)
        return new
    if isinstance(event, RunStarted):
        return MachineState(status=event.initial, table=event.table, seq=event.seq)
    if isinstance(event, InvariantViolated):
        return dataclasses.replace(state, status=event.dest, seq=event.seq,
                                   violations=(*state.violations, event.invariant))
    return dataclasses.replace(state, seq=event.seq)


@dataclass(frozen=True)
class TableEntry:
    """Everything needed to rebuild and re-check one table's runs; ``guards``: predicates on the reduced
    state alone, checked by :func:`replay`. Declared as ``TABLES`` in ``registry.TABLE_MODULES``."""

    table: Callable[[], TransitionTable]
    reduce: Reduce[Any] = reduce_machine
    empty: Callable[[], Any] = MachineState
    invariants: Callable[[], Sequence[Invariant]] = field(default=tuple)
    guards: Callable[[], Mapping[str, Guard]] = field(default=dict)


@dataclass(frozen=True)
class Divergence:
    """Where a replayed state first differs from a recorded one."""

    seq: int
    reason: str
    replayed: Any = None
    recorded: Any = None

    def __str__(self) -> str:
        return f"first divergence at event seq {self.seq}: {self.reason}"


class ReplayDivergence(LabkitError):
    """Replaying the log does not lead where the log says it went."""

    def __init__(self, divergence: Divergence, hint: str = "compare the event at that seq with the state "
                 "before it; a reducer change or an edited log is the usual cause.") -> None:
        self.divergence = divergence
        super().__init__(str(divergence), hint)


class EventAfterEnd(ReplayDivergence):
    """The log goes on after its run reached a terminal state, which is absorbing."""

    def __init__(self, divergence: Divergence) -> None:
        super().__init__(divergence, "a finished run records nothing more: the events from that seq on were "
                         "appended after the end (by hand or by a broken writer); keep the log up to its end.")


@dataclass(frozen=True)
class Replay(Generic[S]):
    """The result of replaying a log: the final state, every intermediate state, invariant findings."""

    state: S
    states: tuple[S, ...]
    violations: tuple[tuple[int, str, str], ...]  # (seq, invariant, detail) found while replaying


def replay(
    events: Iterable[Event],
    reduce: Reduce[Any] = reduce_machine,
    empty: Any = None,
    invariants: Sequence[Invariant] = (),
    table: TransitionTable | None = None,
    guards: Mapping[str, Guard] | None = None,
) -> Replay[Any]:
    """Fold ``reduce`` over ``events``, checking the log's own claims.

    Raises :class:`ReplayDivergence` (source state, or with ``table`` a non-row or failed guard) and
    :class:`EventAfterEnd`; violations the log does not record are in ``Replay.violations``."""
    state = MachineState() if empty is None else empty
    states: list[Any] = []
    history: list[Event] = []
    found: list[tuple[int, str, str]] = []
    recorded: set[tuple[int, str]] = set()
    seen: set[str] = set()
    rows = {(r.source, r.event, r.dest) for r in table.rows} if table is not None else None
    guarded = _guarded_rows(table, guards or {}) if table is not None else {}
    terminal = table.terminal if table is not None else frozenset()
    last_fact = -1  # the seq of the newest event that is not an invariant finding
    end: int | None = None  # the seq at which the run entered a terminal state
    collecting = gc.isenabled()
    gc.disable()  # every state is kept: the cyclic collector would re-walk them all (see store.read_jsonl)
    try:
        for event in events:
            if isinstance(event, Transitioned) and getattr(state, "status", event.source) != event.source:
                raise ReplayDivergence(Divergence(
                    event.seq, f"the log says '{event.trigger}' left '{event.source}', "
                    f"but replay is in '{state.status}'", state, event))
            if end is not None and not (isinstance(event, InvariantViolated) and event.after_seq == last_fact):
                raise EventAfterEnd(Divergence(
                    event.seq, f"'{event.type}' comes after the run ended in '{state.status}' at seq {end}"))
            if rows is not None:
                _check_against_table(event, rows, table)
            if guarded and isinstance(event, Transitioned):
                _check_guard(event, state, guarded)
            if isinstance(event, InvariantViolated):
                recorded.add((event.after_seq, event.invariant))
            else:
                last_fact = event.seq
            state = reduce(state, event)
            states.append(state)
            if end is None and terminal and getattr(state, "status", None) in terminal:
                end = event.seq
            if invariants:
                history.append(event)
            if invariants and not isinstance(event, InvariantViolated):
                for inv in invariants:
                    if inv.name in seen:
                        continue
                    detail = inv.violation(state, history)
                    if detail is not None:
                        seen.add(inv.name)
                        found.append((event.seq, inv.name, detail))
    finally:
        if collecting:
            gc.enable()
    unrecorded = tuple(v for v in found if (v[0], v[1]) not in recorded)
    return Replay(state=state, states=tuple(states), violations=unrecorded)


def _check_against_table(event: Event, rows: set[tuple[str, str, str]], table: TransitionTable) -> None:
    if isinstance(event, RunStarted) and event.initial != table.initial:
        raise ReplayDivergence(Divergence(event.seq, f"the run starts in '{event.initial}', but table "
                                          f"'{table.name}' starts in '{table.initial}'"))
    if isinstance(event, Transitioned) and (event.source, event.trigger, event.dest) not in rows:
        raise ReplayDivergence(Divergence(
            event.seq, f"the log moves {event.source} --{event.trigger}--> {event.dest}, "
            f"which is not a row of table '{table.name}'"))


def _guarded_rows(table: TransitionTable,
                  guards: Mapping[str, Guard]) -> dict[tuple[str, str, str], list[tuple[str, bool, Guard]]]:
    """(source, event, dest) -> (guard, negated, predicate) for each row whose guard ``guards`` knows."""
    found: dict[tuple[str, str, str], list[tuple[str, bool, Guard]]] = {}
    for row in table.rows:
        if row.guard_name in guards:
            found.setdefault((row.source, row.event, row.dest), []).append(
                (str(row.guard), row.negated, guards[row.guard_name]))
    return found


def _check_guard(event: Transitioned, state: Any,
                 guarded: Mapping[tuple[str, str, str], list[tuple[str, bool, Guard]]]) -> None:
    """The transition's row must have been allowed to fire: its guard holds on the state before it."""
    checks = guarded.get((event.source, event.trigger, event.dest))
    if not checks:
        return
    if any(bool(predicate(state, event.payload)) != negated for _, negated, predicate in checks):
        return
    names = ", ".join(name for name, _, _ in checks)
    raise ReplayDivergence(Divergence(
        event.seq, f"the log moves {event.source} --{event.trigger}--> {event.dest}, but the row's guard "
        f"[{names}] does not hold on the state before it", state, event))


def find_divergence(
    events: Sequence[Event],
    recorded: Sequence[Any] | Any,
    reduce: Reduce[Any] = reduce_machine,
    empty: Any = None,
) -> Divergence | None:
    """Name the first event where replayed states differ from ``recorded`` (every state, or one final)."""
    try:
        result = replay(events, reduce, empty)
    except ReplayDivergence as exc:
        return exc.divergence
    if isinstance(recorded, Sequence) and not isinstance(recorded, str | bytes):
        for event, mine, theirs in zip(events, result.states, recorded, strict=False):
            if mine != theirs:
                return Divergence(event.seq, _differing_fields(mine, theirs), mine, theirs)
        if len(recorded) != len(result.states):
            return Divergence(len(min(recorded, result.states, key=len)),
                              f"{len(result.states)} replayed states but {len(recorded)} recorded")
        return None
    if result.state != recorded:
        last = events[-1].seq if events else -1
        return Divergence(last, _differing_fields(result.state, recorded), result.state, recorded)
    return None


def _differing_fields(mine: Any, theirs: Any) -> str:
    if dataclasses.is_dataclass(mine) and type(mine) is type(theirs):
        names = [f.name for f in dataclasses.fields(mine) if getattr(mine, f.name) != getattr(theirs, f.name)]
        parts = [f"{n}: replayed {getattr(mine, n)!r}, recorded {getattr(theirs, n)!r}" for n in names]
        return "; ".join(parts)
    return f"replayed {mine!r}, recorded {theirs!r}"
