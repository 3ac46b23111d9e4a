"""The trace viewer's pure half: step *i* of a run rebuilt from the events alone (the event, the states
around it by the reducer, the invariants, the place on the diagram), as data and text for the widget,
static notebooks and tests."""

from __future__ import annotations

import dataclasses
import html
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from labkit.core import catalog
from labkit.core.diagram import to_mermaid
from labkit.core.errors import LabkitError
from labkit.core.events import Event, RunStarted, Transitioned, describe
from labkit.core.invariants import Invariant
from labkit.core.reducer import MachineState, Reduce, reduce_machine
from labkit.core.table import TransitionTable

_WIDTH = 72  # values longer than this are shortened in the state tables
_MISSING = object()


@dataclass(frozen=True)
class InvariantCheck:
    """One invariant's verdict on the state after a step."""

    name: str
    holds: bool
    detail: str = ""

    def __str__(self) -> str:
        return f"✓ {self.name}" if self.holds else f"✗ {self.name}: {self.detail}"


@dataclass(frozen=True)
class FieldRow:
    """One line of the before/after table: a state field and its two values (already shortened)."""

    name: str
    before: str
    after: str

    @property
    def changed(self) -> bool:
        return self.before != self.after


@dataclass(frozen=True)
class StepView:
    """Everything the viewer shows for one event of a trace; every field is plain data."""

    index: int
    total: int
    event: Event
    description: str
    before: Any
    after: Any
    fields: tuple[FieldRow, ...]
    checks: tuple[InvariantCheck, ...]
    status_before: str | None
    status_after: str | None
    diagram: str
    focus: tuple[str, ...] | None = None

    @property
    def changed(self) -> tuple[str, ...]:
        """Names of the state fields this event changed."""
        return tuple(f.name for f in self.fields if f.changed)

    @property
    def broken(self) -> tuple[InvariantCheck, ...]:
        return tuple(c for c in self.checks if not c.holds)


def state_fields(state: Any) -> dict[str, Any]:
    """The fields of a state as an ordered mapping (dataclass, pydantic model or mapping; else one ``value``)."""
    if state is None:
        return {}
    if dataclasses.is_dataclass(state) and not isinstance(state, type):
        return {f.name: getattr(state, f.name) for f in dataclasses.fields(state)}
    if isinstance(state, BaseModel):
        return {name: getattr(state, name) for name in type(state).model_fields}
    if isinstance(state, Mapping):
        return dict(state)
    return {"value": state}


def _compact(value: Any) -> str:
    """``repr`` without the noise: nested dataclasses show only the fields that differ from their defaults."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        shown = []
        for f in dataclasses.fields(value):
            current = getattr(value, f.name)
            default: Any = dataclasses.MISSING
            if f.default is not dataclasses.MISSING:
                default = f.default
            elif f.default_factory is not dataclasses.MISSING:
                default = f.default_factory()
            if current != default:
                shown.append(f"{f.name}={_compact(current)}")
        return f"{type(value).__name__}({', '.join(shown)})"
    if isinstance(value, BaseModel):
        return repr(value.model_dump())
    if isinstance(value, Mapping) and not isinstance(value, dict):
        return repr(dict(value))
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(value)


def format_value(value: Any, width: int = _WIDTH) -> str:
    """A short one-line form of a field value; long values end in ``…`` and say how long they were."""
    text = _compact(value)
    text = text.replace("\n", " ")  # reprs of custom objects may span lines
    if len(text) <= width:
        return text
    return text[: width - 12] + f"… ({len(text)} chars)"


def compare_states(before: Any, after: Any, width: int = _WIDTH,
                   focus: Sequence[str] | None = None) -> tuple[FieldRow, ...]:
    """The before/after table of two states, in the after state's field order (``focus``: only those)."""
    old, new = state_fields(before), state_fields(after)
    names = list(dict.fromkeys([*new, *old]))
    if focus is not None:
        names = [n for n in focus if n in old or n in new]
    missing = "—"
    return tuple(
        FieldRow(name,
                 format_value(old[name], width) if name in old else missing,
                 format_value(new[name], width) if name in new else missing)
        for name in names
    )


