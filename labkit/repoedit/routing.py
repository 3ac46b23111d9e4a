"""RUN_TESTS → next state: the one decision the machine makes from a test run.

Green means every test passed (the tests are the verifier, and the guards keep them unchanged),
never "fewer failures than before". A failure that points at a planned file, with fix rounds left,
goes back to EDIT_FILE for that one file with the failure output (a targeted fix). Anything else —
a hang, no tests, no file to blame, the fix budget spent — goes to ROLLBACK_OR_FIX, which restores
the tree the run started from.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from labkit.repoedit.index import RepoIndex

Trigger = Literal["green", "targeted_fix", "rollback"]
_TRACE_FILE = re.compile(r"^\s*(?:File \")?([\w./-]+\.py)(?:\", line |:)\d+", re.MULTILINE)


@dataclass(frozen=True)
class Route:
    """Where RUN_TESTS sends the run: the trigger to fire, and the file to fix for ``targeted_fix``."""

    trigger: Trigger
    file: str | None = None
    why: str = ""


def trace_files(output: str) -> list[str]:
    """The Python files a failing output's traceback frames name, in the order printed (deepest last)."""
    return [m.group(1) for m in _TRACE_FILE.finditer(output)]


def locate_failure(output: str, failed: Sequence[str], planned: Sequence[str], index: RepoIndex) -> str | None:
    """The planned file a failure points at, or None.

    The deepest planned file named in a traceback frame (where the error was raised). If the frames
    name source files of the project but none of the plan, the failure lies outside the plan and no
    targeted fix may touch it: None. If they name no source file at all (an assertion in a test
    blames the code it imports), a planned file imported by a failing test module.
    """
    named = trace_files(output)
    in_plan = [path for path in named if path in planned]
    if in_plan:
        return in_plan[-1]
    if any(path in index.source_files for path in named):
        return None
    for node in failed:
        entry = index.entry(node.split("::", 1)[0])
        for module in entry.imports if entry else ():
            path = index.module_file(module)
            if path in planned:
                return path
    return None


def route_after_tests(outcome: str, passed: int, failed: int, suspect: str | None, fixes_used: int,
                      fix_budget: int) -> Route:
    """Choose the trigger after a test run.

    Args:
        outcome: the run's outcome (``passed``, ``failed``, ``error``, ``timeout``, ``no_tests``).
        passed: how many tests passed.
        failed: how many tests failed or errored (a collection error may report none: check ``outcome``).
        suspect: the planned file the failure points at (:func:`locate_failure`), or None.
        fixes_used: targeted fix rounds already spent in this run.
        fix_budget: how many targeted fix rounds a run may spend.
    """
    if outcome == "passed" and failed == 0 and passed > 0:
        return Route("green", why="every test passed")
    if outcome in ("timeout", "no_tests"):
        return Route("rollback", why=f"the test run ended as {outcome}: nothing to fix in a file")
    if suspect is None:
        return Route("rollback", why="no planned file to blame for the failure")
    if fixes_used >= fix_budget:
        return Route("rollback", why=f"{fixes_used} targeted fix round(s) spent, the budget is {fix_budget}")
    return Route("targeted_fix", suspect, why=f"the failure points at {suspect}")
