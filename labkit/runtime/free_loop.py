"""The free agent loop, for contrast: "while not done: ask the model, run what it says".

It uses the same planner interface, the same tools, the same world and the same seeded fault
schedule as the machine, and nothing else: no validator, no token, no typed UNKNOWN, no status
query, no goal predicate, no event log. Its state lives in a few Python variables. Two common
ways of handling a tool timeout are offered, because both are what such loops do in practice:

- ``on_timeout="assume_ok"``: a write that timed out is taken as saved (an unknown outcome
  recorded as success);
- ``on_timeout="retry"``: the timeout is told to the model, which asks again (a write that did
  happen is repeated).

:func:`compare` runs the machine and both loops over the same seeds and grades all of them with
the same verifier. These loops are deliberately naive baselines written here, not measurements of
any particular agent framework.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from labkit.events import Event, Transitioned
from labkit.runtime.clock import TickClock
from labkit.runtime.events import Observation, StatusChecked
from labkit.runtime.faults import Fault, FaultPlan
from labkit.runtime.loop import Runtime
from labkit.runtime.planner import Candidate, Planner, PlannerContext, Proposal, make_planner
from labkit.runtime.report import TextTable
from labkit.runtime.task import TASKS, Task, verify
from labkit.runtime.tools import TOOLS, CallContext, DraftStore, ToolAnswer, World

Strategy = Literal["assume_ok", "retry"]
DEFAULT_KINDS = ("read_timeout", "write_timeout", "status_timeout", "bad_args", "unknown_tool", "duplicate_result",
                 "premature_done")


@dataclass
class FreeRun:
    """What a free loop did (its whole memory is this object)."""

    task_id: str
    strategy: str
    transcript: list[dict[str, Any]] = field(default_factory=list)
    stop: str = ""  # model_said_done | max_iterations
    reported_success: bool = False
    unknown_writes_taken_as_success: int = 0
    planner_calls: int = 0


def _disturb(proposal: Proposal, fault: Fault) -> Proposal:
    if fault.kind == "premature_done":
        return Proposal(claims_done=True, usage=proposal.usage)
    if not proposal.candidates:
        return proposal
    first, *rest = proposal.candidates
    if fault.kind == "unknown_tool":
        bad = Candidate(action="delete_drafts", args={})
    else:
        bad = Candidate(action=first.action, args={**{k: 12345 for k in first.args}, "extra": True})
    return proposal.model_copy(update={"candidates": (bad, *rest)})


def _call(world: World, cand: Candidate, fault: Fault | None) -> ToolAnswer:
    spec = TOOLS.get(cand.action)
    if spec is None or not hasattr(world, cand.action):
        return ToolAnswer("error", detail=f"no tool named {cand.action}")
    try:
        args = spec.args.model_validate(cand.args)
    except ValidationError as exc:
        return ToolAnswer("error", detail=f"bad arguments: {exc.errors()[0]['msg']}")
    ctx = CallContext(action_id="free")
    kind = fault.kind if fault else None
    if kind == "read_timeout" or (kind == "write_timeout" and fault is not None and not fault.landed):
        return ToolAnswer("timeout", detail="no answer before the deadline")
    if kind == "write_timeout":
        return world.save_draft(args, ctx, lose_reply=True)  # type: ignore[arg-type]
    if kind == "denied":
        return ToolAnswer("denied", detail="permission denied (injected)")
    return getattr(world, cand.action)(args, ctx)


def run_free(task: Task, planner: Planner, world: World, faults: FaultPlan | None = None, *,
             on_timeout: Strategy = "assume_ok", max_iterations: int = 20) -> FreeRun:
    """Run the naive loop until the model says it is done (or the iteration cap)."""
    faults = faults if faults is not None else task.faults
    run = FreeRun(task_id=task.id, strategy=on_timeout)
    records: dict[str, dict[str, Any]] = {}
    drafts: list[str] = []
    feedback = ""
    calls: dict[str, int] = {}
    tools = tuple(t.describe() for t in TOOLS.values() if t.planner_visible)
    for _ in range(max_iterations):
        ctx = PlannerContext(task_id=task.id, goal=task.description, state="LOOP", step=run.planner_calls,
                             k=task.k, tools=tools, records=records, drafts=tuple(drafts), feedback=feedback)
        proposal = planner.propose(ctx)
        run.planner_calls += 1
        for fault in faults.at("planner", run.planner_calls):
            proposal = _disturb(proposal, fault)
        if not proposal.candidates:
            run.stop, run.reported_success = "model_said_done", proposal.claims_done
            return run
        cand = proposal.candidates[0]  # the loop runs what the model said first
        calls[cand.action] = calls.get(cand.action, 0) + 1
        hit = faults.at(cand.action, calls[cand.action])
        answer = _call(world, cand, hit[0] if hit else None)
        run.transcript.append({"action": cand.action, "args": dict(cand.args), "outcome": answer.outcome,
                               "detail": answer.detail})
        feedback = "" if answer.outcome == "ok" else f"{cand.action} {answer.outcome}: {answer.detail}"
        if answer.outcome == "ok" and cand.action == "read_record":
            records[str(answer.data.get("id"))] = dict(answer.data)
        elif cand.action == "save_draft" and (answer.outcome == "ok" or (
                answer.outcome == "timeout" and on_timeout == "assume_ok")):
            if answer.outcome == "timeout":
                run.unknown_writes_taken_as_success += 1
                feedback = ""
            drafts.append(str(cand.args.get("key")))
    run.stop = "max_iterations"
    return run


# ------------------------------------------------------------------ comparison
def machine_unknown_writes_committed(events: Sequence[Event]) -> int:
    """Writes the machine committed without a typed success observation (zero if invariant 2 holds)."""
    count = 0
    for i, e in enumerate(events):
        if isinstance(e, Transitioned) and e.trigger == "committed":
            aid = e.payload.get("action_id")
            seen = any((isinstance(x, Observation) and x.action_id == aid)
                       or (isinstance(x, StatusChecked) and x.action_id == aid and x.outcome == "present")
                       for x in events[:i])
            count += 0 if seen else 1
    return count


def machine_stopped_on_word(events: Sequence[Event], task: Task) -> int:
    """1 if the run succeeded although the goal predicate over the replayed state is false."""
    from labkit.reducer import replay
    from labkit.runtime.state import empty_run_state, reduce_run
    from labkit.runtime.task import goal_met

    state = replay(events, reduce_run, empty_run_state()).state
    return int(state.outcome == "succeeded" and not goal_met(task.goal, state))


@dataclass
class _Tally:
    runs: int = 0
    verified: int = 0
    reported: int = 0
    false_success: int = 0
    unknown_as_success: int = 0
    repeated: int = 0
    on_word: int = 0

    def row(self, arm: str) -> list[Any]:
        return [arm, self.runs, self.verified, self.reported, self.false_success, self.unknown_as_success,
                self.repeated, self.on_word]


def compare(seeds: Iterable[int] = range(20), task_ids: Sequence[str] = ("diff3",),
            kinds: Sequence[str] = DEFAULT_KINDS, faults_per_run: int = 2) -> TextTable:
    """Machine vs free loops over the same tasks and seeded fault schedules, one verifier for all."""
    seeds = list(seeds)
    tallies = {arm: _Tally() for arm in ("machine", "free loop (assume_ok)", "free loop (retry)")}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "drafts.sqlite"
        for task_id in task_ids:
            task = TASKS[task_id]
            for seed in seeds:
                plan = FaultPlan.random(seed, kinds, count=faults_per_run)
                for arm, tally in tallies.items():
                    area = f"{task_id}-{seed}-{arm}"
                    world = World(DraftStore(path, area))
                    planner = make_planner(task.planner, task)
                    if arm == "machine":
                        rt = Runtime(task, planner, world, clock=TickClock(), faults=plan)
                        result = rt.run()
                        claimed = result.outcome
                        verdict = verify(task, world, rt.events)
                        unknown = machine_unknown_writes_committed(rt.events)
                        on_word = machine_stopped_on_word(rt.events, task)
                    else:
                        strategy: Strategy = "retry" if "retry" in arm else "assume_ok"
                        free = run_free(task, planner, world, plan, on_timeout=strategy)
                        claimed = "succeeded" if free.reported_success else "failed"
                        verdict = verify(task, world, (), claimed=claimed)
                        unknown = free.unknown_writes_taken_as_success
                        on_word = int(free.stop == "model_said_done")
                    tally.runs += 1
                    tally.verified += int(verdict.passed)
                    tally.reported += int(claimed == "succeeded")
                    tally.false_success += int(claimed == "succeeded" and not verdict.passed)
                    tally.unknown_as_success += unknown
                    tally.repeated += sum(n - 1 for n in world.drafts.repeated_keys().values())
                    tally.on_word += on_word
                    world.drafts.close()
    return TextTable(
        ["arm", "runs", "verified success", "reported success", "false success", "unknown write taken as success",
         "repeated side effects", "stopped on the model's word"],
        [t.row(arm) for arm, t in tallies.items()],
        title=f"machine vs free loop: tasks {', '.join(task_ids)}; {len(seeds)} seeded fault schedules of "
              f"{faults_per_run} faults from {', '.join(kinds)}",
        notes=["verified success: the verifier's grade of the world (draft content, forbidden reads, repeats) and "
               "the run's own claim;",
               "stopped on the model's word: the run ended because the planner said done, with nothing checking it."])
