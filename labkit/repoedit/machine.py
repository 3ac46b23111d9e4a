"""The repo-editing table, its guards and invariants, and a run that drives it.

::

    DISCOVER_PROJECT --indexed--> PLAN_CHANGE --plan_ok--> EDIT_FILE --edited [not files_left]--> RUN_TESTS
    RUN_TESTS --green--> DONE | --targeted_fix--> EDIT_FILE | --rollback--> ROLLBACK_OR_FIX --rolled_back--> FAILED
    EDIT_FILE --too_large--> HUMAN_APPROVAL --approved / rejected--> EDIT_FILE | RUN_TESTS | ROLLBACK_OR_FIX

Code does what code can (indexing, checking, applying, testing, restoring); the planner only
proposes a plan and one edit at a time. Retry budgets are table guards over the reduced state, so
``labkit replay`` re-checks that every retry was within budget. Each state's work is one method,
found through :attr:`RepoEditRun.handlers` (one declaration per state, no if-chain).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from labkit.events import Transitioned
from labkit.invariants import Invariant
from labkit.machine import LabMachine
from labkit.reducer import Guard, TableEntry
from labkit.repoedit.edits import (
    EditCase,
    EditProposal,
    PlanProposal,
    Refusal,
    changed_lines,
    check_plan,
    needs_human,
    unified_diff,
)
from labkit.repoedit.events import (
    ApprovalDecided,
    ApprovalRequested,
    EditApplied,
    EditSkipped,
    PlanAccepted,
    ProposalRefused,
    Proposed,
    RepoEditState,
    RepoIndexed,
    RolledBack,
    TestsRan,
    reduce_repoedit,
)
from labkit.repoedit.index import index_project, is_test_path
from labkit.repoedit.planners import EditView, Planner, PlanView, parse_proposal
from labkit.repoedit.routing import locate_failure, route_after_tests
from labkit.repoedit.tools import EditResult, FileText, RollbackResult, ToolContext, call_tool
from labkit.repoedit.workspace import TestRun, Workspace
from labkit.store import EventLog
from labkit.table import Row, TransitionTable

TABLE_NAME = "repoedit"
STATES = ("DISCOVER_PROJECT", "PLAN_CHANGE", "EDIT_FILE", "HUMAN_APPROVAL", "RUN_TESTS", "ROLLBACK_OR_FIX",
          "DONE", "FAILED")
ROWS = (
    Row("DISCOVER_PROJECT", "indexed", "PLAN_CHANGE"),
    Row("DISCOVER_PROJECT", "bad_repo", "FAILED"),
    Row("PLAN_CHANGE", "plan_ok", "EDIT_FILE"),
    Row("PLAN_CHANGE", "plan_refused", "PLAN_CHANGE", "plan_retries_left"),
    Row("PLAN_CHANGE", "plan_refused", "FAILED", "not plan_retries_left"),
    Row("EDIT_FILE", "edited", "EDIT_FILE", "files_left"),
    Row("EDIT_FILE", "edited", "RUN_TESTS", "not files_left"),
    Row("EDIT_FILE", "edit_refused", "EDIT_FILE", "edit_retries_left"),
    Row("EDIT_FILE", "edit_refused", "ROLLBACK_OR_FIX", "not edit_retries_left"),
    Row("EDIT_FILE", "too_large", "HUMAN_APPROVAL"),
    Row("EDIT_FILE", "abort", "ROLLBACK_OR_FIX"),
    Row("HUMAN_APPROVAL", "approved", "EDIT_FILE", "files_left"),
    Row("HUMAN_APPROVAL", "approved", "RUN_TESTS", "not files_left"),
    Row("HUMAN_APPROVAL", "rejected", "EDIT_FILE", "edit_retries_left"),
    Row("HUMAN_APPROVAL", "rejected", "ROLLBACK_OR_FIX", "not edit_retries_left"),
    Row("RUN_TESTS", "green", "DONE"),
    Row("RUN_TESTS", "targeted_fix", "EDIT_FILE"),
    Row("RUN_TESTS", "rollback", "ROLLBACK_OR_FIX"),
    Row("ROLLBACK_OR_FIX", "rolled_back", "FAILED"),
)


def repoedit_table() -> TransitionTable:
    return TransitionTable.build(TABLE_NAME, STATES, ROWS, "DISCOVER_PROJECT", ["DONE", "FAILED"])


def repoedit_guards() -> dict[str, Guard]:
    """Budgets and the edit queue, read from the reduced state alone (so replay re-checks them)."""
    return {
        "files_left": lambda s, p: bool(s.queue),
        "plan_retries_left": lambda s, p: s.attempts < s.plan_budget,
        "edit_retries_left": lambda s, p: s.attempts < s.edit_budget,
    }


def _edits_stay_in_plan(state: RepoEditState, events: Any) -> str | None:
    stray = [f for f in state.applied if f not in state.plan or is_test_path(f)]
    return f"edits applied outside the plan or to tests: {stray}" if stray else None


def _done_only_when_green(state: RepoEditState, events: Any) -> str | None:
    if state.status == "DONE" and state.last_outcome != "passed":
        return f"DONE after a test run that ended '{state.last_outcome}'"
    return None


def _failed_leaves_tree_as_it_was(state: RepoEditState, events: Any) -> str | None:
    if state.status != "FAILED":
        return None
    if state.edits_since_rollback:
        return f"FAILED with {state.edits_since_rollback} edit(s) not rolled back"
    if state.rollbacks and not state.restored:
        return "the rollback did not restore the baseline tree"
    return None


def repoedit_invariants() -> list[Invariant]:
    return [
        Invariant("edits_stay_in_plan", _edits_stay_in_plan, "only planned, non-test files are edited"),
        Invariant("done_only_when_green", _done_only_when_green, "DONE only right after an all-green test run"),
        Invariant("failed_leaves_tree_as_it_was", _failed_leaves_tree_as_it_was,
                  "a failed run ends with the baseline tree restored"),
    ]


# read by labkit.catalog (this module is listed in labkit.registry.TABLE_MODULES)
TABLES = {TABLE_NAME: TableEntry(table=repoedit_table, reduce=reduce_repoedit, empty=RepoEditState,
                                 invariants=repoedit_invariants, guards=repoedit_guards)}


@dataclass(frozen=True)
class Limits:
    """Budgets and limits of one run (recorded in the run's params)."""

    plan_budget: int = 2
    edit_budget: int = 3
    fix_budget: int = 2
    diff_limit: int = 30
    test_timeout: float = 60.0
    failure_chars: int = 900  # test output shown on a targeted fix


Approver = Callable[[str, int, str], bool]
"""A human's decision on an edit over the size limit: ``(file, changed lines, diff) -> approve?``."""


def no_human(file: str, changed: int, diff: str) -> bool:
    """The default when nobody is at the keyboard: an edit over the limit is not approved."""
    return False


class RepoEditRun:
    """One run of the machine on a project folder, in a fresh temporary git copy.

    ``clock`` times the events and test runs (inject a fixed one for reproducible logs);
    ``keep=True`` keeps the copy for inspection (its path is ``self.workspace.root``).
    """

    def __init__(self, source: str | Path, requirement: str, planner: Planner, *, limits: Limits = Limits(),
                 log: EventLog | None = None, clock: Callable[[], float] = time.time,
                 approver: Approver = no_human, python: str = sys.executable, task_id: str = "",
                 keep: bool = False, versions: Mapping[str, str] | None = None) -> None:
        self.source = Path(source)
        self.requirement = requirement
        self.planner = planner
        self.limits = limits
        self.clock = clock
        self.approver = approver
        self.workspace = Workspace(self.source, python=python, keep=keep)
        params = {"task": task_id, "project": self.source.name, "planner": planner.name,
                  "plan_budget": limits.plan_budget, "edit_budget": limits.edit_budget,
                  "fix_budget": limits.fix_budget, "diff_limit": limits.diff_limit,
                  "test_timeout": limits.test_timeout}
        try:
            self.machine = LabMachine(repoedit_table(), guards=repoedit_guards(), invariants=repoedit_invariants(),
                                      reduce=reduce_repoedit, empty=RepoEditState(), log=log, clock=clock,
                                      versions={"repoedit": "1", **(versions or {})}, params=params)
        except BaseException:
            self.workspace.close()  # a run that cannot start leaves no temporary copy behind
            raise
        self.ctx: ToolContext | None = None
        self._baseline = TestRun("failed")  # replaced by the real baseline run in DISCOVER_PROJECT
        self._steps: dict[str, str] = {}
        self._failure = ""
        self._refused = ""
        self.handlers: dict[str, Callable[[], None]] = {
            "DISCOVER_PROJECT": self._discover, "PLAN_CHANGE": self._plan, "EDIT_FILE": self._edit,
            "HUMAN_APPROVAL": self._approval, "RUN_TESTS": self._run_tests, "ROLLBACK_OR_FIX": self._rollback,
        }

    @property
    def state(self) -> RepoEditState:
        return self.machine.state

    @property
    def events(self) -> Any:
        return self.machine.events

    def run(self) -> RepoEditState:
        """Drive the machine to DONE or FAILED; the copy is removed afterwards unless ``keep``."""
        try:
            while not self.machine.finished:
                self.handlers[self.machine.status]()
        finally:
            self.workspace.close()
        return self.state

    # ---------------------------------------------------------------- helpers
    def _test_run(self, phase: str) -> TestRun:
        """Run the tests through the tool and record the run (timed by the injected clock)."""
        assert self.ctx is not None
        start = self.clock()
        run = call_tool("run_tests", self.ctx, {"timeout": self.limits.test_timeout})
        seconds = self.clock() - start
        self.machine.record(TestsRan(phase=phase, outcome=run.outcome, passed=list(run.passed),
                                     failed=list(run.failed), output=run.output, exit_code=run.exit_code,
                                     digest=self.workspace.digest(), seconds=round(seconds, 3)))
        return run

    def _propose(self, state: str, file: str, ask: Callable[[], Any]) -> str | None:
        """The planner's raw answer, recorded; None when the planner raised.

        A planner that raises (a bug, a backend error) is one more typed refusal, ``planner_error``,
        with the exception's type and message in the log: the state's retry budget decides what
        follows, so a planner that keeps raising ends the run as FAILED (with the tree restored)
        instead of crashing the runner."""
        try:
            proposal = ask()
        except Exception as exc:  # any planner failure; KeyboardInterrupt and SystemExit still stop the run
            self._refuse(state, Refusal("planner_error", f"{type(exc).__name__}: {exc}"[:500],
                                        "the planner failed before answering; fix the planner or its backend."),
                         file)
            return None
        self.machine.record(Proposed(state=state, planner=self.planner.name, file=file,
                                     attempt=self.state.attempts + 1, prompt=proposal.prompt, raw=proposal.raw,
                                     prompt_tokens=proposal.prompt_tokens,
                                     completion_tokens=proposal.completion_tokens,
                                     seconds=round(proposal.seconds, 3)))
        return str(proposal.raw)

    def _refuse(self, state: str, refusal: Refusal, file: str = "") -> None:
        self.machine.record(ProposalRefused(state=state, file=file, **refusal.to_dict()))
        self._refused = f"{refusal.code}: {refusal.detail}. {refusal.hint}"

    # ---------------------------------------------------------------- states
    def _discover(self) -> None:
        index = index_project(self.workspace.root)
        digest = self.workspace.digest()
        self.ctx = ToolContext(self.workspace, index, digest, diff_limit=self.limits.diff_limit)
        self.machine.record(RepoIndexed(source=index.to_dict()["source"], tests=list(index.test_files), digest=digest))
        if not index.test_files:
            self.machine.fire("bad_repo", reason="no_tests")
            return
        run = self._test_run("baseline")
        reason = {"passed": "already_green", "no_tests": "no_tests", "timeout": "baseline_timeout"}.get(run.outcome)
        if reason:
            self.machine.fire("bad_repo", reason=reason)
            return
        self._baseline = run
        self.machine.fire("indexed")

    def _plan(self) -> None:
        assert self.ctx is not None
        failing = tuple(f"{node}: {self._baseline.details.get(node, '')}".strip()[:200]
                        for node in self._baseline.failed)
        view = PlanView(self.requirement, self.ctx.index.summary(), failing, self._refused)
        raw = self._propose("PLAN_CHANGE", "", lambda: self.planner.propose_plan(view))
        if raw is None:
            self.machine.fire("plan_refused", code="planner_error")
            return
        plan, refusal = parse_proposal(raw, PlanProposal)
        if plan is not None:
            refusal = check_plan(plan, self.workspace.root, self.ctx.index)
        if refusal is not None or plan is None:
            assert refusal is not None
            self._refuse("PLAN_CHANGE", refusal)
            self.machine.fire("plan_refused", code=refusal.code)
            return
        self._refused = ""
        steps = [{"file": s.file, "why": s.why} for s in plan.steps]
        self._steps = {s["file"]: s["why"] for s in steps}
        self.ctx.planned = frozenset(self._steps)
        self.machine.record(PlanAccepted(steps=steps))
        self.machine.fire("plan_ok", files=len(steps))

    def _edit(self) -> None:
        assert self.ctx is not None
        path = self.state.queue[0]
        read = call_tool("read_file", self.ctx, {"path": path})
        content = read.text if isinstance(read, FileText) else ""
        view = EditView(self.requirement, path, self._steps.get(path, ""), content, self._failure, self._refused)
        raw = self._propose("EDIT_FILE", path, lambda: self.planner.propose_edit(view))
        if raw is None:
            self.machine.fire("edit_refused", file=path, code="planner_error")
            return
        proposal, refusal = parse_proposal(raw, EditProposal)
        if refusal is not None or proposal is None:
            assert refusal is not None
            self._refuse("EDIT_FILE", refusal, path)
            self.machine.fire("edit_refused", file=path, code=refusal.code)
            return
        if proposal.status == "abort":
            self.machine.fire("abort", file=path, reason=proposal.reason or "the planner aborted")
            return
        if proposal.status == "skip":
            self.machine.record(EditSkipped(file=path, reason=proposal.reason))
            self._moved_on()
            self.machine.fire("edited", file=path)
            return
        edits = [e.model_dump() for e in proposal.edits]
        if not edits:
            refusal = Refusal("schema_invalid", "status 'ok' with no edits", "give at least one search/replace edit.")
            self._refuse("EDIT_FILE", refusal, path)
            self.machine.fire("edit_refused", file=path, code=refusal.code)
            return
        result = call_tool("apply_edit", self.ctx, {"path": path, "edits": edits})
        if isinstance(result, Refusal):
            if needs_human(result):
                before, after = content, EditCase(self.workspace.root, self.ctx.index, self.ctx.planned, path,
                                                  proposal.edits).after()[0] or content
                changed = changed_lines(before, after)
                self.machine.record(ApprovalRequested(file=path, changed_lines=changed,
                                                      diff=unified_diff(path, before, after), edits=edits))
                self.machine.fire("too_large", file=path, changed_lines=changed)
                return
            self._refuse("EDIT_FILE", result, path)
            self.machine.fire("edit_refused", file=path, code=result.code)
            return
        self._applied(result, "guards")
        self.machine.fire("edited", file=path)

    def _applied(self, result: EditResult, by: str) -> None:
        self.machine.record(EditApplied(file=result.path, diff=result.diff, changed_lines=result.changed_lines,
                                        digest=result.digest, approved_by=by))
        self.workspace.commit(f"edit {result.path}")
        self._moved_on()

    def _moved_on(self) -> None:
        self._refused = ""
        if len(self.state.queue) == 0:
            self._failure = ""

    def _approval(self) -> None:
        assert self.ctx is not None
        request = next(e for e in reversed(self.events) if isinstance(e, ApprovalRequested))
        approved = bool(self.approver(request.file, request.changed_lines, request.diff))
        by = getattr(self.approver, "__name__", "human")
        self.machine.record(ApprovalDecided(file=request.file, approved=approved, by=by))
        if not approved:
            self._refused = f"too_large: {request.changed_lines} changed lines were not approved; make a smaller edit"
            self.machine.fire("rejected", file=request.file)
            return
        result = call_tool("apply_edit", self.ctx, {"path": request.file, "edits": request.edits, "approved": True})
        if isinstance(result, Refusal):  # the file cannot have changed since the request; kept as a typed outcome
            self._refuse("HUMAN_APPROVAL", result, request.file)
            self.machine.fire("rejected", file=request.file)
            return
        self._applied(result, by)
        self.machine.fire("approved", file=request.file)

    def _run_tests(self) -> None:
        assert self.ctx is not None
        run = self._test_run("check")
        suspect = locate_failure(run.output, run.failed, tuple(self._steps), self.ctx.index)
        route = route_after_tests(run.outcome, len(run.passed), len(run.failed), suspect, self.state.fixes,
                                  self.limits.fix_budget)
        if route.trigger == "targeted_fix":
            self._failure = run.output[-self.limits.failure_chars:]
            self.machine.fire("targeted_fix", file=route.file, why=route.why)
        else:
            self.machine.fire(route.trigger, why=route.why)

    def _rollback(self) -> None:
        assert self.ctx is not None
        cause = next(e for e in reversed(self.events) if isinstance(e, Transitioned))
        result = call_tool("rollback", self.ctx, {})
        assert isinstance(result, RollbackResult)
        self.machine.record(RolledBack(digest_before=result.digest_before, digest_after=result.digest_after,
                                       baseline=result.baseline, restored=result.restored))
        reason = {"abort": "aborted", "edit_refused": "edit_budget_spent", "rejected": "edit_budget_spent",
                  "rollback": "tests_not_green"}.get(cause.trigger, cause.trigger)
        self.machine.fire("rolled_back", reason=reason)


def run_summary(state: RepoEditState) -> dict[str, Any]:
    """The numbers a report shows for one run, all read from the reduced state."""
    return {"status": state.status, "reason": state.reason, "plan": list(state.plan), "applied": list(state.applied),
            "test_runs": state.test_runs, "calls": state.calls, "prompt_tokens": state.prompt_tokens,
            "completion_tokens": state.completion_tokens, "refusals": list(state.refusals),
            "fixes": state.fixes, "rollbacks": state.rollbacks}

