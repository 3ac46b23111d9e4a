"""Seeded fault schedules, and the fault × state coverage matrix of a batch of runs.

A ``Fault`` strikes the ``nth`` call of its target, counted from the run's own log. ``crash/TOOL@n`` kills
the runner during that call (``:landed``, default, after the tool acted; ``:lost`` before); ``crash@n`` at
the first step boundary once the log holds n events. A crash is logged first and never strikes twice."""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from labkit.core.errors import LabkitError
from labkit.core.events import Event, Transitioned
from labkit.runtime.events import FaultInjected
from labkit.runtime.report import TextTable
from labkit.runtime.table import FAULTS, IN_PROCESS_FAULTS, STATES, TERMINAL
from labkit.runtime.tools import TOOLS, ToolSpec, tools_struck_by

FaultKind = Literal["read_timeout", "write_timeout", "status_timeout", "denied", "bad_args", "unknown_tool",
                    "duplicate_result", "premature_done", "crash"]
CRASH_TOOLS = tools_struck_by("crash")  # the calls the executor makes (and a crash can strike)
RUNNER = "runner"  # the target of a crash at a step boundary (``crash@n``: n counts events)


class Fault(BaseModel):
    """One injected fault: ``kind`` strikes the ``nth`` call of its target."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: FaultKind
    nth: int = Field(1, ge=1)
    tool: str | None = Field(None, description="the tool whose calls it strikes (default: the fault kind's "
                             "target in FAULTS, read_record for duplicate_result); for crash, none means a "
                             "step boundary")
    landed: bool = Field(True, description="write_timeout, crash: the tool acted before the reply (or the "
                         "runner) was lost")

    @property
    def target(self) -> str:
        if self.kind == "crash":
            return self.tool or RUNNER
        if self.tool:
            return self.tool
        target = FAULTS[self.kind].target
        return "read_record" if target == "any" else target

    def label(self) -> str:
        flagged = self.kind == "write_timeout" or (self.kind == "crash" and self.tool is not None)
        extra = "" if not flagged else (":landed" if self.landed else ":lost")
        tool = f"/{self.tool}" if self.tool else ""
        return f"{self.kind}{tool}@{self.nth}{extra}"


class FaultPlan(BaseModel):
    """A fault schedule: which faults strike which calls."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    faults: tuple[Fault, ...] = ()
    seed: int | None = None

    def at(self, target: str, n: int) -> list[Fault]:
        """The faults that strike the ``n``-th call (1-based) of ``target``."""
        return [f for f in self.faults if f.target == target and f.nth == n]

    def labels(self) -> str:
        return ",".join(f.label() for f in self.faults) or "none"

    @classmethod
    def parse(cls, text: str, tools: Mapping[str, ToolSpec] = TOOLS) -> FaultPlan:
        """Read ``kind[/tool][@n][:landed|:lost]`` items separated by commas, e.g.
        ``read_timeout@2,write_timeout@1:lost,denied/read_record@1``. A named tool must be one of
        ``tools`` whose declaration lists the fault kind."""
        faults = []
        for item in (t.strip() for t in text.split(",")):
            if not item or item == "none":
                continue
            head, _, flag = item.partition(":")
            head, _, nth = head.partition("@")
            kind, _, tool = head.partition("/")
            if kind not in FAULTS:
                raise LabkitError(f"unknown fault '{kind}' in {text!r}",
                                  f"use one of: {', '.join(FAULTS)} (written kind[/tool][@n][:landed|:lost]).")
            if flag not in ("", "landed", "lost"):
                raise LabkitError(f"unknown fault flag ':{flag}' in {item!r}", "use :landed or :lost.")
            struck = tuple(n for n, t in tools.items() if kind in t.fault_kinds)
            if kind == "crash" and tool and tool not in struck:
                raise LabkitError(f"crash/{tool} in {item!r}: a crash strikes a call of {' or '.join(struck)}",
                                  "write crash/save_draft@1:landed, or crash@N to crash once the log holds N events.")
            if tool and tool not in struck:
                raise LabkitError(f"{kind}/{tool} in {item!r}: {kind} strikes no call of {tool!r}",
                                  f"name a tool that {kind} can strike: {', '.join(struck) or 'none'}.")
            try:
                number = int(nth) if nth else 1
            except ValueError:
                raise LabkitError(f"'{nth}' in {item!r} is not a call number", "write e.g. read_timeout@2.") from None
            faults.append(Fault(kind=kind, nth=number, tool=tool or None, landed=flag != "lost"))  # type: ignore[arg-type]
        return cls(faults=tuple(faults))

    @classmethod
    def random(cls, seed: int, kinds: Sequence[str] = IN_PROCESS_FAULTS, count: int = 2, max_nth: int = 3) -> FaultPlan:
        """``count`` faults drawn with ``random.Random(seed)``; a status timeout brings a write timeout along."""
        rng = random.Random(seed)
        faults: list[Fault] = []
        for _ in range(count):
            kind = rng.choice(list(kinds))
            nth = 1 if kind in ("write_timeout", "status_timeout") else rng.randint(1, max_nth)
            faults.append(Fault(kind=kind, nth=nth, landed=rng.random() < 0.5))  # type: ignore[arg-type]
        if any(f.kind == "status_timeout" for f in faults) and not any(f.kind == "write_timeout" for f in faults):
            faults.append(Fault(kind="write_timeout", nth=1, landed=rng.random() < 0.5))
        return cls(faults=tuple(faults), seed=seed)


def fault_states(events: Sequence[Event]) -> list[tuple[str, str]]:
    """(fault, state) pairs a run exercised: the state a fault struck in, and every state the run
    entered while recovering from it (up to the commit of that step, or the end of the run)."""
    pairs: list[tuple[str, str]] = []
    active: list[str] = []
    for event in events:
        if isinstance(event, FaultInjected):
            pairs.append((event.fault, event.state))
            active.append(event.fault)
        elif isinstance(event, Transitioned) and active:
            if event.trigger == "committed" and event.dest not in TERMINAL:
                active = []  # recovered: the step is committed; what follows is the next step
                continue
            pairs.extend((fault, event.dest) for fault in active)
            if event.dest in TERMINAL:
                active = []
    return pairs


def coverage_matrix(runs: Iterable[Sequence[Event]]) -> TextTable:
    """Fault × state counts over a batch of runs: which fault was exercised in which state."""
    counts: dict[tuple[str, str], int] = {}
    for events in runs:
        for pair in dict.fromkeys(fault_states(events)):  # once per run
            counts[pair] = counts.get(pair, 0) + 1
    states = [s for s in STATES if s != "INIT"]
    kinds = [k for k in FAULTS if k in IN_PROCESS_FAULTS or any(kind == k for kind, _ in counts)]
    rows = [[kind, *[counts.get((kind, s), 0) or "." for s in states]] for kind in kinds]
    return TextTable(["fault \\ state", *states], rows,
                     title="runs in which each fault was exercised in each state (struck or recovering)")
