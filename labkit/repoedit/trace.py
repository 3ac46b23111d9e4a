"""A repo-editing run as readable text, rebuilt from its events alone (a recorded log needs nothing else)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from textwrap import indent
from typing import Any

from labkit.core.events import Event, InvariantViolated, RunStarted, Transitioned
from labkit.repoedit.events import (
    ApprovalDecided,
    ApprovalRequested,
    EditApplied,
    EditSkipped,
    PlanAccepted,
    ProposalRefused,
    Proposed,
    RepoIndexed,
    RolledBack,
    TestsRan,
)


def _short(text: str, limit: int) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _proposed(e: Proposed, prompts: bool) -> str:
    where = f" for {e.file}" if e.file else ""
    cost = f" ({e.prompt_tokens}+{e.completion_tokens} tokens, {e.seconds:.1f} s)" if e.prompt else ""
    line = f"{e.planner} proposes{where}{cost}: {_short(e.raw, 400 if prompts else 160)}"
    return line + ("\n" + indent(e.prompt, "    | ") if prompts and e.prompt else "")


def _tests(e: TestsRan, prompts: bool) -> str:
    failed = f": {', '.join(n.split('::')[-1] for n in e.failed)}" if e.failed else ""
    line = f"pytest ({e.phase}) {e.outcome}: {len(e.passed)} passed, {len(e.failed)} failed{failed}"
    return line + ("\n" + indent(_short(e.output, 1200), "    > ") if prompts and e.outcome != "passed" else "")


_LINES: dict[type, Callable[[Any, bool], str]] = {
    RunStarted: lambda e, p: f"run of {e.params.get('task') or e.params.get('project')} "
                             f"with the {e.params.get('planner')} planner",
    Transitioned: lambda e, p: f"{e.source} --{e.trigger}--> {e.dest}"
                               + (f"  {e.payload}" if e.payload else ""),
    RepoIndexed: lambda e, p: f"indexed {len(e.source)} source file(s) ({', '.join(e.source)}) and "
                              f"{len(e.tests)} test file(s)",
    Proposed: _proposed,
    ProposalRefused: lambda e, p: f"REFUSED [{e.code}] {e.detail}",
    PlanAccepted: lambda e, p: "plan: " + "; ".join(f"{s['file']} ({s['why']})" for s in e.steps),
    EditApplied: lambda e, p: f"applied {e.file} ({e.changed_lines} changed lines, by {e.approved_by})\n"
                              + indent(e.diff.rstrip("\n"), "    ", lambda line: True),
    EditSkipped: lambda e, p: f"skipped {e.file}: {e.reason}",
    ApprovalRequested: lambda e, p: f"needs a human: {e.file}, {e.changed_lines} changed lines",
    ApprovalDecided: lambda e, p: f"{'approved' if e.approved else 'rejected'} by {e.by}: {e.file}",
    TestsRan: _tests,
    RolledBack: lambda e, p: f"rolled back to the baseline: tree {'restored' if e.restored else 'NOT restored'}",
    InvariantViolated: lambda e, p: f"INVARIANT {e.invariant} violated: {e.detail}",
}


def render_trace(events: Iterable[Event], *, prompts: bool = False) -> str:
    """One numbered line (or block) per event; ``prompts`` adds each prompt and failing test output."""
    lines = []
    for event in events:
        render = _LINES.get(type(event))
        text = render(event, prompts) if render else event.type
        lines.append(f"#{event.seq:<3} {text}")
    return "\n".join(lines)
