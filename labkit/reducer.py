"""The replay reducer: state is a fold over the event log.

``reduce(state, event) -> state`` is pure, and states are immutable, so the state after any event
can be rebuilt from the log alone. That is what makes a run auditable: nothing a notebook shows
needs anything but the log. Layers above the core write their own reducers over richer states;
each such state keeps a ``status`` field (the machine state) so that the checks here apply to it.
"""

from __future__ import annotations

import dataclasses
import gc
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from labkit.errors import LabkitError
from labkit.events import Event, InvariantViolated, RunStarted, Transitioned
from labkit.invariants import Invariant
from labkit.table import TransitionTable


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


def reduce_machine(state: MachineState, event: Event) -> MachineState:
    """The core reducer: follows run starts, transitions and invariant violations."""
    if isinstance(event, Transitioned):  # the hot path: built directly, dataclasses.replace is slower
        return MachineState(event.dest, state.table, event.seq, state.transitions + 1, state.violations)
    if isinstance(event, RunStarted):
        return MachineState(status=event.initial, table=event.table, seq=event.seq)
    if isinstance(event, InvariantViolated):
        return dataclasses.replace(state, status=event.dest, seq=event.seq,
                                   violations=(*state.violations, event.invariant))
    return dataclasses.replace(state, seq=event.seq)


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

    def __init__(self, divergence: Divergence) -> None:
        self.divergence = divergence
        super().__init__(str(divergence), "compare the event at that seq with the state before it; "
                         "a reducer change or an edited log is the usual cause.")


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
) -> Replay[Any]:
    """Fold ``reduce`` over ``events`` from the empty state, checking the log's own claims.

    Each transition event says which state it left; if the replayed state disagrees, the log and
    the reducer disagree and :class:`ReplayDivergence` names the event. Given the ``table``, every
    transition must also be one of its rows: a log re-sealed with an invented move is refused.
    Invariants are checked after every event, as they were live; violations found here that the
    log does not itself record are reported in ``Replay.violations``.
    """
    state = MachineState() if empty is None else empty
    states: list[Any] = []
    history: list[Event] = []
    found: list[tuple[int, str, str]] = []
    recorded: set[tuple[int, str]] = set()
    seen: set[str] = set()
    rows = {(r.source, r.event, r.dest) for r in table.rows} if table is not None else None
    collecting = gc.isenabled()
    gc.disable()  # every state is kept: the cyclic collector would re-walk them all (see store.read_jsonl)
    try:
        for event in events:
            if isinstance(event, Transitioned) and getattr(state, "status", event.source) != event.source:
                raise ReplayDivergence(Divergence(
                    event.seq, f"the log says '{event.trigger}' left '{event.source}', "
                    f"but replay is in '{state.status}'", state, event))
            if rows is not None:
                _check_against_table(event, rows, table)
            if isinstance(event, InvariantViolated):
                recorded.add((event.after_seq, event.invariant))
            state = reduce(state, event)
            states.append(state)
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


def find_divergence(
    events: Sequence[Event],
    recorded: Sequence[Any] | Any,
    reduce: Reduce[Any] = reduce_machine,
    empty: Any = None,
) -> Divergence | None:
    """Compare replayed states with recorded ones and name the first event where they differ.

    ``recorded`` is either the state after every event (as a live :class:`LabMachine` keeps them)
    or one final state. With only a final state the divergence can be placed no earlier than the
    last event, which is why live machines keep the per-event states.
    """
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
