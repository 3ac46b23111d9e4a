"""The repo-editing table, its guards and invariants, and a run that drives it.

::

    DISCOVER_PROJECT --indexed--> PLAN_CHANGE --plan_ok--> EDIT_FILE --edited [not files_left]--> RUN_TESTS
    RUN_TESTS --green--> DONE | --targeted_fix--> EDIT_FILE | --rollback--> ROLLBACK_OR_FIX --rolled_back--> FAILED
    ROLLBACK_OR_FIX --to_checkpoint [fix_rounds_left]--> EDIT_FILE  (the checkpoint feature: the best tree so far)
    EDIT_FILE --too_large--> HUMAN_APPROVAL --approved / rejected--> EDIT_FILE | RUN_TESTS | ROLLBACK_OR_FIX

Code does what code can (indexing, checking, applying, testing, restoring); the planner only
proposes a plan and one edit at a time. Retry budgets are table guards over the reduced state, so
``labkit replay`` re-checks that every retry was within budget. Each state's work is one method,
found through :attr:`RepoEditRun.handlers` (one declaration per state, no if-chain).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from labkit.core.errors import LabkitError
from labkit.core.events import Event, RunStarted, Transitioned
from labkit.core.invariants import Invariant
from labkit.core.machine import LabMachine
from labkit.core.reducer import Guard, TableEntry
from labkit.core.store import EventLog
from labkit.core.table import Row, TransitionTable
from labkit.repoedit import features as feature
from labkit.repoedit.edits import (
    EditCase,
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
    CheckpointKept,
    CheckpointRestored,
    EditApplied,
    EditSkipped,
    PlanAccepted,
    PlanExtended,
    ProposalRefused,
    Proposed,
    RepoEditState,
    RepoIndexed,
    RepoResumed,
    RolledBack,
    TestsRan,
    reduce_repoedit,
)
from labkit.repoedit.features import CodeFeature, FeatureSet
from labkit.repoedit.formats import EditFormat, edit_format, parse_proposal
from labkit.repoedit.index import index_project, is_test_path, summary_with_uses
from labkit.repoedit.localize import FileView, candidate_files, failing_statements, file_view
from labkit.repoedit.notes import Notes, notes_from
from labkit.repoedit.planners import EditView, Planner, PlanView
from labkit.repoedit.routing import locate_failure, route_after_tests
from labkit.repoedit.tools import EditResult, FileText, RollbackResult, ToolContext, call_tool
from labkit.repoedit.verify import function_of
from labkit.repoedit.workspace import Workspace

TABLE_NAME = "repoedit"
PLAN_MENU = 3
"""traceback_plan: how many of the files the evidence names the plan may choose from."""
STUCK = ("repeated", "no_change")
"""Refusals after which no_repeat changes the next prompt: the old answer is left out and sampled hotter."""
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
    Row("ROLLBACK_OR_FIX", "to_checkpoint", "EDIT_FILE", "fix_rounds_left"),
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
        "fix_rounds_left": lambda s, p: s.fixes < s.fix_budget,
    }


def _edits_stay_in_plan(state: RepoEditState, events: Any) -> str | None:
    stray = [f for f in state.applied if f not in state.plan or is_test_path(f)]
    return f"edits applied outside the plan or to tests: {stray}" if stray else None


def _done_only_when_green(state: RepoEditState, events: Any) -> str | None:
    if state.status == "DONE" and state.last_outcome != "passed":
        return f"DONE after a test run that ended '{state.last_outcome}'"
    if state.status == "DONE" and state.last_selected:
        return "DONE after a test run of some test files only, not the whole suite"
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
        Invariant("done_only_when_green", _done_only_when_green,
                  "DONE only right after an all-green run of the whole suite"),
        Invariant("failed_leaves_tree_as_it_was", _failed_leaves_tree_as_it_was,
                  "a failed run ends with the baseline tree restored"),
    ]


# read by labkit.core.catalog (this module is listed in labkit.core.registry.TABLE_MODULES)
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
    plan_index_chars: int = 2000  # traceback_plan: past this, the plan chooses among the files the evidence names
    view_lines: int = 150  # definition_view: a file longer than this is shown as an excerpt
    excerpt_lines: int = 80  # definition_view: the excerpt's size
    relevant_from: int = 4  # relevant_tests: a suite of this many test files or more runs the relevant ones first

    def params(self, features: FeatureSet) -> dict[str, Any]:
        """The limits a run records: the budgets always, a feature's own limits when the feature is on."""
        own = {"traceback_plan": ("plan_index_chars",), "definition_view": ("view_lines", "excerpt_lines"),
               "relevant_tests": ("relevant_from",)}
        names = ["plan_budget", "edit_budget", "fix_budget", "diff_limit", "test_timeout",
                 *(k for f, keys in own.items() if features.on(f) for k in keys)]
        return {k: getattr(self, k) for k in names}