def _status(state: Any) -> str | None:
    status = getattr(state, "status", None)
    if status is None and isinstance(state, Mapping):
        status = state.get("status")
    return status if isinstance(status, str) and status else None


class Trace:
    """A recorded run viewed step by step, states folded once with no replay check (a tampered log can be
    looked at); ``focus``, ``project`` and ``describe`` shape what is shown."""

    def __init__(
        self,
        events: Sequence[Event],
        table: TransitionTable,
        reduce: Reduce[Any] = reduce_machine,
        empty: Any = None,
        invariants: Sequence[Invariant] = (),
        focus: Sequence[str] | None = None,
        *,
        project: Callable[[Any], Any] | None = None,
        describe: Callable[[Event], str] = describe,
    ) -> None:
        if not events:
            raise LabkitError("the trace has no events", "load a log with at least its run_started event.")
        self.events: tuple[Event, ...] = tuple(events)
        self.table = table
        self.reduce = reduce
        self.empty = MachineState() if empty is None else empty
        self.invariants = tuple(invariants)
        self.focus = tuple(focus) if focus is not None else None
        self.project = project
        self.describe = describe
        states: list[Any] = []
        state = self.empty
        for event in self.events:
            state = reduce(state, event)
            states.append(state)
        self.states: tuple[Any, ...] = tuple(states)

    @classmethod
    def from_catalog(cls, events: Sequence[Event], name: str | None = None,
                     focus: Sequence[str] | None = None, *, project: Callable[[Any], Any] | None = None,
                     describe: Callable[[Event], str] = describe) -> Trace:
        """A trace with the catalog's table, reducer and invariants (``name`` defaults to the log's own)."""
        if name is None:
            first = events[0] if events else None
            if not isinstance(first, RunStarted):
                raise LabkitError("the trace does not start with a run_started event, so its table is unknown",
                                  "pass the table name: Trace.from_catalog(events, 'ticket').")
            name = first.table
        entry = catalog.lookup(name)
        if entry is None:
            raise LabkitError(f"the catalog has no table named '{name}'",
                              f"known tables: {', '.join(catalog.names())}; or build Trace(events, table, ...).")
        return cls(events, entry.table(), entry.reduce, entry.empty(), entry.invariants(), focus,
                   project=project, describe=describe)

    def __len__(self) -> int:
        return len(self.events)

    def state_before(self, index: int) -> Any:
        return self.states[index - 1] if index > 0 else self.empty

    def checks(self, index: int) -> tuple[InvariantCheck, ...]:
        """Each invariant's verdict on the state after event ``index`` (with the history up to it)."""
        state, history = self.states[index], self.events[: index + 1]
        found = []
        for invariant in self.invariants:
            detail = invariant.violation(state, history)
            found.append(InvariantCheck(invariant.name, detail is None, detail or ""))
        return tuple(found)

    def step(self, index: int) -> StepView:
        """The view of event ``index`` (0-based position in the trace; negative counts from the end)."""
        if not -len(self) <= index < len(self):
            raise LabkitError(f"step {index} is outside the trace (it has {len(self)} events, 0..{len(self) - 1})",
                              "pick a step between 0 and the last event.")
        index %= len(self)
        before, after = self.state_before(index), self.states[index]
        status_after = _status(after)
        current = status_after if status_after in self.table.states else None
        return StepView(
            index=index,
            total=len(self),
            event=self.events[index],
            description=self.describe(self.events[index]),
            before=before,
            after=after,
            fields=compare_states(self.shown(before), self.shown(after), focus=self.focus),
            checks=self.checks(index),
            status_before=_status(before),
            status_after=status_after,
            diagram=to_mermaid(self.table, current=current),
            focus=self.focus,
        )

    def shown(self, state: Any) -> Any:
        """What the viewer shows of a state: its projection, if the trace has one."""
        return self.project(state) if self.project is not None else state

    def statuses(self) -> list[str | None]:
        """The machine state after every event."""
        return [_status(s) for s in self.states]

    def find(self, predicate: Callable[[Event], bool]) -> list[int]:
        """Positions of the events for which ``predicate`` holds (to jump to the interesting steps)."""
        return [i for i, e in enumerate(self.events) if predicate(e)]

    def first(self, type: str, **fields: Any) -> int:
        """Position of the first event of ``type`` whose fields equal ``fields`` (stable across re-recording)."""
        for i, event in enumerate(self.events):
            if event.type == type and all(getattr(event, k, _MISSING) == v for k, v in fields.items()):
                return i
        wanted = ", ".join(f"{k}={v!r}" for k, v in fields.items())
        raise LabkitError(f"the trace has no '{type}' event{' with ' + wanted if wanted else ''}",
                          "list its events with render_timeline(trace) and look for the step you meant.")


