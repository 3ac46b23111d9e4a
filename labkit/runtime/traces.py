"""The five traces of the lesson, real runs with a scripted planner, seeded faults and injected clock:
byte-identical when recorded again (``scripts/make_traces.py`` writes ``data/traces/``)."""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from labkit.core.events import Event, Transitioned
from labkit.core.store import EventLog, write_jsonl
from labkit.runtime.clock import TickClock
from labkit.runtime.faults import FaultPlan
from labkit.runtime.loop import Runtime
from labkit.runtime.task import TASKS
from labkit.runtime.tools import DraftStore, World

TRACES_DIR = Path(__file__).resolve().parents[2] / "data" / "traces"
CLOCK_START = 1_790_000_000.0  # a fixed wall-clock origin, so the recorded timestamps never change


@dataclass(frozen=True)
class TraceSpec:
    """How one lesson trace is recorded."""

    name: str
    task: str
    faults: str
    description: str
    human: bool | None = None  # the decision a person gives if the run pauses (None: it must not pause)


TRACE_SPECS: tuple[TraceSpec, ...] = (
    TraceSpec("normal_success", "diff3", "none",
              "three reads and one write, no fault: the goal predicate ends the run"),
    TraceSpec("argument_error", "diff3", "bad_args@2",
              "the second proposal has wrongly typed arguments: rejected by the schema, the planner is asked again"),
    TraceSpec("permission_denied", "diff3-restricted", "none",
              "a restricted record is denied: the run waits for a human, who refuses, and it ends FAILED",
              human=False),
    TraceSpec("read_timeout", "diff3", "read_timeout@2",
              "a read times out: it has no side effect, so it is simply retried"),
    TraceSpec("write_timeout_unknown", "diff3", "write_timeout@1:landed",
              "the write times out after it happened: UNKNOWN, the status query finds the draft, commit"),
)


def record_trace(spec: TraceSpec, out_dir: str | Path = TRACES_DIR) -> Runtime:
    """Run ``spec`` and write its log to ``out_dir/<name>.jsonl``; return the finished runtime."""
    with tempfile.TemporaryDirectory() as tmp:
        world = World(DraftStore(Path(tmp) / "drafts.sqlite", area=spec.name))
        runtime = Runtime(TASKS[spec.task], None, world, log=EventLog(run_id=f"trace-{spec.name}"),
                          clock=TickClock(start=CLOCK_START), faults=FaultPlan.parse(spec.faults))
        result = runtime.run()
        if result.outcome == "paused":
            if spec.human is None:
                raise RuntimeError(f"trace {spec.name} paused but has no scripted human decision")
            runtime.decide(spec.human, by="supervisor", note="scripted decision for the lesson trace")
        world.drafts.close()
    write_jsonl(Path(out_dir) / f"{spec.name}.jsonl", list(runtime.events))
    return runtime


def record_all(out_dir: str | Path = TRACES_DIR) -> dict[str, Runtime]:
    """Record every lesson trace into ``out_dir``."""
    return {spec.name: record_trace(spec, out_dir) for spec in TRACE_SPECS}


# The transitions of a run that goes right: everything else is how a run meets a fault.
CYCLE_TRIGGERS = frozenset({"start", "proposed", "allowed", "ok", "observed", "committed", "no_proposal"})


def first_off_cycle(events: Sequence[Event]) -> tuple[str, str, str] | None:
    """(source, trigger, dest) of a run's first transition outside :data:`CYCLE_TRIGGERS` — where its fault
    sent it — or None for a run that only went round the cycle."""
    for event in events:
        if isinstance(event, Transitioned) and event.trigger not in CYCLE_TRIGGERS:
            return event.source, event.trigger, event.dest
    return None
