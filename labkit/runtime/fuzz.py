"""Random schedules for the planner–executor runtime, and the checks every step of a run must pass.

A :class:`Schedule` (variant, fault plan, a person's answers) prints as the command lines that reproduce
it; :func:`draw_schedule` draws one (Hypothesis or ``random.Random``). :class:`FuzzRun` runs it on a real
SQLite log; :meth:`FuzzRun.check` requires no violation, replay equal to live, one side effect per key,
and a finished run that refuses everything."""

from __future__ import annotations

import json
import random
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

from labkit.core.errors import LabkitError
from labkit.core.events import Event, InvariantViolated, Transitioned
from labkit.core.reducer import replay
from labkit.core.store import SqliteLog, load_events
from labkit.runtime.clock import TickClock
from labkit.runtime.events import HumanDecision
from labkit.runtime.faults import CRASH_TOOLS, Fault, FaultPlan
from labkit.runtime.invariants import runtime_invariants
from labkit.runtime.loop import Runtime
from labkit.runtime.state import empty_run_state, reduce_run
from labkit.runtime.table import FAULTS, planner_executor_table, state_guards
from labkit.runtime.task import TASKS, Task
from labkit.runtime.tools import TOOLS, DraftStore, World, tools_struck_by

T = TypeVar("T")

DECISIONS = ("approve", "refuse", "wait")
# Records a generated task may read: R08 is restricted (denied without a person's grant), R99 does
# not exist (the tool answers an error).
READ_POOL = ("R03", "R05", "R08", "R11", "R99")
# The tools a drawn fault may name, read from the tools' declarations (a crash may also strike a step boundary).
FAULT_TOOLS = {"denied": tools_struck_by("denied"), "duplicate_result": tools_struck_by("duplicate_result"),
               "crash": (None, *CRASH_TOOLS)}
BUDGET_CHOICES: dict[str, tuple[Any, ...]] = {
    "max_steps": (20, 6, 3),
    "max_retries": (3, 1, 0),
    "max_tool_calls": (30, 5, 2),
    "max_wait_seconds": (None, 5.0),
}
WAIT_SECONDS = 60.0  # how long a "wait" decision lets the clock run while the run is paused


class RunnerDied(BaseException):
    """Raised by the fuzzer's ``die`` in place of SIGKILL. A BaseException, so that no ``except
    Exception`` in the runtime can swallow it: like a kill, it ends the step where it stands."""


def die_in_process(reason: str) -> None:
    raise RunnerDied(reason)


class Chooser(Protocol):
    """Where a generator's choices come from."""

    def pick(self, options: Sequence[T]) -> T: ...

    def number(self, low: int, high: int) -> int: ...


@dataclass
class RandomChooser:
    """Choices from a seeded ``random.Random``: the same seed gives the same schedule."""

    rng: random.Random

    def pick(self, options: Sequence[T]) -> T:
        return options[self.rng.randrange(len(options))]

    def number(self, low: int, high: int) -> int:
        return self.rng.randint(low, high)


@dataclass(frozen=True)
class Schedule:
    """One run's task, faults and human answers (see the module docstring)."""

    task_id: str
    overrides: Mapping[str, Any] = field(default_factory=dict)
    faults: FaultPlan = field(default_factory=FaultPlan)
    decisions: tuple[str, ...] = ()

    def task(self) -> Task:
        return apply_overrides(TASKS[self.task_id], self.overrides)

    def commands(self, db: str = "fuzz.sqlite", run_id: str = "fuzz") -> list[str]:
        """Shell lines that replay this schedule with the CLI (a crash kills ``labkit run``; run the
        same line again to resume, as often as it is killed)."""
        line = ["labkit", "run", self.task_id, "--db", db, "--run-id", run_id, "--faults", self.faults.labels()]
        for key, value in self.overrides.items():
            line += ["--set", f"{key}={json.dumps(value, separators=(',', ':'))}"]
        lines = [shlex.join(line)]
        for decision in self.decisions:
            if decision == "wait":
                lines.append("# wait, then run the labkit run line again (the run resumes and checks its wait budget)")
            else:
                lines.append(shlex.join(["labkit", "decide", db, "--run", run_id, decision]))
        return lines

    def __str__(self) -> str:
        return "\n".join(self.commands())


def apply_overrides(task: Task, overrides: Mapping[str, Any]) -> Task:
    """``task`` with fields set (``budget.max_retries`` sets one budget field), checked by pydantic."""
    data = task.model_dump(mode="json")
    for key, value in overrides.items():
        head, _, sub = key.partition(".")
        if head not in data:
            raise LabkitError(f"a task has no field {head!r}", f"fields: {', '.join(data)}.")
        if sub:
            if not isinstance(data[head], dict):
                raise LabkitError(f"task field {head!r} has no sub-fields", f"write {head}=VALUE.")
            data[head] = {**data[head], sub: value}
        else:
            data[head] = value
    try:
        return Task.model_validate(data)
    except Exception as exc:  # pydantic's ValidationError, named for the person who wrote --set
        raise LabkitError(f"the task overrides {dict(overrides)} do not make a valid task: {exc}",
                          "see labkit.runtime.task.Task for the fields and their types.") from None