# ---------------------------------------------------------------------------------------- rendering
def _field_lines(fields: Sequence[FieldRow], *, only_changed: bool = False) -> list[str]:
    shown = [f for f in fields if f.changed or not only_changed]
    if not shown:
        return ["  (no field changed)"]
    name_w = max(len(f.name) for f in shown)
    before_w = max(len(f.before) for f in shown)
    lines = []
    for f in shown:
        mark = "*" if f.changed else " "
        after = f.after if f.changed else "(same)"
        lines.append(f"{mark} {f.name:<{name_w}}  {f.before:<{before_w}}  →  {after}")
    return lines


def render_state(state: Any, width: int = _WIDTH, focus: Sequence[str] | None = None) -> str:
    """One state as aligned ``field  value`` lines (only the ``focus`` fields, when given)."""
    fields = state_fields(state)
    if focus is not None:
        fields = {n: fields[n] for n in focus if n in fields}
    if not fields:
        return "  (empty)"
    name_w = max(len(n) for n in fields)
    return "\n".join(f"  {name:<{name_w}}  {format_value(v, width)}" for name, v in fields.items())


def event_question(view: StepView) -> str:
    """The event of a step without its outcome: a transition's destination is the answer, so it is hidden."""
    event = view.event
    if isinstance(event, Transitioned):
        return f"#{event.seq} '{event.trigger}' arrives in {event.source} (where does it lead?)"
    return view.description


def render_question(view: StepView) -> str:
    """The state before a step and the event that arrives, without the answer: for "predict, then see"."""
    lines = [f"step {view.index} of {view.total - 1} — state before (status {view.status_before or '(none)'}):"]
    if view.fields:
        width = max(len(f.name) for f in view.fields)
        lines += [f"  {f.name:<{width}}  {f.before}" for f in view.fields]
    else:
        lines.append("  (empty)")
    lines += [f"event: {event_question(view)}", "what will the state be after it?"]
    return "\n".join(lines)


def render_answer(view: StepView) -> str:
    """What the step changed and which invariants hold after it (the answer to :func:`render_question`)."""
    lines = [f"after step {view.index}: status {view.status_before or '(none)'} → {view.status_after or '(none)'}"]
    lines += _field_lines(view.fields, only_changed=True)
    if view.checks:
        lines.append("invariants: " + "; ".join(str(c) for c in view.checks))
    return "\n".join(lines)


def render_text(view: StepView, *, diagram: bool = False) -> str:
    """The whole step as plain text (stable, so it can be printed in an nbval-checked notebook)."""
    lines = [f"step {view.index} of {view.total - 1}: {view.description}",
             f"status: {view.status_before or '(none)'} → {view.status_after or '(none)'}",
             "state (* = changed by this event):", *_field_lines(view.fields)]
    if view.checks:
        lines.append("invariants after this step:")
        lines += [f"  {c}" for c in view.checks]
    if diagram:
        lines += ["diagram:", view.diagram.rstrip("\n")]
    return "\n".join(lines)


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|")


