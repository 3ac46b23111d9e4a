"""Tasks as data, the goal predicate the machine stops on, and the verifier that grades a run.

:func:`goal_met` judges the run state (the planner's "done" never counts); :func:`verify` grades from the
world and the log, alike for every arm; both judge drafts with :func:`draft_difference_problems`."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from labkit.core.errors import LabkitError
from labkit.core.events import Event, Transitioned
from labkit.runtime.events import ToolResult
from labkit.runtime.faults import FaultPlan
from labkit.runtime.policy import Budget, Policy
from labkit.runtime.records import DIFF_FIELDS, differences_text, record_ids_in
from labkit.runtime.state import RunState
from labkit.runtime.tools import World


class Goal(BaseModel):
    """What must be true at the end: records read, and a draft saved that says what it should."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    reads: tuple[str, ...] = ()
    draft_key: str | None = None
    draft_covers_differences: bool = Field(
        False, description="the draft's difference lines are exactly those of `reads` (draft_difference_problems)")
    draft_must_mention: tuple[str, ...] = ()


class Task(BaseModel):
    """A task for the planner–executor runtime (and for the free loop it is compared with)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    description: str
    goal: Goal
    forbidden_records: tuple[str, ...] = ()
    faults: FaultPlan = Field(default_factory=FaultPlan)
    budget: Budget = Field(default_factory=Budget)
    escalate_denials: bool = True
    policy_version: str = "policy-1"
    k: int = Field(3, ge=1, le=10, description="at most this many candidates per proposal")
    planner: str = "scripted-diff"

    def policy(self) -> Policy:
        return Policy(version=self.policy_version, forbidden_records=self.forbidden_records,
                      escalate_denials=self.escalate_denials)

    @classmethod
    def load(cls, path: str | Path) -> Task:
        """Read a task from a JSON file, with errors that name the file and the field."""
        path = Path(path)
        if not path.exists():
            raise LabkitError(f"no task file at {path}", f"give a task JSON file or one of: {', '.join(TASKS)}.")
        try:
            return cls.model_validate_json(path.read_text(encoding="utf-8"))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "(task)"
            raise LabkitError(f"{path}: {where}: {first['msg']}",
                              "fix the task file; see labkit.runtime.task.Task.") from None
        except json.JSONDecodeError as exc:  # pragma: no cover - pydantic reports JSON errors itself
            raise LabkitError(f"{path} is not valid JSON ({exc.msg})", "fix the file.") from None


def _difference_lines(text: str) -> list[str]:
    """The lines of ``text`` that state a difference (bulleted or not), without their bullet."""
    lines = []
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("- "):
            lines.append(line[2:].strip())
        elif line.split(":", 1)[0] in DIFF_FIELDS and ":" in line:
            lines.append(line)
    return lines


def draft_difference_problems(text: str, records: Sequence[Mapping[str, Any]],
                              reads: Sequence[str]) -> list[str]:
    """What is wrong with ``text`` as the differences draft of ``records``; [] if right. Its difference lines
    must be exactly ``differences_text(records)``'s, as a set, naming no record outside ``reads``."""
    expected = set(_difference_lines(differences_text(records)))
    found = set(_difference_lines(text))
    problems = []
    missing = sorted(expected - found)
    if missing:
        problems.append(f"missing: {missing}")
    unexpected = sorted(found - expected)
    if unexpected:
        problems.append(f"not expected: {unexpected}")
    outside = [r for r in record_ids_in(text) if r not in set(reads)]
    if outside:
        problems.append(f"names record(s) outside the goal: {outside}")
    return problems


def goal_met(goal: Goal, state: RunState) -> bool:
    """The machine's stop predicate, over the run state only (the records the run read)."""
    if any(r not in state.reads for r in goal.reads):
        return False
    if goal.draft_key is None:
        return True
    draft = state.drafts.get(goal.draft_key)
    if draft is None:
        return False
    text = str(draft.get("text", ""))
    if any(m not in text for m in goal.draft_must_mention):
        return False
    if goal.draft_covers_differences:
        return not draft_difference_problems(text, [state.reads[r] for r in goal.reads], goal.reads)
    return True