Approver = Callable[[str, int, str], bool]
"""A human's decision on an edit over the size limit: ``(file, changed lines, diff) -> approve?``."""


def no_human(file: str, changed: int, diff: str) -> bool:
    """The default when nobody is at the keyboard: an edit over the limit is not approved."""
    return False


class RepoEditRun:
    """One run of the machine on a project folder, in a fresh git copy.

    ``clock`` times the events and test runs (inject a fixed one for reproducible logs);
    ``keep=True`` keeps the copy for inspection (its path is ``self.workspace.root``).

    ``copy_at`` names the folder for the copy (default: a fresh temporary one). A run stopped
    half-way (an exception, Ctrl-C, a killed process) leaves its copy there, and a run given the
    same ``log`` (holding the stopped run) and the same ``copy_at`` resumes it: the state comes from
    the log, the copy is checked against the digest the log recorded last (a write the log never
    saw is undone), a model answer already in the log is not asked for again, and the run goes on.
    The copy is removed when the run ends, unless ``keep``.
    """

    def __init__(self, source: str | Path, requirement: str, planner: Planner, *, limits: Limits = Limits(),
                 log: EventLog | None = None, clock: Callable[[], float] = time.time,
                 approver: Approver = no_human, python: str = sys.executable, task_id: str = "",
                 keep: bool = False, versions: Mapping[str, str] | None = None,
                 copy_at: str | Path | None = None, features: Iterable[str] = (),
                 edit_format: str | None = None) -> None:
        self.source = Path(source)
        self.features = FeatureSet.of(features)
        self.edit_format = edit_format_of(self.features, edit_format)
        self.requirement = requirement
        self.planner = planner
        self.limits = limits
        self.clock = clock
        self.approver = approver
        self.copy_at = Path(copy_at) if copy_at is not None else None
        params = {"task": task_id, "project": self.source.name, "planner": planner.name,
                  **limits.params(self.features)}
        if self.features:  # absent when no feature is on
            params["features"] = list(self.features)
        if self.edit_format.name != self.features.edit_format():  # recorded only where the arm chose another
            params["edit_format"] = self.edit_format.name
        existing = list(log.events) if log is not None else []
        if existing:
            _check_resumable(existing, params)
        self.workspace = self._open_copy(existing, python, keep)
        try:
            self.machine = LabMachine(repoedit_table(), guards=repoedit_guards(), invariants=repoedit_invariants(),
                                      reduce=reduce_repoedit, empty=RepoEditState(), log=log, clock=clock,
                                      versions={"repoedit": "1", **(versions or {})}, params=params)
        except BaseException:
            if not existing:
                self.workspace.close()  # a run that cannot start leaves no copy behind
            raise
        self.ctx: ToolContext | None = None
        self._carried: Event | None = None  # a planner answer or human decision the stopped run left unused
        if existing:
            self._resume()
        self.handlers: dict[str, Callable[[], None]] = {
            "DISCOVER_PROJECT": self._discover, "PLAN_CHANGE": self._plan, "EDIT_FILE": self._edit,
            "HUMAN_APPROVAL": self._approval, "RUN_TESTS": self._run_tests, "ROLLBACK_OR_FIX": self._rollback,
        }

    def on(self, feature: CodeFeature | str) -> bool:
        """Whether this run has ``feature`` (:mod:`~labkit.repoedit.features`); an unknown name is refused."""
        return self.features.on(feature)

    @property
    def state(self) -> RepoEditState:
        return self.machine.state

    @property
    def events(self) -> Any:
        return self.machine.events

    @property
    def notes(self) -> Notes:
        """The notes the planner is shown, read from the log (:mod:`labkit.repoedit.notes`)."""
        return notes_from(self.events, self.limits.failure_chars)

    def run(self) -> RepoEditState:
        """Drive the machine to DONE or FAILED; the copy is removed afterwards unless ``keep``.

        A run that stops early keeps a copy made at ``copy_at``, so that it can be resumed."""
        try:
            while not self.machine.finished:
                self.handlers[self.machine.status]()
        except BaseException:
            if self.copy_at is None:
                self.workspace.close()
            raise
        self.workspace.close()
        return self.state

    # ---------------------------------------------------------------- resume
    def _open_copy(self, existing: list[Any], python: str, keep: bool) -> Workspace:
        """A fresh copy for a new run; for a resumed one, the copy it left (or a fresh one if it made none)."""
        made = self.copy_at is not None and (self.copy_at / self.source.name / ".git").is_dir()
        if not existing or not (made or any(isinstance(e, RepoIndexed) for e in existing)):
            return Workspace(self.source, python=python, keep=keep, at=self.copy_at)
        if self.copy_at is None:
            raise LabkitError("the log holds a run that stopped half-way, and no working copy was named",
                              "resume it with the folder that holds its copy (copy_at=..., or the same --log "
                              "on the command line), or start a new run with a new log.")
        workspace = Workspace.reopen(self.copy_at, self.source, python=python)
        workspace.keep = keep
        return workspace

    def _resume(self) -> None:
        """Rebuild what the log does not hold (the tool context), check the copy, and record the resume."""
        if self.machine.finished:
            return
        indexed = next((e for e in reversed(self.events) if isinstance(e, RepoIndexed)), None)
        expected = next((d for d in map(_digest_of, reversed(self.events)) if d), "")
        found, reset = self.workspace.digest(), False
        if indexed is not None and self.state.status != "ROLLBACK_OR_FIX":  # a rollback restores the baseline anyway
            if found != expected:
                self.workspace.rollback("HEAD")
                reset = True
            elif self.workspace.dirty():  # stopped between recording an edit and committing it
                self.workspace.commit("the edit the log recorded last")
            if self.workspace.digest() != expected:
                raise LabkitError(f"the working copy {self.workspace.root} is not the tree the log describes "
                                  f"(digest {self.workspace.digest()[:12]}, the log's {expected[:12]})",
                                  "it was changed outside the run; start a new run with a new log.")
        if indexed is not None:
            index = index_project(self.workspace.root)
            if index.to_dict()["tests"] != indexed.tests or set(index.source_files) != set(indexed.source):
                raise LabkitError(f"the working copy {self.workspace.root} holds other files than the run indexed",
                                  "it was changed outside the run; start a new run with a new log.")
            self.ctx = ToolContext(self.workspace, index, indexed.digest, diff_limit=self.limits.diff_limit,
                                   planned=frozenset(self.state.plan), tolerant=self.on(feature.TOLERANT_MATCH))
        since: list[Event] = []  # what the stopped step recorded after its state's last transition
        for event in reversed(self.events):
            if isinstance(event, Transitioned | RunStarted):
                break
            if not isinstance(event, RepoResumed):
                since.insert(0, event)
        self.machine.record(RepoResumed(state=self.state.status, expected=expected, found=found, reset=reset))
        if since and isinstance(since[-1], Proposed | ApprovalDecided):
            self._carried = since[-1]
        if since:
            self._settle(since[-1])  # the step had recorded its outcome, not yet its transition

    def _take_carried(self, kind: type, **match: str) -> Any:
        """The stopped run's last event if it is a ``kind`` with these fields (used once), else None."""
        carried, self._carried = self._carried, None
        if isinstance(carried, kind) and all(getattr(carried, k) == v for k, v in match.items()):
            return carried
        return None

    # ---------------------------------------------------------------- helpers
    def _test_run(self, phase: str, select: tuple[str, ...] = ()) -> TestsRan:
        """Run the tests (``select``: these test files only) through the tool and record the run (timed by the
        injected clock)."""
        assert self.ctx is not None
        start = self.clock()
        run = call_tool("run_tests", self.ctx, {"timeout": self.limits.test_timeout, "select": list(select)})
        seconds = self.clock() - start
        event = self.machine.record(TestsRan(phase=phase, outcome=run.outcome, passed=list(run.passed),
                                             failed=list(run.failed), output=run.output, exit_code=run.exit_code,
                                             digest=self.workspace.digest(), seconds=round(seconds, 3),
                                             details=dict(run.details), selected=list(select)))
        assert isinstance(event, TestsRan)
        return event

    def _propose(self, state: str, file: str, ask: Callable[[], Any], temperature: float = 0.0,
                 seed: int = 0) -> str | None:
        """The planner's raw answer, recorded; None when the planner raised.

        A planner that raises (a bug, a backend error) is one more typed refusal, ``planner_error``,
        with the exception's type and message in the log: the state's retry budget decides what
        follows, so a planner that keeps raising ends the run as FAILED (with the tree restored)
        instead of crashing the runner."""
        carried = self._take_carried(Proposed, state=state, file=file)
        if carried is not None:  # the stopped run had this answer and nothing else after it
            return str(carried.raw)
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
                                     seconds=round(proposal.seconds, 3), temperature=temperature, seed=seed))
        return str(proposal.raw)

    def _refuse(self, state: str, refusal: Refusal, file: str = "") -> None:
        self._settle(self.machine.record(ProposalRefused(state=state, file=file, **refusal.to_dict())))

    # ---------------------------------------------------------------- outcomes
    def _outcome(self, event: Event) -> tuple[str, dict[str, Any]] | None:
        """The transition that ``event`` calls for when it ends a step, else None.

        One definition for a step that just recorded its outcome and for a resumed run whose step
        stopped after recording it (before its transition), so the two cannot decide differently."""
        if isinstance(event, ProposalRefused):
            if event.state == "PLAN_CHANGE":
                return "plan_refused", {"code": event.code}
            if event.state == "EDIT_FILE":
                return "edit_refused", {"file": event.file, "code": event.code}
            return "rejected", {"file": event.file}
        if isinstance(event, PlanAccepted):
            return "plan_ok", {"files": len(event.steps)}
        if isinstance(event, EditApplied):
            return ("edited" if self.state.status == "EDIT_FILE" else "approved"), {"file": event.file}
        if isinstance(event, EditSkipped):
            return "edited", {"file": event.file}
        if isinstance(event, ApprovalRequested):
            return "too_large", {"file": event.file, "changed_lines": event.changed_lines}
        if isinstance(event, ApprovalDecided):
            return None if event.approved else ("rejected", {"file": event.file})
        if isinstance(event, RepoIndexed):
            return None if event.tests else ("bad_repo", {"reason": "no_tests"})
        if isinstance(event, TestsRan) and event.phase == "baseline":
            reason = {"passed": "already_green", "no_tests": "no_tests", "timeout": "baseline_timeout"}
            return ("bad_repo", {"reason": reason[event.outcome]}) if event.outcome in reason else ("indexed", {})
        if isinstance(event, TestsRan):
            assert self.ctx is not None
            if event.selected and event.outcome == "passed":
                return None  # the relevant tests pass: the whole suite runs next, in the same step
            suspect = locate_failure(event.output, tuple(event.failed), tuple(self.notes.steps), self.ctx.index)
            if self.on(feature.CHECKPOINT) and self._worse_than_best(event):
                return "rollback", {"why": "worse than the best tree so far: back to it"}
            route = route_after_tests(event.outcome, len(event.passed), len(event.failed), suspect,
                                      self.state.fixes, self.limits.fix_budget)
            if route.trigger == "targeted_fix":
                return "targeted_fix", {"file": route.file, "why": route.why}
            return route.trigger, {"why": route.why}
        if isinstance(event, CheckpointRestored):
            return "to_checkpoint", {"file": event.file, "why": "repair again from the best tree so far"}
        if isinstance(event, RolledBack):
            cause = next(e for e in reversed(self.events) if isinstance(e, Transitioned))
            reason = {"abort": "aborted", "edit_refused": "edit_budget_spent", "rejected": "edit_budget_spent",
                      "rollback": "tests_not_green"}.get(cause.trigger, cause.trigger)
            return "rolled_back", {"reason": reason}
        return None

    def _settle(self, event: Event) -> bool:
        """Fire the transition ``event`` calls for, if any; say whether the step ended."""
        outcome = self._outcome(event)
        if outcome is not None:
            self.machine.fire(outcome[0], **outcome[1])
        return outcome is not None

    # ---------------------------------------------------------------- states
    def _discover(self) -> None:
        if self.ctx is None:  # a resumed run that stopped after indexing has its context already
            index = index_project(self.workspace.root)
            digest = self.workspace.digest()
            self.ctx = ToolContext(self.workspace, index, digest, diff_limit=self.limits.diff_limit,
                                   tolerant=self.on(feature.TOLERANT_MATCH))
            if self._settle(self.machine.record(RepoIndexed(source=index.to_dict()["source"],
                                                            tests=list(index.test_files), digest=digest))):
                return
        self._settle(self._test_run("baseline"))

    def _plan(self) -> None:
        assert self.ctx is not None
        sources = self.ctx.index.source_files
        if self.on(feature.CODE_PLAN) and len(sources) == 1:  # no choice to make: code plans, no model is asked
            self.ctx.planned = frozenset(sources)
            self._settle(self.machine.record(PlanAccepted(steps=[{"file": sources[0],
                                                                  "why": "the only source file"}], by="code")))
            return
        notes = self.notes
        failing = tuple(f"{node}: {notes.baseline.details.get(node, '')}".strip()[:200]
                        for node in notes.baseline.failed)
        summary = (summary_with_uses(self.workspace.root, self.ctx.index) if self.on(feature.PLAN_REFERENCES)
                   else self.ctx.index.summary())
        menu = sources if self.on(feature.CLOSED_PLAN) else ()
        if self.on(feature.TRACEBACK_PLAN) and len(summary) > self.limits.plan_index_chars:
            evidence = "\n".join([notes.baseline.output, *notes.baseline.details.values()])
            found = candidate_files(evidence, notes.baseline.failed, self.ctx.index)[:PLAN_MENU]
            if found:  # the index is too long to show: the plan chooses among the files the evidence names
                lines = {line.split(":", 1)[0]: line for line in summary.splitlines()}
                summary = "\n".join(f"{lines.get(path, path)[:400]} ({why})" for path, why in found)
                menu = tuple(path for path, _ in found)
        view = PlanView(self.requirement, summary, failing, notes.refused, menu=menu,
                        example=self.on(feature.PLAN_EXAMPLE))
        raw = self._propose("PLAN_CHANGE", "", lambda: self.planner.propose_plan(view))
        if raw is None:
            return
        plan, refusal = parse_proposal(raw, PlanProposal)
        if plan is not None:
            refusal = check_plan(plan, self.workspace.root, self.ctx.index)
        if refusal is not None or plan is None:
            assert refusal is not None
            self._refuse("PLAN_CHANGE", refusal)
            return
        steps = [{"file": s.file, "why": s.why} for s in plan.steps]
        self.ctx.planned = frozenset(s["file"] for s in steps)
        self._settle(self.machine.record(PlanAccepted(steps=steps)))

    def _edit_view(self, path: str, content: str) -> tuple[EditView, str]:
        """What the planner is shown for ``path``, and the file the failure blames ('' if none).

        The features decide what goes in: the failing output on the first edit, the file's
        definitions (the blamed ones first), the previous answer on a retry, a sampled retry."""
        assert self.ctx is not None
        notes = self.notes
        first = not notes.failure  # not a targeted fix round
        output = notes.failure or notes.baseline.output
        suspect = path if not first else (locate_failure(notes.baseline.output, notes.baseline.failed,
                                                         tuple(notes.steps), self.ctx.index) or "")
        failure = notes.failure
        if first and self.on(feature.FIRST_FAILURE):
            failure = notes.baseline.output[-self.limits.failure_chars:]
        seen = FileView(content, (), ())
        if self.on(feature.DEFINITION_EDIT):
            long_at = self.limits.view_lines if self.on(feature.DEFINITION_VIEW) else None
            seen = file_view(path, content, output, view_lines=long_at, excerpt_lines=self.limits.excerpt_lines,
                             short_docstrings=self.on(feature.SHORT_DOCSTRINGS),
                             statements=failing_statements(self.workspace.root, output) if long_at else "")
        retry = self.state.attempts > 0 or not first
        stuck = self.on(feature.NO_REPEAT) and self._last_refusal(path) in STUCK
        previous = self._previous_answer(path) if retry and self.on(feature.REPAIR_FEEDBACK) and not stuck else ""
        temperature = 1.0 if retry and stuck else (0.7 if retry and self.on(feature.SAMPLED_REPAIR) else 0.0)
        view = EditView(self.requirement, path, notes.steps.get(path, ""), seen.shown, failure, notes.refused,
                        format=self.edit_format.name, definitions=seen.names, blamed=seen.pointed,
                        previous=previous,
                        temperature=temperature,
                        seed=sum(isinstance(e, Proposed) for e in self.events) if temperature else 0, first=first,
                        offer_skip=not (self.on(feature.BLAMED_SKIP) and path == suspect),
                        whole=content if seen.excerpted else "", short_docstrings=seen.short_docstrings)
        return view, suspect

    def _last_refusal(self, path: str) -> str:
        """The code of the refusal that ended the last answer for ``path`` ('' if it was not refused)."""
        for event in reversed(self.events):
            if isinstance(event, ProposalRefused) and event.state == "EDIT_FILE" and event.file == path:
                return event.code
            if isinstance(event, EditApplied | EditSkipped) and event.file == path:
                return ""
        return ""

    def _repeats(self, path: str, raw: str) -> int:
        """The attempt whose answer for ``path`` ``raw`` repeats (0: none); the answer just recorded is left out."""
        answers = [e for e in self.events if isinstance(e, Proposed) and e.state == "EDIT_FILE" and e.file == path]
        return next((i + 1 for i, e in enumerate(answers[:-1]) if str(e.raw).strip() == raw.strip()), 0)

    def _previous_answer(self, path: str) -> str:
        """The last answer proposed for ``path`` and what became of it (refused, or applied and then red)."""
        for event in reversed(self.events):
            if isinstance(event, Proposed) and event.state == "EDIT_FILE" and event.file == path:
                return str(event.raw)[:1200]
        return ""

    def _edit(self) -> None:
        assert self.ctx is not None
        path = self.state.queue[0]
        read = call_tool("read_file", self.ctx, {"path": path})
        content = read.text if isinstance(read, FileText) else ""
        view, suspect = self._edit_view(path, content)
        raw = self._propose("EDIT_FILE", path, lambda: self.planner.propose_edit(view), view.temperature, view.seed)
        if raw is None:
            return
        repeated = self._repeats(path, raw) if self.on(feature.NO_REPEAT) else 0
        if repeated:
            self._refuse("EDIT_FILE", Refusal("repeated", f"the same answer as answer {repeated} for {path}, "
                                              "which did not make the tests pass", "write a different fix."), path)
            return
        answer = self.edit_format.parse(raw, content, view)
        changes, status, reason = answer.changes, answer.status, answer.reason
        if answer.refusal is not None:
            self._refuse_edit(answer.refusal, path, suspect)
            return
        if status == "abort":
            self.machine.fire("abort", file=path, reason=reason or "the planner aborted")
            return
        if status == "skip":
            if self.on(feature.BLAMED_SKIP) and path == suspect:
                self._refuse("EDIT_FILE", Refusal("blamed_skip", f"the failing tests point at {path}",
                                                  "change this file: the failure is raised here."), path)
                return
            self._settle(self.machine.record(EditSkipped(file=path, reason=reason)))
            return
        edits = [e.model_dump() for e in changes]
        if not edits:
            self._refuse("EDIT_FILE", Refusal("schema_invalid", "status 'ok' with no edits",
                                              "give at least one search/replace edit."), path)
            return
        result = call_tool("apply_edit", self.ctx, {"path": path, "edits": edits})
        if isinstance(result, Refusal) and needs_human(result):
            before, after = content, EditCase(self.workspace.root, self.ctx.index, self.ctx.planned, path,
                                              tuple(changes), tolerant=self.ctx.tolerant).after()[0] or content
            self._settle(self.machine.record(ApprovalRequested(file=path, changed_lines=changed_lines(before, after),
                                                               diff=unified_diff(path, before, after), edits=edits)))
        elif isinstance(result, Refusal):
            self._refuse_edit(result, path, suspect)
        else:
            self._applied(result, "guards", list(answer.named))

    def _refuse_edit(self, refusal: Refusal, path: str, suspect: str) -> None:
        """Refuse an answer for ``path``; with ``unchanged_moves_on``, one that changes nothing is a skip of the file
        instead, where the plan holds another file and the failure does not point at this one."""
        if refusal.code == "no_change" and self.on(feature.UNCHANGED_MOVES_ON) and len(self.state.queue) > 1 \
                and path != suspect:
            self._settle(self.machine.record(EditSkipped(file=path, reason="the answer left the file unchanged")))
            return
        self._refuse("EDIT_FILE", refusal, path)

    def _applied(self, result: EditResult, by: str, named: list[str] | None = None) -> None:
        event = self.machine.record(EditApplied(file=result.path, diff=result.diff,
                                                changed_lines=result.changed_lines, digest=result.digest,
                                                approved_by=by, normalised=list(result.normalised),
                                                definitions=named or []))
        self.workspace.commit(f"edit {result.path}")
        self._settle(event)

    def _approval(self) -> None:
        assert self.ctx is not None
        request = next(e for e in reversed(self.events) if isinstance(e, ApprovalRequested))
        decided = self._take_carried(ApprovalDecided, file=request.file)  # a human is not asked twice
        if decided is None:
            approved = bool(self.approver(request.file, request.changed_lines, request.diff))
            decided = self.machine.record(ApprovalDecided(file=request.file, approved=approved,
                                                          by=getattr(self.approver, "__name__", "human")))
        if self._settle(decided):  # rejected
            return
        result = call_tool("apply_edit", self.ctx, {"path": request.file, "edits": request.edits, "approved": True})
        if isinstance(result, Refusal):  # the file cannot have changed since the request; kept as a typed outcome
            self._refuse("HUMAN_APPROVAL", result, request.file)
            return
        self._applied(result, decided.by)

    def _run_tests(self) -> None:
        assert self.ctx is not None
        relevant = self._relevant_tests()
        ran = self._test_run("check", relevant) if relevant else None
        if ran is None or ran.outcome == "passed":
            ran = self._test_run("check")  # the whole suite, the only run that can end DONE
        if self.on(feature.FOLLOW_TRACEBACK) and ran.outcome in ("failed", "error"):
            self._follow_traceback(ran)
        best = self._checkpoint()
        if self.on(feature.CHECKPOINT) and ran.outcome == "failed" and not self._breaks(ran) and \
                len(ran.failed) < (best.failed if best else len(self.notes.baseline.failed)):
            blamed_file = locate_failure(ran.output, tuple(ran.failed), tuple(self.notes.steps), self.ctx.index)
            self.machine.record(CheckpointKept(commit=self.workspace.head(), digest=ran.digest, failed=len(ran.failed),
                                               file=blamed_file or self.state.applied[-1]))
        self._settle(ran)

    def _relevant_tests(self) -> tuple[str, ...]:
        """The test files of the baseline's failing tests, when ``relevant_tests`` is on and the suite is big."""
        assert self.ctx is not None
        every = self.ctx.index.test_files
        if not self.on(feature.RELEVANT_TESTS) or len(every) < self.limits.relevant_from:
            return ()
        files = tuple(sorted({node.split("::", 1)[0] for node in self.notes.baseline.failed} & set(every)))
        return files if files and len(files) < len(every) else ()

    def _checkpoint(self) -> CheckpointKept | None:
        """The best checkpoint kept so far (fewest failures, the earliest of equals), or None."""
        kept = [e for e in self.events if isinstance(e, CheckpointKept)]
        return min(kept, key=lambda e: e.failed) if kept else None

    def _breaks(self, ran: TestsRan) -> bool:
        """Whether ``ran`` fails a test function that had no failing case at the baseline (ids of parametrized
        cases may move between runs, so functions are compared)."""
        failing = {function_of(n) for n in self.notes.baseline.failed}
        return any(function_of(n) not in failing for n in ran.failed)

    def _worse_than_best(self, ran: TestsRan) -> bool:
        """A red check run with more failures than the checkpoint, or breaking a test; False with no checkpoint."""
        best = self._checkpoint()
        return best is not None and ran.outcome in ("failed", "error") and (
            self._breaks(ran) or len(ran.failed) > best.failed)

    def _follow_traceback(self, ran: TestsRan) -> None:
        """Add the source file a failure is raised in to the plan when the plan left it out (a missed caller)."""
        assert self.ctx is not None
        planned = tuple(self.notes.steps)
        if locate_failure(ran.output, tuple(ran.failed), planned, self.ctx.index) is not None:
            return  # the failure points into the plan: an ordinary targeted fix
        blamed_file = locate_failure(ran.output, (), self.ctx.index.source_files, self.ctx.index)
        if blamed_file is None or blamed_file in planned or self.state.fixes >= self.limits.fix_budget:
            return
        self.ctx.planned = self.ctx.planned | {blamed_file}
        self.machine.record(PlanExtended(file=blamed_file, why="the failing traceback is raised here"))

    def _rollback(self) -> None:
        assert self.ctx is not None
        cause = next(e for e in reversed(self.events) if isinstance(e, Transitioned))
        best = self._checkpoint() if self.on(feature.CHECKPOINT) else None
        if best is not None and cause.trigger != "abort" and self.state.fixes < self.limits.fix_budget:
            before = self.workspace.digest()
            self.workspace.rollback(best.commit)
            self._settle(self.machine.record(CheckpointRestored(commit=best.commit, digest_before=before,
                                                                digest_after=self.workspace.digest(), file=best.file)))
            return
        result = call_tool("rollback", self.ctx, {})
        assert isinstance(result, RollbackResult)
        self._settle(self.machine.record(RolledBack(digest_before=result.digest_before,
                                                    digest_after=result.digest_after,
                                                    baseline=result.baseline, restored=result.restored)))


