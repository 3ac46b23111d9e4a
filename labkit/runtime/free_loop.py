"""The free agent loop, for contrast: "while not done: ask the model, run what it says".

Same planner, tools, world and faults as the machine; no validator, token, UNKNOWN, status query, goal
predicate or log. ``on_timeout``: ``"assume_ok"`` or ``"retry"``. :func:`compare` runs the machine and both
loops on the same seeds and scores each alike. Naive baselines, not any agent framework."""

from __future__ import annotations

import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from labkit.core.events import Event, Transitioned
from labkit.runtime.clock import TickClock
from labkit.runtime.events import StatusChecked, ToolResult, Validation
from labkit.runtime.executor import kill_runner
from labkit.runtime.faults import Fault, FaultPlan
from labkit.runtime.inject import deliver, disturb
from labkit.runtime.invariants import observed_success
from labkit.runtime.loop import Runtime
from labkit.runtime.planner import Candidate, Planner, PlannerContext, make_planner
from labkit.runtime.report import TextTable
from labkit.runtime.table import FAULTS
from labkit.runtime.task import TASKS, Task, Verdict, verify
from labkit.runtime.tools import TOOLS, CallContext, DraftStore, ToolAnswer, ToolSpec, World
from labkit.runtime.validator import args_sha256

Strategy = Literal["assume_ok", "retry"]
DEFAULT_KINDS = ("read_timeout", "write_timeout", "status_timeout", "bad_args", "unknown_tool", "duplicate_result",
                 "premature_done")


@dataclass
class FreeRun:
    """What a free loop did (its whole memory is this object)."""

    task_id: str
    strategy: str
    # one entry per tool call: action, args, outcome, detail, and taken_as_saved (whether the loop
    # then put the draft into its memory of saved drafts, which the model is shown)
    transcript: list[dict[str, Any]] = field(default_factory=list)
    stop: str = ""  # model_said_done | max_iterations
    reported_success: bool = False
    unknown_writes_taken_as_success: int = 0
    planner_calls: int = 0

    def tool_results(self, tools: Mapping[str, ToolSpec] = TOOLS) -> list[ToolResult]:
        """The transcript as ``tool_result`` facts, so that :func:`verify` reads the loop's calls
        (e.g. forbidden reads) exactly as it reads the machine's log. ``tools``: the loop's tool set."""
        results = []
        for n, step in enumerate(self.transcript, start=1):
            spec = tools.get(step["action"])
            read = spec is not None and spec.planner_visible and not spec.side_effect
            results.append(ToolResult(action_id=f"free-{n}", attempt=1, tool=step["action"],
                                      args_sha256=args_sha256(step["args"]), outcome=step["outcome"],
                                      side_effect=bool(spec is not None and spec.side_effect),
                                      data={"id": str(step["args"].get("id"))} if read else {}))
        return results


def _call(tools: Mapping[str, ToolSpec], world: World, cand: Candidate, fault: Fault | None) -> ToolAnswer:
    """One call as the loop makes it: through the same fault injector as the machine's executor. A
    fault that kills the runner is not applied (the loop has no log to resume from), and a duplicate
    answer is read once."""
    spec = tools.get(cand.action)
    if spec is None:
        return ToolAnswer("error", detail=f"no tool named {cand.action}")
    try:
        args = spec.args.model_validate(cand.args)
    except ValidationError as exc:
        return ToolAnswer("error", detail=f"bad arguments: {exc.errors()[0]['msg']}")
    if fault is not None and FAULTS[fault.kind].kills_runner:
        fault = None
    return deliver(spec, world, args, CallContext(action_id="free"), fault, kill_runner)[0]


