"""The arms of the comparison, and one run of one arm on one task with one seed.

Every arm gets the same task (its description is all any planner reads), the same world (records
and a fresh draft area), the same fault schedule, the same step budget, and is graded by the same
verifier: the runtime's :func:`labkit.runtime.task.verify`, and nothing else. Arms without a machine
log are graded from the world plus what the loop recorded: its successful reads become
``tool_result`` facts for the verifier's forbidden-record check.

``verify`` checks a differences draft exactly (its difference lines are the expected set, and it
names no record outside the goal; see :func:`labkit.runtime.task.draft_difference_problems`). An
earlier ``verify`` matched lines as substrings, so a draft that also listed a left-out record named
last on each line passed; this module then added a check of its own for every arm. With the exact
check in the runtime that extra check is gone: the machine's stop predicate and the grade use the
same test, so a machine run with a wrong draft no longer reports success in the first place.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from labkit.events import Event, Transitioned
from labkit.experiment.planners import (
    DEFAULT_DECODING,
    Decoding,
    PromptOnlyPlanner,
    RandomMenuPlanner,
    StepChoicePlanner,
    TextOrderPlanner,
)
from labkit.llm.backend import Backend
from labkit.llm.metered import MeteredBackend
from labkit.runtime.clock import TickClock
from labkit.runtime.events import StatusChecked, ToolCalled, Validation
from labkit.runtime.free_loop import FreeRun, run_free
from labkit.runtime.loop import Runtime
from labkit.runtime.planner import DiffPlanner, Planner
from labkit.runtime.report import render_trace
from labkit.runtime.task import Task, Verdict, verify
from labkit.runtime.tools import DraftStore, World


@dataclass(frozen=True)
class Arm:
    """One way of working: ``machine`` (the runtime) or the free loop; whether it calls the model."""

    name: str
    label: str
    machine: bool
    uses_model: bool
    what_the_model_decides: str


ARMS: dict[str, Arm] = {a.name: a for a in (
    Arm("prompt-only", "1 prompt-only", False, True,
        "everything: which tool, its arguments, the draft text, when to stop"),
    Arm("prompt-grammar", "2 prompt-only + JSON grammar", False, True,
        "everything, but its answer is forced into the action's JSON shape"),
    Arm("machine-model", "3 machine + model", True, True,
        "the menu choice at each step (which record next, skip, save); code composes the draft"),
    Arm("machine-random", "4 machine + random (no model)", True, False,
        "nothing: a seeded random menu choice (ablation)"),
    Arm("machine-rule", "4b machine + text-order rule (no model)", True, False,
        "nothing: the first option in the order the task names it, save last (ablation)"),
    Arm("machine-oracle", "5 machine + scripted oracle", True, False,
        "nothing: DiffPlanner reads the goal itself (upper bound; the same for every seed)"),
)}

# the order in which failed checks explain a failure (the first one that failed is "the" source)
FAILURE_SOURCES = (
    ("forbidden_untouched", "read a forbidden record"),
    ("draft_exists", "no draft under the task's key"),
    ("draft_covers_differences", "wrong draft content"),
    ("draft_mentions", "wrong draft content"),
    ("no_repeated_side_effect", "write repeated"),
    ("reported_success", "did not finish (budget/stop)"),
)


@dataclass
class RunRecord:
    """Everything the experiment keeps about one run (one line of ``runs.jsonl``)."""

    arm: str
    task: str
    seed: int
    passed: bool
    failed_checks: list[str]
    failure_source: str
    termination: str
    reason: str
    llm_calls: int
    prompt_tokens: int
    completion_tokens: int
    max_prompt_tokens: int
    retries: int
    http_retries: int
    guard_rejections: int
    schema_invalid: int
    forced_choices: int
    planner_calls: int
    tool_calls: int
    wall_s: float
    model_s: float
    trace: str = ""
    outputs: list[str] = field(default_factory=list)
    server: str = ""  # the server that answered this run's calls ("" in process or replayed)

    def to_dict(self) -> dict[str, Any]:
        """The run as written to ``runs.jsonl``; ``server`` only where a server answered it."""
        data = asdict(self)
        if not data["server"]:
            del data["server"]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunRecord:
        return cls(**{k: data[k] for k in cls.__dataclass_fields__ if k in data})


def grade(task: Task, world: World, events: list[Event], *, claimed: str | None = None) -> Verdict:
    """The experiment's one verifier for every arm: the runtime's :func:`verify`, unchanged."""
    return verify(task, world, events, claimed=claimed)


def _failure(verdict: Verdict) -> str:
    failed = {c.name for c in verdict.failed()}
    for check, label in FAILURE_SOURCES:
        if check in failed:
            return label
    return "" if verdict.passed else "other"


def _free_trace(free: FreeRun, outputs: list[str]) -> str:
    lines = []
    for n, raw in enumerate(outputs, start=1):
        lines.append(f"{n:>3} model: {raw[:160]}")
        if n <= len(free.transcript):
            step = free.transcript[n - 1]
            detail = f" ({step['detail'][:80]})" if step["detail"] else ""
            lines.append(f"    loop runs {step['action']} -> {step['outcome']}{detail}")
    lines.append(f"    stop: {free.stop}{' (claims success)' if free.reported_success else ''}")
    return "\n".join(lines)


def _machine_counts(events: list[Event]) -> tuple[int, int]:
    """(harness retries, guard rejections) of a machine run, read from its log."""
    replans = sum(1 for e in events if isinstance(e, Transitioned) and e.trigger in ("rejected", "no_proposal",
                                                                                      "error"))
    reruns = sum(1 for e in events if isinstance(e, ToolCalled) and e.attempt > 1)
    status = sum(1 for e in events if isinstance(e, StatusChecked))
    rejections = sum(1 for e in events if isinstance(e, Validation) and e.verdict in ("rejected", "denied"))
    return replans + reruns + status, rejections


def make_planner(arm: Arm, task: Task, seed: int, backend: Backend | None, decoding: Decoding) -> Planner:
    if arm.uses_model and backend is None:
        raise ValueError(f"arm {arm.name} needs a model backend")
    if arm.name == "prompt-only":
        return PromptOnlyPlanner(backend, grammar=False, seed=seed, decoding=decoding)  # type: ignore[arg-type]
    if arm.name == "prompt-grammar":
        return PromptOnlyPlanner(backend, grammar=True, seed=seed, decoding=decoding)  # type: ignore[arg-type]
    if arm.name == "machine-model":
        return StepChoicePlanner(backend, task, seed=seed, decoding=decoding)  # type: ignore[arg-type]
    if arm.name == "machine-random":
        return RandomMenuPlanner(task, seed=seed)
    if arm.name == "machine-rule":
        return TextOrderPlanner(task, seed=seed)
    if arm.name == "machine-oracle":
        return DiffPlanner(task.goal.reads, task.goal.draft_key or "draft", name="oracle")
    raise ValueError(f"unknown arm {arm.name}")


def run_one(arm: Arm, task: Task, seed: int, *, backend: Backend | None, drafts: DraftStore,
            decoding: Decoding = DEFAULT_DECODING, clock: Callable[[], float] = time.perf_counter) -> RunRecord:
    """Run ``arm`` on ``task`` with ``seed`` in the draft area ``drafts``; grade it; count everything."""
    metered = MeteredBackend(backend) if backend is not None and arm.uses_model else None
    planner = make_planner(arm, task, seed, metered, decoding)
    world = World(drafts)
    started = clock()
    if arm.machine:
        rt = Runtime(task, planner, world, clock=TickClock(), faults=task.faults)
        result = rt.run()
        while result.outcome == "paused":  # the experiment's supervisor refuses every escalation
            result = rt.decide(False, by="experiment", note="escalations are refused in the experiment")
        events = list(rt.events)
        verdict = grade(task, world, events)
        termination = "succeeded" if result.outcome == "succeeded" else \
            f"{result.outcome}: {result.reason.split(':')[0].strip()}"
        reason = result.reason
        retries, rejections = _machine_counts(events)
        trace = render_trace(events)
        planner_calls, tool_calls = result.planner_calls, result.tool_calls
    else:
        free = run_free(task, planner, world, task.faults, on_timeout="retry", max_iterations=task.budget.max_steps)
        claimed = "succeeded" if free.reported_success else "failed"
        verdict = grade(task, world, list(free.tool_results()), claimed=claimed)
        termination = {"model_said_done": "said done" if free.reported_success else "stopped without done",
                       "max_iterations": "step budget"}.get(free.stop, free.stop)
        reason = free.stop
        outcomes = [s["outcome"] for s in free.transcript]
        retries = sum(1 for prev in outcomes[:-1] if prev != "ok") if outcomes else 0
        rejections = 0
        trace = _free_trace(free, planner.stats.outputs)
        planner_calls, tool_calls = free.planner_calls, len(free.transcript)
    wall = clock() - started
    stats = getattr(planner, "stats", None)
    meter = metered.meter if metered is not None else None
    return RunRecord(
        arm=arm.name, task=task.id, seed=seed, passed=verdict.passed,
        failed_checks=[c.name for c in verdict.failed()], failure_source=_failure(verdict),
        termination=termination, reason=reason[:300],
        llm_calls=len(meter.calls) if meter else 0,
        prompt_tokens=meter.prompt_tokens if meter else 0,
        completion_tokens=meter.completion_tokens if meter else 0,
        max_prompt_tokens=max((c.prompt_tokens for c in meter.calls), default=0) if meter else 0,
        retries=retries, http_retries=meter.retries if meter else 0, guard_rejections=rejections,
        schema_invalid=stats.schema_invalid if stats else 0, forced_choices=stats.forced if stats else 0,
        planner_calls=planner_calls, tool_calls=tool_calls, wall_s=round(wall, 3),
        model_s=round(meter.seconds, 3) if meter else 0.0, trace=trace,
        outputs=list(stats.outputs) if stats else [])