def draw_fault(ch: Chooser) -> Fault:
    """One fault. Calls are counted per target, and a run makes few of each, so ``nth`` is small
    (a write is usually made once: its faults mostly strike call 1); a crash at a step boundary
    counts events instead."""
    kind = ch.pick(tuple(FAULTS))
    tool = ch.pick(FAULT_TOOLS[kind]) if kind in FAULT_TOOLS else None
    if kind == "crash" and tool is None:
        nth = ch.number(1, 40)
    elif kind in ("write_timeout", "status_timeout") or (tool is not None and TOOLS[tool].side_effect):
        nth = ch.pick((1, 1, 2))
    else:
        nth = ch.number(1, 3)
    return Fault(kind=kind, nth=nth, tool=tool, landed=ch.pick((True, False)))  # type: ignore[arg-type]


def draw_goal(ch: Chooser, base: Task) -> dict[str, Any] | None:
    """The task's own goal (None), other records to read and compare, or a read-only goal (no
    draft; with no reads it holds from the start, so the planner's first "done" is believed)."""
    variant = ch.pick(("as-is", "as-is", "other-reads", "read-only"))
    if variant == "as-is":
        return None
    reads = sorted({ch.pick(READ_POOL) for _ in range(ch.number(0 if variant == "read-only" else 1, 3))})
    goal = {**base.goal.model_dump(mode="json"), "reads": reads}
    goal["draft_key"] = "diff-" + "-".join(reads) if variant == "other-reads" else None
    goal["draft_covers_differences"] = variant == "other-reads"
    return goal


def draw_schedule(ch: Chooser) -> Schedule:
    """A random schedule; every choice goes through ``ch``."""
    task_id = ch.pick(tuple(sorted(TASKS)))
    base = TASKS[task_id]
    overrides: dict[str, Any] = {}
    goal = draw_goal(ch, base)
    if goal is not None:
        overrides["goal"] = goal
    reads = list(goal["reads"] if goal is not None else base.goal.reads)
    if reads and ch.pick((False, False, True)):
        overrides["forbidden_records"] = [ch.pick(reads)]
    if ch.pick((False, True)):
        overrides["escalate_denials"] = False
    for name, options in BUDGET_CHOICES.items():
        value = ch.pick(options)
        if value != options[0]:
            overrides[f"budget.{name}"] = value
    faults = [draw_fault(ch) for _ in range(ch.number(0, 4))]
    if any(f.kind == "status_timeout" for f in faults) and not any(f.kind == "write_timeout" for f in faults):
        faults.append(Fault(kind="write_timeout", nth=1, landed=ch.pick((True, False))))  # status queries need one
    decisions = tuple(ch.pick(DECISIONS) for _ in range(ch.number(0, 3)))
    return Schedule(task_id, overrides, FaultPlan(faults=tuple(faults)), decisions)