def run_free(task: Task, planner: Planner, world: World, faults: FaultPlan | None = None, *,
             on_timeout: Strategy = "assume_ok", max_iterations: int = 20,
             tools: Mapping[str, ToolSpec] = TOOLS) -> FreeRun:
    """Run the naive loop until the model says it is done (or the iteration cap); ``tools`` is the
    tool set it offers and runs (the machine's ``tools=``)."""
    faults = faults if faults is not None else task.faults
    run = FreeRun(task_id=task.id, strategy=on_timeout)
    records: dict[str, dict[str, Any]] = {}
    drafts: list[str] = []
    feedback = ""
    calls: dict[str, int] = {}
    offered = tuple(t.describe() for t in tools.values() if t.planner_visible)
    for _ in range(max_iterations):
        ctx = PlannerContext(task_id=task.id, goal=task.description, state="LOOP", step=run.planner_calls,
                             k=task.k, tools=offered, records=records, drafts=tuple(drafts), feedback=feedback)
        proposal = planner.propose(ctx)
        run.planner_calls += 1
        for fault in faults.at("planner", run.planner_calls):
            proposal = disturb(proposal, fault)
        if not proposal.candidates:
            run.stop, run.reported_success = "model_said_done", proposal.claims_done
            return run
        cand = proposal.candidates[0]  # the loop runs what the model said first
        calls[cand.action] = calls.get(cand.action, 0) + 1
        hit = faults.at(cand.action, calls[cand.action])
        answer = _call(tools, world, cand, hit[0] if hit else None)
        step = {"action": cand.action, "args": dict(cand.args), "outcome": answer.outcome,
                "detail": answer.detail, "taken_as_saved": False}
        run.transcript.append(step)
        feedback = "" if answer.outcome == "ok" else f"{cand.action} {answer.outcome}: {answer.detail}"
        spec = tools.get(cand.action)
        query = spec.status_query if spec is not None else None  # a write, and the name of its effect
        if answer.outcome == "ok" and spec is not None and spec.planner_visible and not spec.side_effect:
            records[str(answer.data.get("id"))] = dict(answer.data)
        elif query is not None and (answer.outcome == "ok" or (
                answer.outcome == "timeout" and on_timeout == "assume_ok")):
            if answer.outcome == "timeout":
                run.unknown_writes_taken_as_success += 1
                feedback = ""
            drafts.append(query.key(cand.args))
            step["taken_as_saved"] = True
    run.stop = "max_iterations"
    return run


# ------------------------------------------------------------------ comparison
@dataclass(frozen=True)
class WriteStep:
    """One thing that happened to a draft write, in log order: ``answer`` (with its outcome), ``settled``
    (a status query's finding) or ``counted_done`` (the run took the write as saved)."""

    key: str
    kind: Literal["answer", "settled", "counted_done"]
    outcome: str = ""


def machine_write_steps(events: Sequence[Event]) -> list[WriteStep]:
    """The write audit of a machine run, read from its event log."""
    keys: dict[str, str] = {}  # action id -> draft key, from the allowed validations
    steps: list[WriteStep] = []
    for e in events:
        if isinstance(e, Validation) and e.verdict == "allowed" and e.side_effect:
            keys[e.action_id] = str(e.args.get("key", ""))
        elif isinstance(e, ToolResult) and e.side_effect and e.action_id in keys:
            steps.append(WriteStep(keys[e.action_id], "answer", e.outcome))
        elif isinstance(e, StatusChecked) and e.outcome != "unavailable":
            steps.append(WriteStep(e.key, "settled", e.outcome))
        elif isinstance(e, Transitioned) and e.trigger == "committed" and e.payload.get("action_id") in keys:
            steps.append(WriteStep(keys[str(e.payload["action_id"])], "counted_done"))
    return steps


def free_write_steps(transcript: Sequence[dict[str, Any]], tools: Mapping[str, ToolSpec] = TOOLS) -> list[WriteStep]:
    """The write audit of a free-loop run, read from its transcript (it has no status query)."""
    steps: list[WriteStep] = []
    for step in transcript:
        spec = tools.get(step["action"])
        query = spec.status_query if spec is not None else None
        if query is not None:
            key = query.key(step["args"])
            steps.append(WriteStep(key, "answer", step["outcome"]))
            if step.get("taken_as_saved"):
                steps.append(WriteStep(key, "counted_done"))
    return steps


def unknown_writes_counted_done(steps: Sequence[WriteStep]) -> int:
    """Writes whose outcome was unknown (timeout, interrupted) counted as done before anything settled
    them: a later ``ok`` answer or a status query. One definition for every arm."""
    unknown: set[str] = set()
    count = 0
    for step in steps:
        if step.kind == "answer":
            if step.outcome in ("timeout", "interrupted"):
                unknown.add(step.key)
            else:
                unknown.discard(step.key)
        elif step.kind == "settled":
            unknown.discard(step.key)
        elif step.key in unknown:
            count += 1
            unknown.discard(step.key)
    return count