def edit_format_of(features: FeatureSet, name: str | None) -> EditFormat:
    """The per-file edit format a run asks for: ``name`` if given, else the one its features select."""
    return edit_format(name or features.edit_format(), per_file=True)


def _check_resumable(existing: list[Any], params: Mapping[str, Any]) -> None:
    """Refuse to resume a log of another run (other task, planner or limits), or of a finished one."""
    first = existing[0]
    if not isinstance(first, RunStarted) or first.table != TABLE_NAME:
        raise LabkitError("the log does not start a repo-editing run", "give a new log, or one written by this run.")
    differ = [f"{k}: {first.params.get(k)!r} there, {v!r} here" for k, v in params.items()
              if first.params.get(k) != v]
    if differ:
        raise LabkitError(f"the log holds a run with other settings ({'; '.join(differ)})",
                          "resume it with the settings that started it, or give a new log.")
    ended = next((e for e in reversed(existing) if isinstance(e, Transitioned)), None)
    if ended is not None and ended.dest in ("DONE", "FAILED"):
        raise LabkitError(f"the log holds a finished run (it ended {ended.dest})",
                          "read it with `labkit replay`; a new run needs a new log.")


def _digest_of(event: Event) -> str:
    """The tree digest an event recorded, if it recorded one."""
    if isinstance(event, RolledBack | CheckpointRestored):
        return event.digest_after
    return str(getattr(event, "digest", "")) if isinstance(event, RepoIndexed | EditApplied | TestsRan) else ""


def run_summary(state: RepoEditState) -> dict[str, Any]:
    """The numbers a report shows for one run, all read from the reduced state."""
    return {"status": state.status, "reason": state.reason, "plan": list(state.plan), "applied": list(state.applied),
            "test_runs": state.test_runs, "calls": state.calls, "prompt_tokens": state.prompt_tokens,
            "completion_tokens": state.completion_tokens, "refusals": list(state.refusals),
            "fixes": state.fixes, "rollbacks": state.rollbacks}

