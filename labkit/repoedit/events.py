"""The facts of a repo-editing run, and the reducer that rebuilds the run's state from them.

Every proposal (with its prompt and raw answer), every refusal (with the guard's code), every
applied edit (with its diff and the tree digest after it), every test run (with its outcome and
output tail) and every rollback (with the digests before and after) is an event in labkit's
hash-chained log. The state the machine decides on is a fold over those events, so a recorded run
replays with ``labkit replay`` without the model, the project or pytest.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field

from labkit.core.events import Event, InvariantViolated, RunStarted, Transitioned, register_event


@register_event
class RepoIndexed(Event):
    """DISCOVER_PROJECT indexed the copy: source files with their symbols, test files, the tree digest."""

    type: Literal["repo_indexed"] = "repo_indexed"
    source: dict[str, list[str]]
    tests: list[str]
    digest: str


@register_event
class Proposed(Event):
    """The planner answered in ``state`` (for ``file`` in EDIT_FILE): prompt, raw answer, cost."""

    type: Literal["repo_proposed"] = "repo_proposed"
    state: str
    planner: str
    file: str = ""
    attempt: int = 1
    prompt: str = ""
    raw: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    temperature: float = 0.0  # above 0: a sampled answer (sampled_repair), reproduced by ``seed``
    seed: int = 0


@register_event
class ProposalRefused(Event):
    """A proposal failed parsing (``not_json``, ``schema_invalid``) or a guard (the guard's code)."""

    type: Literal["repo_refused"] = "repo_refused"
    state: str
    file: str = ""
    code: str
    detail: str
    hint: str = ""


@register_event
class PlanAccepted(Event):
    """The plan passed its checks: the files to edit, in order, each with its reason."""

    type: Literal["repo_plan"] = "repo_plan"
    steps: list[dict[str, str]]
    by: str = "planner"  # "code" when the project left no choice (code_plan): no model was asked


@register_event
class PlanExtended(Event):
    """A test run's traceback blamed a source file the plan left out; code added it (``follow_traceback``).

    The evidence is the traceback, not a guess: the deepest frame in a source file of the project,
    the file a caller lives in when a rename or a signature change missed it."""

    type: Literal["repo_plan_extended"] = "repo_plan_extended"
    file: str
    why: str


@register_event
class EditApplied(Event):
    """An edit passed every guard (or a human approved it) and was written to the copy."""

    type: Literal["repo_edit"] = "repo_edit"
    file: str
    diff: str
    changed_lines: int
    digest: str
    approved_by: str = "guards"
    normalised: list[str] = Field(default_factory=list)  # what a tolerant match read alike, said, never hidden
    definitions: list[str] = Field(default_factory=list)  # the definitions replaced whole (definition_edit)


@register_event
class EditSkipped(Event):
    """The planner said there is nothing to change in ``file``."""

    type: Literal["repo_skip"] = "repo_skip"
    file: str
    reason: str = ""


@register_event
class ApprovalRequested(Event):
    """An edit over the size limit waits for a human; the edit itself is kept here until decided."""

    type: Literal["repo_approval_requested"] = "repo_approval_requested"
    file: str
    changed_lines: int
    diff: str
    edits: list[dict[str, str]]


@register_event
class ApprovalDecided(Event):
    type: Literal["repo_approval"] = "repo_approval"
    file: str
    approved: bool
    by: str


@register_event
class TestsRan(Event):
    """One pytest run in the copy: ``phase`` is ``baseline`` (before any edit) or ``check``."""

    __test__ = False  # a name pytest would otherwise try to collect

    type: Literal["repo_tests"] = "repo_tests"
    phase: Literal["baseline", "check"]
    outcome: str
    passed: list[str]
    failed: list[str]
    output: str
    exit_code: int | None = None
    digest: str = ""
    seconds: float = 0.0
    details: dict[str, str] = Field(default_factory=dict)  # failing node id -> short failure text (plan prompt)
    selected: list[str] = Field(default_factory=list)  # the test files run (relevant_tests); empty: the whole suite


@register_event
class RolledBack(Event):
    """ROLLBACK_OR_FIX restored the baseline; ``restored`` says the tree digest equals the baseline's."""

    type: Literal["repo_rollback"] = "repo_rollback"
    digest_before: str
    digest_after: str
    baseline: str
    restored: bool


@register_event
class CheckpointKept(Event):
    """A red check run with fewer failures than any before and none new: its tree is a checkpoint
    (``checkpoint``), the one a repair that ends worse goes back to."""

    type: Literal["repo_checkpoint"] = "repo_checkpoint"
    commit: str
    digest: str
    failed: int
    file: str  # the file the run's failure points at: the next repair's


@register_event
class CheckpointRestored(Event):
    """ROLLBACK_OR_FIX went back to the best tree so far (a checkpoint, or the baseline) instead of ending."""

    type: Literal["repo_checkpoint_restored"] = "repo_checkpoint_restored"
    commit: str
    digest_before: str
    digest_after: str
    file: str


@register_event
class RepoResumed(Event):
    """A stopped run was resumed on the copy it left; the copy was checked against the log first.

    ``expected`` is the tree digest the log last recorded, ``found`` the copy's digest. ``reset``: the
    copy held a write the log never recorded (the run stopped between writing a file and recording
    the edit), so it was reset to its last commit, which is the tree the log describes.
    """

    type: Literal["repo_resumed"] = "repo_resumed"
    state: str
    expected: str = ""
    found: str = ""
    reset: bool = False


@dataclass(frozen=True)
class RepoEditState:
    """What the machine decides on, rebuilt from the log alone.

    ``queue`` holds the planned files not yet edited in this round; ``attempts`` counts refused
    proposals in the current state (reset when the run moves on); budgets come from the run's params.
    """

    status: str = ""
    table: str = ""
    seq: int = -1
    plan: tuple[str, ...] = ()
    queue: tuple[str, ...] = ()
    attempts: int = 0
    fixes: int = 0
    applied: tuple[str, ...] = ()
    baseline_digest: str = ""
    baseline_passed: tuple[str, ...] = ()
    last_outcome: str = ""
    last_failed: tuple[str, ...] = ()
    last_selected: bool = False  # the last test run ran only some test files (relevant_tests)
    pending: str = ""
    rollbacks: int = 0
    restored: bool = False
    edits_since_rollback: int = 0
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    test_runs: int = 0
    refusals: tuple[str, ...] = ()
    plan_budget: int = 2
    edit_budget: int = 3
    fix_budget: int = 2
    reason: str = ""
    violations: tuple[str, ...] = ()


RETRY_TRIGGERS = frozenset({"plan_refused", "edit_refused", "too_large", "rejected"})
"""Triggers that keep the count of refused proposals: the run is still on the same decision."""


def _on_transition(state: RepoEditState, event: Transitioned) -> RepoEditState:
    retry = event.trigger in RETRY_TRIGGERS
    changes: dict[str, Any] = {"status": event.dest, "attempts": state.attempts if retry else 0}
    if event.trigger in ("targeted_fix", "to_checkpoint"):
        changes.update(queue=(str(event.payload.get("file", "")),), fixes=state.fixes + 1)
    if event.dest in ("DONE", "FAILED"):
        changes["reason"] = str(event.payload.get("reason", event.trigger))
    return dataclasses.replace(state, **changes)


def reduce_repoedit(state: RepoEditState, event: Event) -> RepoEditState:
    """Fold one event into the state (pure)."""
    r = dataclasses.replace
    if isinstance(event, Transitioned):
        state = _on_transition(state, event)
    elif isinstance(event, RunStarted):
        budgets = {k: int(event.params[k]) for k in ("plan_budget", "edit_budget", "fix_budget") if k in event.params}
        state = RepoEditState(status=event.initial, table=event.table, **budgets)
    elif isinstance(event, RepoIndexed):
        state = r(state, baseline_digest=event.digest)
    elif isinstance(event, Proposed):
        state = r(state, calls=state.calls + (1 if event.prompt else 0),
                  prompt_tokens=state.prompt_tokens + event.prompt_tokens,
                  completion_tokens=state.completion_tokens + event.completion_tokens)
    elif isinstance(event, ProposalRefused):
        state = r(state, attempts=state.attempts + 1, refusals=(*state.refusals, event.code))
    elif isinstance(event, PlanAccepted):
        files = tuple(s["file"] for s in event.steps)
        state = r(state, plan=files, queue=files)
    elif isinstance(event, PlanExtended):
        state = r(state, plan=(*state.plan, event.file))
    elif isinstance(event, EditApplied):
        state = r(state, queue=state.queue[1:], applied=(*state.applied, event.file), pending="",
                  edits_since_rollback=state.edits_since_rollback + 1)
    elif isinstance(event, EditSkipped):
        state = r(state, queue=state.queue[1:])
    elif isinstance(event, ApprovalRequested):
        state = r(state, pending=event.file)
    elif isinstance(event, ApprovalDecided) and not event.approved:
        state = r(state, pending="", attempts=state.attempts + 1, refusals=(*state.refusals, "rejected_by_human"))
    elif isinstance(event, TestsRan):
        changes: dict[str, Any] = {"last_outcome": event.outcome, "last_failed": tuple(event.failed),
                                   "last_selected": bool(event.selected), "test_runs": state.test_runs + 1}
        if event.phase == "baseline":
            changes["baseline_passed"] = tuple(event.passed)
        state = r(state, **changes)
    elif isinstance(event, RolledBack):
        state = r(state, rollbacks=state.rollbacks + 1, restored=event.restored, edits_since_rollback=0)
    elif isinstance(event, InvariantViolated):
        state = r(state, status=event.dest, violations=(*state.violations, event.invariant))
    return r(state, seq=event.seq)
