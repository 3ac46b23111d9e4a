"""LayeredMachine: several checked layers, a workflow graph and a lifecycle view, over one event log.

The persisted layers are the truth; the graph's position restarts at its start node; the lifecycle is a
view with no setter. A step honours a pending abort, makes the node's moves, runs it, follows its edge or
router; a refused move, undeclared key or broken rule is recorded and pauses the run. The ``check_*`` and
``abort_checkpoints`` switches turn checks off only to show what each prevents."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from labkit.core.errors import LabkitError
from labkit.core.events import Event, InvariantViolated, RunStarted
from labkit.core.reducer import Divergence, Replay, ReplayDivergence, replay
from labkit.core.store import EventLog
from labkit.core.table import Row
from labkit.layers.events import (
    AbortRequested,
    LayerMoved,
    LoopStarted,
    LoopStopped,
    ModelCalled,
    MoveRefused,
    Noted,
    RouteRefused,
    ToolCalled,
)
from labkit.layers.graph import NEXT, Router
from labkit.layers.layer import Refusal
from labkit.layers.spec import LayeredSpec
from labkit.layers.state import LayeredState, reduce_layers


class _Stop(Exception):
    """Internal: the loop must stop now; the reason is already recorded."""


class Ctx:
    """What a node may do: read the state, note facts, call the model and tools (abort checkpoints)."""

    def __init__(self, machine: LayeredMachine, node: str) -> None:
        self.machine = machine
        self.node = node

    @property
    def state(self) -> LayeredState:
        return self.machine.state

    @property
    def memo(self) -> Mapping[str, Any]:
        return self.machine.state.memo

    def note(self, key: str, value: Any) -> None:
        """Record a fact for routers and later nodes (JSON values only)."""
        self.machine._append(Noted(node=self.node, key=key, value=value))

    def call_model(self, prompt: str, *, max_tokens: int = 48, stop: Sequence[str] = ()) -> str:
        """One completion from the machine's model, recorded; an abort seen first means no call."""
        machine = self.machine
        machine._checkpoint(self.node)
        if machine.model is None:
            raise LabkitError(f"node {self.node} calls the model, but the machine was given none",
                              "pass model= (a labkit.llm backend) to LayeredMachine.")
        began = machine.log.events[-1].seq
        completion = machine.model.complete(prompt, max_tokens=max_tokens, stop=list(stop))
        machine._append(ModelCalled(node=self.node, prompt=prompt, text=completion.text, began_after=began,
                                    prompt_tokens=completion.prompt_tokens,
                                    completion_tokens=completion.completion_tokens))
        return completion.text

    def call_tool(self, tool: str, fn: Callable[..., Any], **args: Any) -> Any:
        """Run a tool (a side effect), recorded; an abort seen first means no call."""
        machine = self.machine
        machine._checkpoint(self.node)
        began = machine.log.events[-1].seq
        result = fn(**args)
        machine._append(ToolCalled(node=self.node, tool=tool, args=args, result=result, began_after=began))
        return result


