"""labkit: small local language models as dependable workers inside explicit state machines (public API)."""

from labkit.core.diagram import mermaid_markdown, to_mermaid
from labkit.core.errors import (
    EventLogError,
    IllegalTransition,
    InvariantViolation,
    LabkitError,
    RunFinished,
    TableError,
)
from labkit.core.events import (
    Event,
    InvariantViolated,
    RunStarted,
    Transitioned,
    describe,
    event_types,
    register_event,
)
from labkit.core.invariants import Invariant
from labkit.core.machine import LabMachine
from labkit.core.reducer import (
    Divergence,
    MachineState,
    Replay,
    ReplayDivergence,
    find_divergence,
    reduce_machine,
    replay,
)
from labkit.core.store import EventLog, JsonlLog, SqliteLog, load_events, read_jsonl, read_sqlite, write_jsonl
from labkit.core.table import Row, TransitionTable, table_from_dict

__version__ = "0.1.0"

__all__ = [
    "Choice",
    "CodeLine",
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
    "Quiz",
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
    "predict",
    "read_jsonl",
    "read_sqlite",
    "reduce_machine",
    "register_event",
    "replay",
    "table_from_dict",
    "to_mermaid",
    "write_jsonl",
]

_COURSE = {"Choice", "CodeLine", "Quiz", "predict"}


def __getattr__(name: str) -> object:
    """The course helpers load ipywidgets, so they are imported only when a notebook asks for them."""
    if name in _COURSE:
        from labkit.course import quiz as course

        return getattr(course, name)
    raise AttributeError(f"module 'labkit' has no attribute {name!r}")
