"""The ladder of arms, each one declaration in :data:`ARMS`, and one run of one arm on one task.

Rungs: 1 prompt-only, 2 + JSON grammar, 3 + helpers, 4 machine + model, 5 machine + dev rule, 6 machine +
random, 7 machine + oracle. Every arm is graded by :func:`~labkit.reading.families.grade`; counts
come from the run's log (:func:`count_events`)."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from labkit.core.errors import LabkitError
from labkit.core.events import Event
from labkit.core.store import EventLog
from labkit.llm.backend import Backend
from labkit.reading.choosers import (
    DEFAULT_DECODING,
    Chooser,
    Decoding,
    ModelChooser,
    OracleChooser,
    RandomChooser,
    RuleChooser,
    shuffled,
)
from labkit.reading.events import LoopEnded, ModelAsked
from labkit.reading.families import grade
from labkit.reading.free import run_free
from labkit.reading.machine import FamilyPlanner
from labkit.reading.prompts import whole_prefix
from labkit.reading.taskfile import FAMILY_NAMES, ReadingTask
from labkit.reading.world import READING_TOOLS, runtime_task, task_world
from labkit.runtime.clock import TickClock
from labkit.runtime.events import ToolResult, Validation
from labkit.runtime.loop import Runtime
from labkit.runtime.tools import DraftStore


@dataclass(frozen=True)
class ArmInputs:
    """What one run of an arm is given (the same for every arm but the factory's own choices)."""

    task: ReadingTask
    seed: int
    backend: Backend | None
    examples: Mapping[str, ReadingTask]  # one dev example per family
    decoding: Decoding = DEFAULT_DECODING

    def example_order(self) -> list[ReadingTask]:
        """The few-shot episodes in the order this seed shows them (seed varies it under greedy decoding)."""
        return example_order(self.examples, self.seed)


def example_order(examples: Mapping[str, ReadingTask], seed: int) -> list[ReadingTask]:
    """One dev example per family, in the order ``seed`` shows them."""
    return [examples[f] for f in shuffled(FAMILY_NAMES, seed, "examples")]


@dataclass(frozen=True)
class RunShape:
    """How an arm's run is driven: ``run(arm, inputs, drafts) -> (events, claimed outcome, termination)``."""

    name: str
    run: Callable[[Arm, ArmInputs, DraftStore], tuple[list[Event], str, str]]


@dataclass(frozen=True)
class Arm:
    """One rung of the ladder: its name, shape, and the factory of what it decides with."""

    number: int
    name: str
    label: str
    shape: RunShape
    uses_model: bool
    decides: str  # what the model (or its stand-in) decides in this arm
    seed_varies: str  # what a seed changes under greedy decoding
    factory: Callable[[ArmInputs, Callable[[Event], Any]], Any]


def _run_free(arm: Arm, inputs: ArmInputs, drafts: DraftStore) -> tuple[list[Event], str, str]:
    options = arm.factory(inputs, lambda e: None)
    log = EventLog(run_id=f"{arm.name}:{inputs.task.id}:{inputs.seed}")
    world = task_world(inputs.task, drafts)
    outcome = run_free(inputs.task, world, inputs.backend, log, examples=inputs.example_order(),  # type: ignore[arg-type]
                       seed=inputs.seed, decoding=inputs.decoding, **options)
    claimed = "succeeded" if outcome.stop == "said_done" else "failed"
    return list(log.events), claimed, {"said_done": "said done", "step_budget": "step budget"}[outcome.stop]


def _run_machine(arm: Arm, inputs: ArmInputs, drafts: DraftStore) -> tuple[list[Event], str, str]:
    hook: list[Callable[[Event], Any]] = []
    chooser: Chooser = arm.factory(inputs, lambda e: hook[0](e))
    planner = FamilyPlanner(inputs.task, chooser, seed=inputs.seed)
    rt = Runtime(runtime_task(inputs.task), planner, task_world(inputs.task, drafts), clock=TickClock(),
                 tools=READING_TOOLS, log=EventLog(run_id=f"{arm.name}:{inputs.task.id}:{inputs.seed}"))
    hook.append(rt.machine.record)  # model calls become facts of the run's own log
    result = rt.run()
    while result.outcome == "paused":  # the experiment's supervisor refuses every escalation
        result = rt.decide(False, by="experiment", note="escalations are refused in the experiment")
    termination = "succeeded" if result.outcome == "succeeded" else \
        f"{result.outcome}: {result.reason.split(':')[0].strip()}"
    return list(rt.events), result.outcome, termination


SHAPES: dict[str, RunShape] = {s.name: s for s in (RunShape("free loop", _run_free),
                                                     RunShape("machine", _run_machine))}
_FREE, _MACHINE = SHAPES["free loop"], SHAPES["machine"]
_ORDER_FREE = "the order of the four worked episodes in the prompt"
_ORDER_MACHINE = "the order of queues, messages and menu options in each decision prompt"


def _model(inputs: ArmInputs, record: Callable[[Event], Any]) -> ModelChooser:
    if inputs.backend is None:
        raise LabkitError("the machine + model arm needs a model backend", "pass a backend (or a cassette).")
    return ModelChooser(inputs.backend, inputs.examples, seed=inputs.seed, decoding=inputs.decoding, record=record)


ARMS: dict[str, Arm] = {a.name: a for a in (
    Arm(1, "prompt-only", "1 prompt-only", _FREE, True,
        "everything: which action, its arguments, the draft text, when to stop", _ORDER_FREE,
        lambda i, r: {"grammar": False, "helpers": False}),
    Arm(2, "prompt-grammar", "2 prompt-only + JSON grammar", _FREE, True,
        "everything, its answer forced into the action's JSON shape", _ORDER_FREE,
        lambda i, r: {"grammar": True, "helpers": False}),
    Arm(3, "prompt-helpers", "3 prompt-only + helpers", _FREE, True,
        "everything but the draft's format: code helpers write and save the answer draft", _ORDER_FREE,
        lambda i, r: {"grammar": True, "helpers": True}),
    Arm(4, "machine-model", "4 machine + model", _MACHINE, True,
        "each reading decision (queue, form values, which message, which record next)", _ORDER_MACHINE, _model),
    Arm(5, "machine-rule", "5 machine + dev rule", _MACHINE, False,
        "nothing: keyword and regex rules written on the dev split decide", _ORDER_MACHINE,
        lambda i, r: RuleChooser()),
    Arm(6, "machine-random", "6 machine + random", _MACHINE, False,
        "nothing: a seeded random pick among the options", "the random picks and the option order",
        lambda i, r: RandomChooser(i.seed)),
    Arm(7, "machine-oracle", "7 machine + oracle", _MACHINE, False,
        "nothing: the task's answer decides (upper bound)", _ORDER_MACHINE, lambda i, r: OracleChooser(i.task)),
)}


def declared_prefixes(arms: Sequence[str], seeds: Sequence[int],
                      examples: Mapping[str, ReadingTask]) -> tuple[str, ...]:
    """The prompt starts an in-process model may keep between calls, one per free-loop arm variant and seed
    (no token changes: :mod:`labkit.llm.prefix_cache`)."""
    found: dict[str, None] = {}
    for name in arms:
        arm = ARMS[name]
        if arm.shape is not _FREE:
            continue
        for seed in seeds:
            options = arm.factory(ArmInputs(next(iter(examples.values())), seed, None, examples), lambda e: None)
            found[whole_prefix(example_order(examples, seed), helpers=options["helpers"])] = None
    return tuple(found)


@dataclass
class ReadingRun:
    """What the experiment keeps about one run (one line of its results); counts come from the events."""

    arm: str
    task: str
    family: str
    seed: int
    passed: bool
    failed_checks: list[str]
    termination: str
    llm_calls: int
    decisions: int
    reasks: int
    schema_invalid: int
    violations: int
    guard_rejections: int
    tool_calls: int
    prompt_tokens: int
    completion_tokens: int
    wall_s: float
    http_retries: int = 0  # re-sent HTTP requests of the run's model calls (0 in process and in older records)
    details: list[str] = field(default_factory=list)

    @property
    def calls_per_decision(self) -> float:
        return round(self.llm_calls / self.decisions, 3) if self.decisions else 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def count_events(events: Sequence[Event]) -> dict[str, int]:
    """Every count of a run, read once from its event log (machine and loop logs alike)."""
    asked = [e for e in events if isinstance(e, ModelAsked)]
    invalid = [e for e in asked if e.problem.startswith(("not JSON", "schema-invalid", "unknown action"))]
    return {
        "llm_calls": len(asked),
        "decisions": len({(e.step, e.decision) for e in asked}),
        "reasks": sum(1 for e in asked if e.attempt > 1),
        "schema_invalid": len(invalid),
        "violations": sum(1 for e in asked if e.problem) - len(invalid),
        "guard_rejections": sum(1 for e in events if isinstance(e, Validation) and e.verdict in ("rejected", "denied")),
        "tool_calls": sum(1 for e in events if isinstance(e, ToolResult)),
        "prompt_tokens": sum(e.prompt_tokens for e in asked),
        "completion_tokens": sum(e.completion_tokens for e in asked),
        "http_retries": sum(e.http_retries for e in asked),
        "loop_steps": next((e.steps for e in events if isinstance(e, LoopEnded)), 0),
    }


def run_arm(arm: Arm, inputs: ArmInputs, drafts: DraftStore, *,
            clock: Callable[[], float] = time.perf_counter) -> tuple[ReadingRun, list[Event]]:
    """Run ``arm`` on ``inputs.task`` in the draft area ``drafts``; grade it; count from its events."""
    if arm.uses_model and inputs.backend is None:
        raise LabkitError(f"arm {arm.name} needs a model backend", "pass a backend (or a cassette).")
    started = clock()
    events, claimed, termination = arm.shape.run(arm, inputs, drafts)
    wall = clock() - started
    world = task_world(inputs.task, drafts)
    verdict = grade(inputs.task, world, events, claimed=claimed)
    counts = count_events(events)
    counts.pop("loop_steps")
    record = ReadingRun(arm=arm.name, task=inputs.task.id, family=inputs.task.family, seed=inputs.seed,
                         passed=verdict.passed, failed_checks=[c.name for c in verdict.failed()],
                         termination=termination, wall_s=round(wall, 3),
                         details=[f"{c.name}: {c.detail}" for c in verdict.failed() if c.detail], **counts)
    return record, events