class LayeredMachine:
    """A run of a :class:`LayeredSpec`; everything it knows is in ``self.log`` (pass one to resume).
    ``model`` is any :class:`labkit.llm.Backend`; leave the ``check_*`` switches on."""

    def __init__(self, spec: LayeredSpec, *, model: Any = None, log: EventLog | None = None,
                 clock: Callable[[], float] = time.time, check_rules: bool = True, check_routes: bool = True,
                 abort_checkpoints: bool = True, params: Mapping[str, Any] | None = None,
                 versions: Mapping[str, str] | None = None) -> None:
        self.spec = spec
        self.model = model
        self.log = log if log is not None else EventLog()
        self.clock = clock
        self.check_rules = check_rules
        self.check_routes = check_routes
        self.abort_checkpoints = abort_checkpoints
        self._invariants = spec.invariants() if check_rules else []
        self._lock = threading.RLock()
        self._runner: int | None = None  # the thread running the loop, while it runs
        existing = list(self.log.events)
        if existing:
            self.state = self._resumed(existing)
        else:
            self.state = LayeredState()
            layers = {layer.name: layer.initial for layer in spec.all_layers()}
            transient = {layer.name: layer.initial for layer in spec.all_layers() if not layer.persisted}
            self._append(RunStarted(table=spec.name, initial=spec.graph.start, versions=dict(versions or {}),
                                    params={**dict(params or {}), "layers": layers, "transient": transient}))

    def _resumed(self, existing: list[Event]) -> LayeredState:
        if not isinstance(existing[0], RunStarted) or existing[0].table != self.spec.name:
            raise LabkitError(f"the log does not start a run of layered machine '{self.spec.name}'",
                              "resume a log with the machine that wrote it.")
        try:
            result = replay_layers(existing, self.spec)
        except ReplayDivergence as exc:
            raise LabkitError(f"cannot resume: {exc.message}", exc.hint) from None
        if result.violations and self.check_rules:
            seq, name, detail = result.violations[0]
            raise LabkitError(f"cannot resume: the log breaks rule '{name}' at seq {seq} ({detail}) without "
                              "recording it", "the log was altered, or the rules changed since it was written.")
        return result.state

    # ------------------------------------------------------------------ views
    @property
    def lifecycle(self) -> str:
        """The lifecycle, computed from the persisted layers and control facts; there is no setter."""
        return self.spec.view(self.state)

    @property
    def layers(self) -> Mapping[str, str]:
        return dict(self.state.layers)

    @property
    def events(self) -> Sequence[Event]:
        return self.log.events

    # ------------------------------------------------------------------ control
    def abort(self, reason: str = "") -> bool:
        """Ask the run to stop: recorded at once, honoured at the next checkpoint; False unless ``running``."""
        with self._lock:
            if self.lifecycle != "running":
                return False
            self._append(AbortRequested(reason=reason))
            return True

    def run(self, max_nodes: int = 200) -> str:
        """Work until the graph ends, an abort is honoured, or something is refused; return the lifecycle."""
        if self.state.halted is not None:
            raise LabkitError(f"the run stopped for good: {self.state.halted}",
                              "read the log's last events (labkit replay) to see which step; start a new run.")
        graph = self.spec.graph
        self._runner = threading.get_ident()
        self._append(LoopStarted(resumed=len(self.log) > 1))
        try:
            for _ in range(max_nodes):
                node = self.state.layers[graph.name]
                if node in graph.end:
                    self._stop("finished", node)
                    break
                self._checkpoint(node)
                self._step(node)
            else:
                self._stop("budget", self.state.layers[graph.name])
        except _Stop:
            pass
        finally:
            self._runner = None
        return self.lifecycle

    def _step(self, name: str) -> None:
        node = self.spec.graph.nodes[name]
        self._move_all(node.enters, name)
        if node.run is not None:
            node.run(Ctx(self, name))
        self._move_all(node.leaves, name)
        key, dest = self._next(name)
        self._append(LayerMoved(layer=self.spec.graph.name, trigger=key, source=name, dest=dest, node=name))

    def _move_all(self, wanted: Mapping[str, str], node: str) -> None:
        for lname, dest in wanted.items():
            source = self.state.layers[lname]
            if source == dest:
                continue
            found = self.spec.layer(lname).row_to(source, dest)
            if isinstance(found, Refusal):
                self._append(MoveRefused(layer=lname, source=source, dest=dest, node=node, reason=found.reason))
                self._stop("refused", node)
            self._append(LayerMoved(layer=lname, trigger=found.event, source=source, dest=dest, node=node))

    def _next(self, name: str) -> tuple[str, str]:
        edge = self.spec.graph.edges[name]
        if not isinstance(edge, Router):
            return NEXT, edge
        key = edge.choose(self.state)
        if self.check_routes and key not in edge.keys:
            self._append(RouteRefused(router=edge.name, node=name, key=str(key), declared=list(edge.keys)))
            self._stop("route_refused", name)
        return key, edge.routes[key]  # unchecked, an undeclared key fails here as a KeyError

    def _checkpoint(self, node: str) -> None:
        if self.state.halted is not None:
            self._stop("halted", node)
        if self.abort_checkpoints and self.state.aborted is not None:
            self._stop("aborted", node)

    def _stop(self, reason: str, node: str) -> None:
        self._append(LoopStopped(reason=reason, node=node))
        if reason != "finished" and reason != "budget":
            raise _Stop(reason)

    def _append(self, event: Event) -> Event:
        """Seal, persist and fold one event, then check the rules (a break is recorded at once and stops
        the loop when in its own thread)."""
        with self._lock:
            sealed = self.log.append(event, at=self.clock())
            self.state = reduce_layers(self.state, sealed)
            if self.state.halted is None and not isinstance(event, InvariantViolated):
                for invariant in self._invariants:
                    detail = invariant.violation(self.state, self.log.events)
                    if detail is not None:
                        here = self.state.status
                        self._append(InvariantViolated(invariant=invariant.name, detail=detail,
                                                       after_seq=sealed.seq, state=here, dest=here))
                        if self._runner == threading.get_ident():
                            self._stop("invariant", here)
                        break
            return sealed


def replay_layers(events: Sequence[Event], spec: LayeredSpec) -> Replay[LayeredState]:
    """Fold a layered run's log, checking every move against its table (:class:`ReplayDivergence`);
    unrecorded rule violations are in ``.violations``."""
    result = replay(events, reduce_layers, LayeredState(), spec.invariants())
    before = LayeredState()
    for event, after in zip(events, result.states, strict=True):
        if isinstance(event, LayerMoved):
            layer = spec.layer(event.layer)
            here = before.layers.get(event.layer)
            if here != event.source:
                raise ReplayDivergence(Divergence(event.seq, f"the log moves layer {event.layer} from "
                                                  f"{event.source}, but replay has it in {here}", before, event))
            if Row(event.source, event.trigger, event.dest) not in layer.table.rows:
                raise ReplayDivergence(Divergence(event.seq, f"the log moves {event.layer} {event.source} "
                                                  f"--{event.trigger}--> {event.dest}, which is not a row of "
                                                  f"layer '{event.layer}'"))
        before = after
    return result


def calls_after_abort(events: Sequence[Event]) -> dict[str, int]:
    """Model and tool calls that began after the first abort request (``abort_seq`` -1 when none)."""
    abort = next((e.seq for e in events if isinstance(e, AbortRequested)), None)
    if abort is None:
        return {"abort_seq": -1, "model_calls": 0, "tool_calls": 0}
    late = [e for e in events if isinstance(e, ModelCalled | ToolCalled) and e.began_after >= abort]
    return {"abort_seq": abort,
            "model_calls": sum(isinstance(e, ModelCalled) for e in late),
            "tool_calls": sum(isinstance(e, ToolCalled) for e in late)}


def timeline(events: Sequence[Event], spec: LayeredSpec) -> list[dict[str, Any]]:
    """One row per event after replay: seq, what happened, every layer, and the lifecycle view."""
    rows = []
    for event, state in zip(events, replay_layers(events, spec).states, strict=True):
        if isinstance(event, LayerMoved):
            what = f"{event.layer}: {event.source} -> {event.dest}"
        elif isinstance(event, ModelCalled | ToolCalled):
            what = f"{'model' if isinstance(event, ModelCalled) else event.tool} call in {event.node}"
        else:
            what = event.type
        rows.append({"seq": event.seq, "event": what, **dict(state.layers), "lifecycle": spec.view(state)})
    return rows