@dataclass(frozen=True)
class Score:
    """How one run of any arm did, by rules that do not depend on the arm."""

    verdict: Verdict
    reported: bool  # the run reported success
    unknown_counted_done: int
    repeated: int  # saves of the same key and text beyond the first, from the draft area's call table

    @property
    def verified(self) -> bool:
        return self.verdict.passed

    @property
    def false_success(self) -> bool:
        """Reported success, but some check of the verifier fails (goal, forbidden reads, repeats)."""
        return self.reported and not self.verdict.passed

    @property
    def goal_unmet(self) -> bool:
        """Reported success while the verifier's goal checks, read from the world, fail."""
        return self.reported and not self.verdict.goal_holds


def score(task: Task, world: World, claimed: str, log: Sequence[Event], writes: Sequence[WriteStep]) -> Score:
    """Score one finished run: ``claimed`` is its reported outcome, ``log`` its tool results (for the
    verifier), ``writes`` its write audit; the world is the judge of the draft and of repeats."""
    verdict = verify(task, world, log, claimed=claimed)
    return Score(verdict=verdict, reported=claimed == "succeeded",
                 unknown_counted_done=unknown_writes_counted_done(writes),
                 repeated=sum(n - 1 for n in world.drafts.repeated_keys().values()))


def score_machine(task: Task, world: World, events: Sequence[Event], claimed: str) -> Score:
    return score(task, world, claimed, events, machine_write_steps(events))


def score_free(task: Task, world: World, free: FreeRun, tools: Mapping[str, ToolSpec] = TOOLS) -> Score:
    return score(task, world, "succeeded" if free.reported_success else "failed", free.tool_results(tools),
                 free_write_steps(free.transcript, tools))


# Log audits of a machine run alone (exercise 04a uses them as its reference counts; doctored logs
# make them non-zero). The comparison scores both arms with score() instead.
def machine_unknown_writes_committed(events: Sequence[Event]) -> int:
    """Actions the machine committed without a typed success observed before the commit."""
    return sum(1 for i, e in enumerate(events)
               if isinstance(e, Transitioned) and e.trigger == "committed"
               and not observed_success(events[:i], str(e.payload.get("action_id", ""))))


def machine_stopped_on_word(events: Sequence[Event], task: Task) -> int:
    """1 if the run succeeded although the goal predicate over the replayed state is false."""
    from labkit.core.reducer import replay
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
    goal_unmet: int = 0
    unknown_counted_done: int = 0
    repeated: int = 0

    def add(self, s: Score) -> None:
        self.runs += 1
        self.verified += int(s.verified)
        self.reported += int(s.reported)
        self.false_success += int(s.false_success)
        self.goal_unmet += int(s.goal_unmet)
        self.unknown_counted_done += s.unknown_counted_done
        self.repeated += s.repeated

    def row(self, arm: str) -> list[Any]:
        return [arm, self.runs, self.verified, self.reported, self.false_success, self.goal_unmet,
                self.unknown_counted_done, self.repeated]


def compare(seeds: Iterable[int] = range(20), task_ids: Sequence[str] = ("diff3",),
            kinds: Sequence[str] = DEFAULT_KINDS, faults_per_run: int = 2) -> TextTable:
    """Machine vs free loops over the same tasks and seeded fault schedules, every arm scored by :func:`score`."""
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
                        claimed = rt.run().outcome
                        tally.add(score_machine(task, world, rt.events, claimed))
                    else:
                        strategy: Strategy = "retry" if "retry" in arm else "assume_ok"
                        tally.add(score_free(task, world, run_free(task, planner, world, plan, on_timeout=strategy)))
                    world.drafts.close()
    return TextTable(
        ["arm", "runs", "verified success", "reported success", "false success", "reported success, goal unmet",
         "unknown write counted as done", "repeated side effects"],
        [t.row(arm) for arm, t in tallies.items()],
        title=f"machine vs free loop: tasks {', '.join(task_ids)}; {len(seeds)} seeded fault schedules of "
              f"{faults_per_run} faults from {', '.join(kinds)}",
        notes=["every arm is scored by the same rules (free_loop.score): verified success is the verifier's "
               "grade of the world and the log's tool results;",
               "false success: reported success while any verifier check fails; goal unmet: reported success "
               "while the goal checks on the world fail;",
               "unknown write counted as done: a timed-out or interrupted write taken as saved (machine: committed; "
               "loop: put in its memory) before an ok answer or a status query settled it, read from the run's log;",
               "repeated side effects: the same key and text saved more than once, from the draft area's call table."])