def render_markdown(view: StepView) -> str:
    """The step as Markdown: event, before/after table, invariants and a ``mermaid`` diagram."""
    lines = [f"**Step {view.index} of {view.total - 1}** — `{_md_cell(view.description)}`", "",
             f"status: `{view.status_before or '(none)'}` → `{view.status_after or '(none)'}`", "",
             "| field | before | after |", "|---|---|---|"]
    for f in view.fields:
        after = f"**{_md_cell(f.after)}**" if f.changed else _md_cell(f.after)
        lines.append(f"| {f.name} | {_md_cell(f.before)} | {after} |")
    if view.checks:
        lines += ["", "invariants after this step:", ""]
        lines += [f"- {'✓' if c.holds else '✗'} `{c.name}`" + ("" if c.holds else f": {c.detail}")
                  for c in view.checks]
    lines += ["", "```mermaid", view.diagram.rstrip("\n"), "```", ""]
    return "\n".join(lines)


def render_html(view: StepView) -> str:
    """The step as an HTML fragment, the diagram's Mermaid source in a collapsed ``<details>``."""
    esc = html.escape
    highlight = ' style="background:#fff3c4"'
    rows = "".join(
        f"<tr{highlight if f.changed else ''}><td><code>{esc(f.name)}</code></td>"
        f"<td>{esc(f.before)}</td><td>{esc(f.after)}</td></tr>"
        for f in view.fields)
    checks = "".join(
        f"<li style=\"color:{'#1b5e20' if c.holds else '#b71c1c'}\">{esc(str(c))}</li>" for c in view.checks)
    parts = [
        f"<div class=\"labkit-step\"><p><b>Step {view.index} of {view.total - 1}</b> — "
        f"<code>{esc(view.description)}</code></p>",
        f"<p>status: <code>{esc(view.status_before or '(none)')}</code> → "
        f"<code>{esc(view.status_after or '(none)')}</code></p>",
        f"<table><tr><th>field</th><th>before</th><th>after</th></tr>{rows}</table>",
    ]
    if checks:
        parts.append(f"<p>invariants after this step:</p><ul>{checks}</ul>")
    parts.append(f"<details><summary>diagram (Mermaid)</summary><pre>{esc(view.diagram)}</pre></details></div>")
    return "".join(parts)


def render_timeline(trace: Trace, start: int = 0, stop: int | None = None) -> str:
    """Events ``start`` to ``stop`` (all by default), one line each, with the status after each."""
    statuses = trace.statuses()
    width = max(len(s or "(none)") for s in statuses)
    pairs = list(zip(trace.events, statuses, strict=True))[start:stop]
    return "\n".join(f"{(s or '(none)'):<{width}}  {trace.describe(e)}" for e, s in pairs)


def run_view(state: Any) -> dict[str, Any]:
    """The fields of a planner–executor run state worth reading step by step (duck-typed ``RunState``)."""
    action = getattr(state, "action", None)
    if action is None:
        shown_action = "-"
    else:
        parts = [f"{action.action_id} {action.tool}{'(write)' if action.side_effect else ''}",
                 f"attempts={action.attempts}"]
        if action.call_open:
            parts.append("call open")
        if action.last_outcome:
            parts.append(f"last={action.last_outcome}")
        if action.status_checks:
            parts.append(f"status checks={action.status_checks}")
        if not action.token:
            parts.append("no token")
        shown_action = ", ".join(parts)
    owed = getattr(state, "owed", None)
    return {
        "status": getattr(state, "status", "") or "-",
        "action": shown_action,
        "owed": owed[0] if owed else "-",
        "reads": ",".join(getattr(state, "reads", {})) or "-",
        "drafts": ",".join(getattr(state, "drafts", {})) or "-",
        "tool_calls": getattr(state, "tool_calls", 0),
        "outcome": getattr(state, "outcome", "") or "-",
    }
