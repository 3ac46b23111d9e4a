"""The code machine's targets (issue 23's "done when"), checked on recorded comparisons.

The benchmark's fix tasks (HumanEval, test split) and the kit's own ten test projects, each judged for one machine
arm against one prompt-only arm, paired by task. Read from the recordings by :func:`summarize`, so notebook 09 and
docs/results.md judge the same way the issue asks.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from labkit.compare.targets import Target
from labkit.core.errors import LabkitError
from labkit.repoedit.compare_report import summarize

FIXED_AT_LEAST = 0.85  # of the benchmark's fix tasks
POINTS_ABOVE = 0.15  # above the prompt-only arm, on the same tasks
P_BELOW = 0.01  # paired exact sign test, by task
PROJECTS_AT_LEAST = 9  # of the kit's ten test projects


def _arms(folders: Path | Sequence[Path], machine: str, baseline: str) -> tuple[dict, dict, dict]:
    summary = summarize(folders)
    arms = {r["arm"]: r for r in summary["arms"]}
    if missing := [a for a in (machine, baseline) if a not in arms]:
        raise LabkitError(f"the recording holds no runs of {', '.join(missing)}",
                          f"record them first, or choose among: {', '.join(arms)}.")
    paired = next((p for p in summary["paired"] if (p["measure"], p["a"], p["b"]) == ("fixed", machine, baseline)),
                  None)
    if paired is None:
        raise LabkitError(f"the report pairs no {machine} with {baseline}",
                          "choose a pair of labkit.repoedit.compare_report.COMPARISONS.")
    return arms[machine], arms[baseline], paired


def benchmark_targets(folders: Path | Sequence[Path], machine: str = "machine",
                      baseline: str = "prompt_whole") -> list[Target]:
    """The fix tasks' targets: the share fixed, the points above ``baseline``, the paired test, and no tree left
    broken or test file changed by ``machine``."""
    mine, theirs, paired = _arms(folders, machine, baseline)
    rate, base = mine["tasks_solved"] / mine["tasks"], theirs["tasks_solved"] / theirs["tasks"]
    points = round(100 * (rate - base))
    return [Target(f"{machine} fixes at least {FIXED_AT_LEAST:.0%} ({mine['tasks_solved']}/{mine['tasks']}, "
                   f"{rate:.0%})", rate >= FIXED_AT_LEAST),
            Target(f"at least {POINTS_ABOVE * 100:.0f} points above {baseline} ({theirs['tasks_solved']}/"
                   f"{theirs['tasks']}, {base:.0%}: {points:+d} points)", rate - base >= POINTS_ABOVE),
            Target(f"paired exact test p < {P_BELOW} ({paired['a_better']} only {machine}, {paired['b_better']} "
                   f"only {baseline}: p = {paired['p_value']:.3g})", paired["p_value"] < P_BELOW),
            Target(f"no tree left broken and no test file changed ({mine['broken_trees']}, {mine['tests_changed']})",
                   mine["broken_trees"] == 0 and mine["tests_changed"] == 0)]


def project_targets(folders: Path | Sequence[Path], machine: str = "machine",
                    baseline: str = "prompt_whole") -> list[Target]:
    """The kit's projects' targets: ``machine`` fixes at least nine of ten, and at least as many as ``baseline``."""
    mine, theirs, _ = _arms(folders, machine, baseline)
    return [Target(f"{machine} fixes at least {PROJECTS_AT_LEAST} of {mine['tasks']} ({mine['tasks_solved']}/"
                   f"{mine['tasks']})", mine["tasks_solved"] >= PROJECTS_AT_LEAST),
            Target(f"at least as many as {baseline} ({mine['tasks_solved']} against {theirs['tasks_solved']})",
                   mine["tasks_solved"] >= theirs["tasks_solved"])]
