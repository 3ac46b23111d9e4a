"""Best of k: an arm's greedy run, then up to k - 1 sampled runs, each in its own copy; the first green one is kept.

Greedy decoding gives one answer per prompt; sampling gives others, and the project's *visible* tests (the ones
every arm may run) pick among them. The hidden grader still judges only the kept tree. Try 0 is the arm as it
runs alone (so its recorded cassette answers it); try ``i`` samples every call at :data:`TEMPERATURE` with seed
``i``, with the run's whole call budget. When no try is green the greedy tree is kept. A machine arm's try ``i``
writes its event log beside the run's as ``<task>.try<i>.jsonl``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

from labkit.repoedit.arm_io import ArmEnd, ArmInputs

TEMPERATURE = 0.7  # as the machine's sampled_repair: varied answers that still mostly keep the format


def try_log_path(log_path: Path | None, attempt: int) -> Path | None:
    """Where try ``attempt``'s event log goes (the greedy try keeps the run's own path)."""
    if log_path is None or attempt == 0:
        return log_path
    return log_path.with_name(f"{log_path.stem}.try{attempt}{log_path.suffix}")


def _remove(ends: list[ArmEnd]) -> None:
    """Delete the copies of tries that are not kept."""
    for end in ends:
        end.workspace.keep = False
        end.workspace.close()


def best_of(inner: Callable[[ArmInputs], ArmEnd], k: int) -> Callable[[ArmInputs], ArmEnd]:
    """The arm ``inner`` tried up to ``k`` times (see the module docstring); ``inner`` must honour
    ``inputs.temperature`` and ``inputs.seed`` on every model call."""
    if k < 2:
        raise ValueError(f"best of {k} is the arm itself: give k >= 2")

    def run(inputs: ArmInputs) -> ArmEnd:
        budget = inputs.backend.budget if inputs.backend is not None else 0
        ends: list[ArmEnd] = []
        test_runs, transcripts, kept = 0, [], None
        try:
            for attempt in range(k):
                if inputs.backend is not None:  # each try gets the whole budget; the meter counts all of them
                    inputs.backend.budget = inputs.backend.calls + budget
                tried = inputs if attempt == 0 else dataclasses.replace(
                    inputs, temperature=TEMPERATURE, seed=attempt, log_path=try_log_path(inputs.log_path, attempt))
                if attempt and tried.log_path is not None:
                    tried.log_path.unlink(missing_ok=True)  # as the runner does for the run's own log: start anew
                end = inner(tried)
                ends.append(end)
                visible = end.workspace.run_tests(timeout=inputs.limits.test_timeout)
                test_runs += end.test_runs + 1
                how = "greedy" if attempt == 0 else f"temperature {TEMPERATURE}, seed {attempt}"
                transcripts.append(f"=== try {attempt + 1} of {k} ({how}): {end.status}; visible tests "
                                   f"{visible.outcome}\n{end.transcript}".rstrip())
                if visible.green:
                    kept = attempt
                    break
        except BaseException:
            _remove(ends)  # the runner sees no copy: remove every one made so far
            raise
        chosen = ends[kept if kept is not None else 0]
        _remove([end for end in ends if end is not chosen])
        status = (f"try {kept + 1} of {k} passed the visible tests: {chosen.status}" if kept is not None
                  else f"no try of {len(ends)} passed the visible tests; the greedy try is kept: {chosen.status}")
        return ArmEnd(status, chosen.workspace, test_runs=test_runs, edits=chosen.edits, refused=chosen.refused,
                      transcript="\n".join(transcripts))

    run.__doc__ = f"best of {k}: {inner.__doc__ or ''}".strip()
    return run
