"""LabMachine: a ``transitions`` machine driven by a checked table, with a log and invariants.

A step checks the event, lets ``transitions`` pick the row, seals ``Transitioned``, folds it and checks
every invariant; the state is always what replaying the log gives."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NoReturn

from transitions import Machine

from labkit.core.errors import IllegalTransition, InvariantViolation, LabkitError, RunFinished
from labkit.core.events import Event, FieldsSet, InvariantViolated, RunStarted, Transitioned
from labkit.core.invariants import Invariant, judged, raised
from labkit.core.reducer import Guard, MachineState, Reduce, ReplayDivergence, reduce_machine, replay
from labkit.core.store import EventLog
from labkit.core.table import TransitionTable

Clock = Callable[[], float]
_validate_transitioned = Transitioned.__pydantic_validator__.validate_python
# The names fire() builds every Transitioned with: what pydantic puts in each event's fields set.
# The events share one read-only copy instead (see FieldsSet; tests/test_machine.py checks equality).
_TRANSITIONED_FIELDS = FieldsSet(("trigger", "source", "dest", "payload", "seq", "prev_hash", "run_id", "at"))
_set_slot = object.__setattr__


class _Model:
    """The object ``transitions`` moves between states; labkit keeps the real state in the log."""

    state: str


class LabMachine:
    """A run of a transition table; everything it knows is in ``self.log`` (pass one to resume).

    ``on_violation``: ``"raise"`` (record, halt, raise) or a terminal state to move the run to."""

    def __init__(
        self,
        table: TransitionTable,
        *,
        guards: Mapping[str, Guard] | None = None,
        invariants: Sequence[Invariant] = (),
        reduce: Reduce[Any] = reduce_machine,
        empty: Any = None,
        log: EventLog | None = None,
        clock: Clock = time.time,
        on_violation: str = "raise",
        versions: Mapping[str, str] | None = None,
        params: Mapping[str, Any] | None = None,
    ) -> None:
        self.table = table
        self.guards = dict(guards or {})
        self.invariants = tuple(invariants)
        self.reduce = reduce
        self.empty = MachineState() if empty is None else empty
        self.log = log if log is not None else EventLog()
        self.clock = clock
        self._check_configuration(on_violation)
        self.on_violation = on_violation
        self._allowed = {s: table.allowed_events(s) for s in table.states}
        # What fire() may send from each state, as sets: a terminal state sends nothing.
        self._open = {s: frozenset(() if s in table.terminal else events) for s, events in self._allowed.items()}
        self._model = _Model()
        self._machine = Machine(
            model=self._model,
            states=list(table.states),
            initial=table.initial,
            transitions=[self._transition_spec(row) for row in table.rows],
            auto_transitions=False,
            send_event=True,
            ignore_invalid_triggers=False,
        )
        self._triggers = self._machine.events  # fire() checks the event is allowed, then calls it directly
        self._halted: str | None = None
        existing = list(self.log.events)
        if existing:
            self._resume(existing)
        else:
            self._states: list[Any] = []
            self.state = self.empty
            self._append(RunStarted(table=table.name, initial=table.initial,
                                    versions=dict(versions or {}), params=dict(params or {})))

    # ------------------------------------------------------------- set-up
    def _check_configuration(self, on_violation: str) -> None:
        missing = sorted(self.table.guard_names() - set(self.guards))
        if missing:
            raise LabkitError(f"table '{self.table.name}' uses guard(s) {', '.join(missing)} "
                              "but no predicate was given for them",
                              "pass guards={'name': lambda state, payload: ...} for each.")
        if on_violation != "raise" and on_violation not in self.table.terminal:
            raise LabkitError(f"on_violation='{on_violation}' is neither 'raise' nor a terminal state",
                              f"use 'raise' or one of: {', '.join(sorted(self.table.terminal))}.")

    def _transition_spec(self, row: Any) -> dict[str, Any]:
        spec: dict[str, Any] = {"trigger": row.event, "source": row.source, "dest": row.dest}
        if row.guard_name:
            predicate = self.guards[row.guard_name]
            condition = lambda event_data, p=predicate: bool(p(self.state, event_data.kwargs))  # noqa: E731
            spec["unless" if row.negated else "conditions"] = [condition]
        return spec

    def _resume(self, existing: list[Event]) -> None:
        if not isinstance(existing[0], RunStarted) or existing[0].table != self.table.name:
            raise LabkitError(f"the log does not start a run of table '{self.table.name}'",
                              "resume a log with the table that wrote it.")
        try:
            result = replay(existing, self.reduce, self.empty, self.invariants, self.table)
        except ReplayDivergence as exc:
            raise LabkitError(f"cannot resume: {exc.message}", exc.hint) from None
        if result.violations:
            seq, name, detail = result.violations[0]
            raise LabkitError(f"cannot resume: the log breaks invariant '{name}' at seq {seq} ({detail}) "
                              "without recording it", "the log was altered, or the invariants changed since it "
                              "was written; inspect it with `labkit replay`.")
        self._states = list(result.states)
        self.state = result.state
        self._machine.set_state(self.state.status, model=self._model)
        if isinstance(existing[-1], InvariantViolated) and self.on_violation == "raise":
            self._halted = existing[-1].invariant

    # ------------------------------------------------------------- queries
    @property
    def status(self) -> str:
        """The current machine state's name."""
        return self._model.state

    @property
    def events(self) -> Sequence[Event]:
        return self.log.events

    @property
    def states(self) -> list[Any]:
        """The state after every event of the log (the last is ``self.state``), folded lazily and kept."""
        states, events = self._states, self.log.events
        if len(states) < len(events):
            state = states[-1] if states else self.empty
            for event in events[len(states):]:
                state = self.reduce(state, event)
                states.append(state)
        return states

    @property
    def finished(self) -> bool:
        return self.status in self.table.terminal or self._halted is not None

    def allowed(self) -> list[str]:
        """Events that have a row leaving the current state."""
        return [] if self._halted else list(self._allowed[self.status])

    # ------------------------------------------------------------- steps
    def fire(self, trigger: str, **payload: Any) -> Event:
        """Send ``trigger`` with ``payload``; return the sealed ``Transitioned`` event. Raises
        :class:`IllegalTransition` (nothing recorded) or :class:`InvariantViolation` (recorded)."""
        source = self._model.state
        if self._halted is not None or trigger not in self._open[source]:
            self._refuse(source, trigger)
        if not self._triggers[trigger].trigger(self._model, **payload):
            guards = ", ".join(r.guard or "-" for r in self.table.rows_for(source, trigger))
            raise IllegalTransition(source, trigger, self._allowed[source], f"no row's guard holds: {guards}")
        log = self.log
        events = log.events  # never empty: a machine's log starts with its RunStarted
        now = self.clock()
        try:
            # The validator itself, not ``Transitioned(...)``: the same checks, without the keyword
            # plumbing of ``BaseModel.__init__`` (a third of construction time on this hot path).
            event = _validate_transitioned({"trigger": trigger, "source": source, "dest": self._model.state,
                                            "payload": payload, "seq": len(events), "prev_hash": events[-1].hash,
                                            "run_id": log.run_id, "at": now})
            _set_slot(event, "__pydantic_fields_set__", _TRANSITIONED_FIELDS)
            sealed = self._append(event, now, True)
        except Exception:
            self._machine.set_state(source, model=self._model)  # nothing recorded: nothing happened
            raise
        self._check_invariants(sealed, log.events)
        return sealed

    def _refuse(self, source: str, trigger: str) -> NoReturn:
        """Raise the error that says why ``trigger`` cannot fire in ``source`` (nothing is recorded)."""
        if self._halted is not None:
            raise IllegalTransition(source, trigger, [], f"the run halted after invariant '{self._halted}' failed")
        if source in self.table.terminal:
            raise IllegalTransition(source, trigger, [], f"the run ended at seq {self.end_seq}")
        raise IllegalTransition(source, trigger, self._allowed[source])

    @property
    def end_seq(self) -> int | None:
        """The seq of the event that took the run into its terminal state (None while it runs)."""
        if self.status not in self.table.terminal:
            return None
        for event in reversed(self.log.events):
            if isinstance(event, Transitioned | InvariantViolated) and event.dest == self.status:
                return event.seq
        return self.log.events[-1].seq

    def record(self, event: Event) -> Event:
        """Append a fact that is not a transition and check invariants; :class:`RunFinished` once ended."""
        if isinstance(event, Transitioned | RunStarted | InvariantViolated):
            raise LabkitError(f"'{event.type}' events are written by the machine itself",
                              "use fire() for transitions; record() is for facts.")
        end = self.end_seq
        if end is not None:
            raise RunFinished(self.status, event.type, end)
        if self._halted is not None:
            raise IllegalTransition(self.status, event.type, [],
                                    f"the run halted after invariant '{self._halted}' failed")
        sealed = self._append(event)
        self._check_invariants(sealed, self.log.events)
        return sealed

    def _append(self, event: Event, at: float | None = None, owned: bool = False) -> Event:
        """Seal, persist and fold one event; if it cannot be recorded, nothing changes."""
        try:
            sealed = self.log.append(event, at=self.clock() if at is None else at, owned=owned)
        except LabkitError:
            raise
        except Exception as exc:  # e.g. a payload value JSON cannot hold, or a full disk
            raise LabkitError(f"event '{getattr(event, 'trigger', event.type)}' could not be recorded: "
                              f"{type(exc).__name__}: {exc}",
                              "payload values must be JSON-serialisable (str, numbers, lists, dicts); "
                              "nothing was recorded and the state is unchanged.") from exc
        self.state = self.reduce(self.state, sealed)
        return sealed

    def _check_invariants(self, sealed: Event, events: Sequence[Event]) -> None:
        """Run every invariant on the state after ``sealed``; record each that fails (as ``violation`` would)."""
        state = self.state
        for invariant in self.invariants:
            try:
                result = invariant.check(state, events)
            except Exception as exc:  # a crashing check must not let a bad state through
                result = raised(exc)
            if result is not None:
                self._violate(invariant, judged(result), sealed.seq)
                state = self.state

    def _violate(self, invariant: Invariant, detail: str, seq: int) -> None:
        here = self.status
        dest = here if self.on_violation == "raise" else self.on_violation
        violation = self._append(InvariantViolated(invariant=invariant.name, detail=detail,
                                                   after_seq=seq, state=here, dest=dest))
        if self.on_violation == "raise":
            self._halted = invariant.name
            raise InvariantViolation(invariant.name, detail, violation.seq, seq)
        self._machine.set_state(dest, model=self._model)