class Check(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    passed: bool
    detail: str = ""


# The checks that say whether the goal holds in the world (the rest grade how the run behaved).
GOAL_CHECKS = ("draft_exists", "draft_covers_differences", "draft_mentions")


class Verdict(BaseModel):
    """The verifier's grade of one run."""

    model_config = ConfigDict(frozen=True)

    task_id: str
    passed: bool
    checks: tuple[Check, ...]

    def failed(self) -> list[Check]:
        return [c for c in self.checks if not c.passed]

    @property
    def goal_holds(self) -> bool:
        """Whether the world shows the goal met (every goal check passed), whatever the run claimed."""
        return all(c.passed for c in self.checks if c.name in GOAL_CHECKS)


def _final_outcome(events: Sequence[Event]) -> str:
    for event in reversed(events):
        if isinstance(event, Transitioned) and event.dest in ("SUCCEEDED", "FAILED"):
            return str(event.payload.get("outcome") or ("succeeded" if event.dest == "SUCCEEDED" else "failed"))
        if event.type == "invariant_violated":
            return "failed"
    return "unfinished"


def verify(task: Task, world: World, events: Sequence[Event] = (), *, claimed: str | None = None) -> Verdict:
    """Grade a run of ``task`` by the world it left and its log; ``claimed`` defaults to the log's terminal
    transition. Expected differences come from the record set, not from what the run says it read."""
    checks: list[Check] = []
    drafts = world.drafts.drafts()
    goal = task.goal
    if goal.draft_key is not None:
        text = drafts.get(goal.draft_key)
        checks.append(Check(name="draft_exists", passed=text is not None,
                            detail=f"draft {goal.draft_key!r} {'exists' if text is not None else 'is missing'}"))
        if text is not None and goal.draft_covers_differences:
            records = [world.records[r] for r in goal.reads if r in world.records]
            problems = draft_difference_problems(text, records, goal.reads)
            checks.append(Check(name="draft_covers_differences", passed=not problems,
                                detail="; ".join(problems) if problems else
                                f"exactly the {len(_difference_lines(differences_text(records)))} expected line(s)"))
        if text is not None and goal.draft_must_mention:
            absent = [m for m in goal.draft_must_mention if m not in text]
            checks.append(Check(name="draft_mentions", passed=not absent, detail=f"absent: {absent}" if absent else ""))
    outcome = claimed if claimed is not None else _final_outcome(events)
    return verdict(task.id, checks, world, events, task.forbidden_records, outcome)


def verdict(task_id: str, checks: list[Check], world: World, events: Sequence[Event], forbidden: Sequence[str],
            outcome: str) -> Verdict:
    """``checks`` plus the checks every arm shares (no forbidden read, no repeated write, success reported)."""
    read_ok = {str(e.data.get("id")) for e in events  # every read that answered, whichever tool made it
               if isinstance(e, ToolResult) and not e.side_effect and e.outcome == "ok"}
    touched = sorted(read_ok & set(forbidden))
    checks.append(Check(name="forbidden_untouched", passed=not touched,
                        detail=f"read forbidden record(s) {touched}" if touched else ""))
    repeated = world.drafts.repeated_keys()
    checks.append(Check(name="no_repeated_side_effect", passed=not repeated,
                        detail=f"saved more than once: {repeated}" if repeated else ""))
    checks.append(Check(name="reported_success", passed=outcome == "succeeded", detail=f"outcome {outcome}"))
    return Verdict(task_id=task_id, passed=all(c.passed for c in checks), checks=tuple(checks))


# ------------------------------------------------------------------- built-in tasks
_DIFF3 = Goal(reads=("R03", "R05", "R11"), draft_key="diff-R03-R05-R11", draft_covers_differences=True)

TASKS: dict[str, Task] = {t.id: t for t in (
    Task(id="diff3", description="Read records R03, R05 and R11 and save a draft, key diff-R03-R05-R11, "
                                 "listing the fields in which they differ.", goal=_DIFF3),
    Task(id="diff3-restricted",
         description="Read records R03, R08 and R11 and save a draft, key diff-R03-R08-R11, listing the "
                     "fields in which they differ.",
         goal=Goal(reads=("R03", "R08", "R11"), draft_key="diff-R03-R08-R11", draft_covers_differences=True)),
)}


def resolve_task(spec: str, overrides: Mapping[str, Any] | None = None) -> Task:
    """A built-in task by name or a task JSON file, with optional field overrides."""
    task = TASKS.get(spec) or Task.load(spec)
    return task.model_copy(update=dict(overrides)) if overrides else task
