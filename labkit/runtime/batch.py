"""Batches of seeded runs, for the fault × state coverage matrix and for experiments."""

from __future__ import annotations

import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path

from labkit.core.events import Event
from labkit.runtime.clock import TickClock
from labkit.runtime.faults import FaultPlan, coverage_matrix
from labkit.runtime.loop import Runtime
from labkit.runtime.report import TextTable
from labkit.runtime.table import IN_PROCESS_FAULTS
from labkit.runtime.task import TASKS
from labkit.runtime.tools import DraftStore, World


def run_batch(seeds: Iterable[int], task_ids: Sequence[str] = ("diff3", "diff3-restricted"),
              kinds: Sequence[str] = IN_PROCESS_FAULTS, faults_per_run: int = 2) -> list[list[Event]]:
    """Run every task under ``FaultPlan.random(seed, kinds)`` per seed; return the logs. A human pause is
    approved on even seeds and refused on odd ones, so both branches are exercised."""
    logs: list[list[Event]] = []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "drafts.sqlite"
        for seed in seeds:
            plan = FaultPlan.random(seed, kinds, count=faults_per_run)
            for task_id in task_ids:
                world = World(DraftStore(path, f"{task_id}-{seed}"))
                rt = Runtime(TASKS[task_id], None, world, clock=TickClock(), faults=plan)
                result = rt.run()
                while result.outcome == "paused":
                    result = rt.decide(seed % 2 == 0, by="batch", note="scripted decision")
                logs.append(list(rt.events))
                world.drafts.close()
    return logs


def coverage(seeds: Iterable[int] = range(40), **kw: object) -> TextTable:
    """The coverage matrix of :func:`run_batch` (fault × state)."""
    return coverage_matrix(run_batch(seeds, **kw))  # type: ignore[arg-type]
