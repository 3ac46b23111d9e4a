"""What one arm of the code comparison is given, and what it hands back to the runner.

Every arm gets the same inputs (the task, the project folder, the verifier's baseline, a budgeted
backend or none, the machine's limits) and returns how its own run ended plus the temporary copy it
left, still on disk, so that the one verifier (:mod:`~labkit.repoedit.verify`) judges every arm's
final tree in the same way. The runner removes the copy after the verdict.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from labkit.repoedit.budget import BudgetedBackend
from labkit.repoedit.machine import Limits
from labkit.repoedit.tasks import RepoTask
from labkit.repoedit.verify import Baseline
from labkit.repoedit.workspace import Workspace


@dataclass(frozen=True)
class ArmInputs:
    """One (arm, task) run's inputs.

    ``log_path``: where the machine arms write their hash-chained event log (None: in memory).
    ``max_tokens``: the completion cap per call of the arms without the machine (the machine's planner
    keeps its own per-state caps). ``temperature`` and ``seed``: how every model call of the run samples
    (greedy by default; a best-of-k try after the first samples, :mod:`~labkit.repoedit.best_of`).
    """

    task: RepoTask
    source: Path
    baseline: Baseline
    backend: BudgetedBackend | None
    limits: Limits = field(default_factory=Limits)
    log_path: Path | None = None
    max_tokens: int = 400
    clock: Callable[[], float] = time.time
    python: str = sys.executable
    temperature: float = 0.0
    seed: int = 0

    def failing_lines(self, limit: int = 200) -> list[str]:
        """The shipped project's failing tests, ``node: message`` (the machine's plan prompt shows the same)."""
        return [f"{node}: {self.baseline.details.get(node, '')}".strip()[:limit] for node in self.baseline.failed]


@dataclass
class ArmEnd:
    """How an arm's own run ended (before the verifier looks at the tree).

    ``status``: the arm's own last word (the machine's DONE/FAILED and reason, the loop's end);
    ``test_runs``: pytest runs the arm made itself (the verifier's are not counted);
    ``edits``: edits written to the copy; ``refused``: answers or edits that could not be used.
    """

    status: str
    workspace: Workspace
    test_runs: int = 0
    edits: int = 0
    refused: int = 0
    transcript: str = ""


@contextlib.contextmanager
def discard_on_error(workspace: Workspace) -> Iterator[Workspace]:
    """Keep the copy for the verifier when the arm returns; remove it when the arm raises."""
    try:
        yield workspace
    except BaseException:
        workspace.keep = False
        workspace.close()
        raise


def in_kept_copy(body: Callable[[ArmInputs, Workspace], ArmEnd], needs: str) -> Callable[[ArmInputs], ArmEnd]:
    """An arm without the machine: ``body`` runs with the model in a fresh copy that is kept for the verifier.

    ``needs``: the arm's name for the message when it is given no model. If ``body`` raises, the copy
    is removed (:func:`discard_on_error`).
    """

    def run(inputs: ArmInputs) -> ArmEnd:
        assert inputs.backend is not None, f"{needs} needs a model"
        ws = Workspace(inputs.source, python=inputs.python, keep=True)
        with discard_on_error(ws):
            return body(inputs, ws)

    run.__doc__ = body.__doc__
    return run