class FuzzRun:
    """One schedule's run over a real SQLite log and draft area, resumable after a crash."""

    def __init__(self, schedule: Schedule, folder: Path, run_id: str = "fuzz") -> None:
        self.schedule = schedule
        self.run_id = run_id
        self.db = folder / "runs.sqlite"  # one file for many runs, as `labkit run --db` keeps them
        self.table = planner_executor_table()
        self.clock = TickClock()
        self.store = DraftStore(folder / "runs.drafts.sqlite", run_id)
        self.world = World(self.store)
        self.crashes = 0
        self.problems: list[str] = []
        self.transitions: set[tuple[str, str, str]] = set()
        self._rows = {(r.source, r.event, r.dest) for r in self.table.rows}
        self._invariants = runtime_invariants()
        self._folded = empty_run_state()
        self._history: list[Event] = []
        self._recorded_upto = 0
        self._log = SqliteLog(self.db, run_id)
        self.runtime = Runtime(schedule.task(), None, self.world, log=self._log, clock=self.clock,
                               faults=schedule.faults, die=die_in_process)

    # ------------------------------------------------------------- driving
    @property
    def paused(self) -> bool:
        """Waiting for a person's answer (a recorded answer whose transition is still owed is not a pause)."""
        return self.runtime.pending_decision() is not None

    def resume(self) -> None:
        """What a restarted ``labkit run`` does: open the log afresh and rebuild the runtime from it."""
        self._log.close()
        self._log = SqliteLog(self.db, self.run_id)
        self.runtime = Runtime(None, None, self.world, log=self._log, clock=self.clock, die=die_in_process)

    def step(self) -> bool:
        """One runtime step; a crash resumes the run. False when the run finished or waits for a person."""
        try:
            return self.runtime.step()
        except RunnerDied:
            self.crashes += 1
            self.resume()
            return True

    def decide(self, decision: str) -> None:
        """Answer a pause: approve, refuse, or let the clock run (a person who does not answer)."""
        if decision == "wait":
            self.clock.now += WAIT_SECONDS
            self.step()
            return
        # what Runtime.decide records; the steps after it are taken (and checked) one at a time
        pending = self.runtime.pending_decision()
        if pending is None:
            raise LabkitError(f"no decision is pending in {self.runtime.state.status}", "answer only a paused run.")
        self.runtime.machine.record(HumanDecision(action_id=pending.action_id, decision=decision, by="fuzz",
                                                  note="scheduled decision"))

    def run(self, max_steps: int = 2_000) -> list[str]:
        """Drive the run to its end, answering pauses from the schedule; the problems found on the way."""
        decisions = list(self.schedule.decisions)
        crashes = self.crashes
        for _ in range(max_steps):
            at_rest = self.runtime.machine.finished or (self.paused and not decisions)
            problems = self.check(full=at_rest or self.crashes != crashes)
            crashes = self.crashes
            if problems or at_rest:
                return problems  # finished, or left paused: a person has not answered (yet)
            if self.paused:
                self.decide(decisions.pop(0))
            elif not self.step():
                return [f"the runtime stopped in {self.runtime.state.status} without waiting for a person"]
        return [f"no end after {max_steps} steps"]

    def close(self) -> None:
        self._log.close()
        self.store.close()

    # ------------------------------------------------------------- checks
    def check(self, full: bool = False) -> list[str]:
        """Every rule the run breaks now ([] when none); each new event is checked once, and ``full`` also
        re-reads, verifies and replays the SQLite log from scratch."""
        events = self.runtime.events
        problems = self._fold(events)
        problems += [f"invariant {e.invariant} recorded at seq {e.seq}: {e.detail}"
                     for e in events[self._recorded_upto:] if isinstance(e, InvariantViolated)]
        self._recorded_upto = len(events)
        if self._folded != self.runtime.state:
            problems.append("the replay of the log differs from the live state")
        if full:
            problems += self._replay_from_file()
        problems += self._side_effects()
        if self.runtime.machine.finished:
            problems += self._absorbing()
        return problems

    def _fold(self, events: Sequence[Event]) -> list[str]:
        problems: list[str] = []
        done = len(self._history)
        if done and (len(events) < done or events[done - 1].hash != self._history[-1].hash):
            problems.append(f"the log changed below seq {done}: events already checked were altered")
            self._history, self._folded, done = [], empty_run_state(), 0
        for event in events[done:]:
            if isinstance(event, Transitioned):
                move = (event.source, event.trigger, event.dest)
                self.transitions.add(move)
                if move not in self._rows:
                    problems.append(f"seq {event.seq}: {move} is not a row of the table")
                if self._folded.status != event.source:
                    problems.append(f"seq {event.seq}: '{event.trigger}' left {event.source}, "
                                    f"but the replay is in {self._folded.status}")
            self._folded = reduce_run(self._folded, event)
            self._history.append(event)
            if not isinstance(event, InvariantViolated):
                problems += [f"seq {event.seq}: invariant {inv.name} fails: {detail}" for inv in self._invariants
                             if (detail := inv.violation(self._folded, self._history)) is not None]
        return problems

    def _replay_from_file(self) -> list[str]:
        try:
            events = load_events(self.db, self.run_id)
            result = replay(events, reduce_run, empty_run_state(), self._invariants, self.table, state_guards())
        except LabkitError as exc:
            return [f"the log file does not replay: {exc}"]
        problems = [f"replay of the file: invariant {name} fails after seq {seq}: {detail}"
                    for seq, name, detail in result.violations]
        if result.state != self.runtime.state:
            problems.append("the replay of the log file differs from the live state")
        return problems

    def _side_effects(self) -> list[str]:
        calls = self.store.calls()
        problems = [f"draft {key!r} saved {n} times with the same text (draft area audit)"
                    for key, n in self.store.repeated_keys().items()]
        per_action: dict[str, int] = {}
        for _, _, _, request in calls:
            per_action[request] = per_action.get(request, 0) + 1
        problems += [f"action {a!r} reached the draft area {n} times (draft area audit)"
                     for a, n in per_action.items() if n > 1]
        return problems

    def _absorbing(self) -> list[str]:
        machine = self.runtime.machine
        head, n = machine.log.head, len(machine.log)
        taken = []
        for event in machine.table.events:
            try:
                machine.fire(event)
            except LabkitError:
                continue
            taken.append(event)
        problems = [f"the finished run ({machine.status}) took event {e!r}" for e in taken]
        late = HumanDecision(action_id="late", decision="approve", by="fuzz", note="after the end")
        try:
            machine.record(late)
        except LabkitError:
            pass
        else:
            problems.append(f"the finished run ({machine.status}) recorded a fact after its end")
        if (machine.log.head, len(machine.log)) != (head, n):
            problems.append("the log of a finished run changed")
        if self.runtime.step():
            problems.append("step() did something on a finished run")
        return problems


def run_schedule(schedule: Schedule, folder: Path, run_id: str = "fuzz") -> FuzzRun:
    """Run ``schedule`` to its end (or pause) with the checks; the run (problems in ``.problems``)."""
    run = FuzzRun(schedule, folder, run_id)
    try:
        run.problems = run.run()
    finally:
        run.close()
    return run
