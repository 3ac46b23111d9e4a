"""What the planner is told besides the requirement and the file, read from the run's log.

A view for the planner carries a few notes that come from earlier steps: the accepted plan's line
for a file, the baseline's failing tests, the output of the test run that asked for a targeted fix,
and why the previous proposal was refused. They are a fold over the events, not variables the run
keeps on the side, so a run resumed from its log asks the planner exactly what the run that stopped
would have asked.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from labkit.core.events import Event, Transitioned
from labkit.repoedit.events import (
    ApprovalDecided,
    ApprovalRequested,
    CheckpointRestored,
    EditApplied,
    EditSkipped,
    PlanAccepted,
    PlanExtended,
    ProposalRefused,
    TestsRan,
)
from labkit.repoedit.workspace import TestRun


@dataclass(frozen=True)
class Notes:
    """``steps``: plan line per file; ``baseline``: the first test run; ``failure``: the test output a
    targeted fix is shown (empty otherwise); ``refused``: why the last proposal was refused, until a
    proposal is accepted."""

    steps: dict[str, str] = field(default_factory=dict)
    baseline: TestRun = field(default_factory=lambda: TestRun("failed"))
    failure: str = ""
    refused: str = ""


def as_test_run(event: TestsRan) -> TestRun:
    """The test run an event records (what the plan prompt and the routing read)."""
    return TestRun(event.outcome, tuple(event.passed), tuple(event.failed), event.output,  # type: ignore[arg-type]
                   event.exit_code, dict(event.details))


def notes_from(events: Iterable[Event], failure_chars: int) -> Notes:
    """Fold the log into the notes; ``failure_chars`` is how much of the failing output a fix is shown."""
    steps: dict[str, str] = {}
    baseline = TestRun("failed")
    failure = refused = ""
    last_check = ""
    output_of: dict[str, str] = {}  # tree digest -> the output of its last test run
    request: ApprovalRequested | None = None
    for e in events:
        if isinstance(e, TestsRan):
            output_of[e.digest] = e.output
            if e.phase == "baseline":
                baseline = as_test_run(e)
            else:
                last_check = e.output
        elif isinstance(e, CheckpointRestored):
            last_check = output_of.get(e.digest_after, "")
        elif isinstance(e, Transitioned) and e.trigger in ("targeted_fix", "to_checkpoint"):
            failure = last_check[-failure_chars:]
        elif isinstance(e, ProposalRefused):
            refused = f"{e.code}: {e.detail}. {e.hint}"
        elif isinstance(e, ApprovalRequested):
            request = e
        elif isinstance(e, ApprovalDecided) and not e.approved and request is not None:
            refused = f"too_large: {request.changed_lines} changed lines were not approved; make a smaller edit"
        elif isinstance(e, PlanAccepted):
            steps = {s["file"]: s["why"] for s in e.steps}
            refused = ""
        elif isinstance(e, PlanExtended):
            steps = {**steps, e.file: e.why}
        elif isinstance(e, EditApplied | EditSkipped):
            refused = failure = ""  # a targeted fix edits one file, so its round ends with this edit
    return Notes(steps, baseline, failure, refused)
