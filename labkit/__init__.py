"""labkit: small local language models as dependable workers inside explicit state machines.

The public API is re-exported here so that notebooks and exercises import from one place.
"""

from labkit.diagram import mermaid_markdown, to_mermaid
from labkit.errors import (
    EventLogError,
    IllegalTransition,
    InvariantViolation,
    LabkitError,
    RunFinished,
    TableError,
)
from labkit.events import (
    Event,
    InvariantViolated,
    RunStarted,
    Transitioned,
    describe,
    event_types,
    register_event,
)
from labkit.invariants import Invariant
from labkit.machine import LabMachine
from labkit.reducer import Divergence, MachineState, Replay, ReplayDivergence, find_divergence, reduce_machine, replay
from labkit.store import EventLog, JsonlLog, SqliteLog, load_events, read_jsonl, read_sqlite, write_jsonl
from labkit.table import Row, TransitionTable, table_from_dict

__version__ = "0.1.0"

__all__ = [
    "Divergence",
    "Event",
    "EventLog",
    "EventLogError",
    "IllegalTransition",
    "Invariant",
    "InvariantViolated",
    "InvariantViolation",
    "JsonlLog",
    "LabMachine",
    "LabkitError",
    "MachineState",
    "Replay",
    "ReplayDivergence",
    "Row",
    "RunFinished",
    "RunStarted",
    "SqliteLog",
    "TableError",
    "TransitionTable",
    "Transitioned",
    "describe",
    "event_types",
    "find_divergence",
    "load_events",
    "mermaid_markdown",
    "read_jsonl",
    "read_sqlite",
    "reduce_machine",
    "register_event",
    "replay",
    "table_from_dict",
    "to_mermaid",
    "write_jsonl",
]
