"""The code comparison's earlier arm names, as data: read only when a committed recording is loaded.

A recording keeps the names it was made under (its ``compare.json``, its rows, its cassettes and logs); today's
code names arms by what they hold. :data:`RENAMED` maps each old name to today's arm (same planner, features,
edit format and prompts, so the recording replays), with the design round that introduced it and its commit;
where today's arm has features the recording predates, the features it ran with, so that it replays as it ran.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class OldName:
    """An arm name a committed recording holds: today's arm, the round that named it, and that commit."""

    old: str
    arm: str
    round: str
    commit: str
    features: frozenset[str] | None = None  # the features the arm ran with, where today's arm has more


BEFORE_REPOSITORIES = frozenset({"code_plan", "closed_plan", "plan_references", "plan_example", "first_failure",
                                 "definition_edit", "tolerant_match", "blamed_skip", "follow_traceback",
                                 "repair_feedback", "sampled_repair"})
"""The features an arm recorded as ``machine_plus`` (and its ablations, oracle and best of k) ran with: today's
machine without traceback_plan, definition_view, no_repeat, checkpoint, relevant_tests, short_docstrings and
unchanged_moves_on."""

RENAMED: tuple[OldName, ...] = (
    OldName("machine_model", "machine_bare", "the first code comparison (the machine with no feature)", "65ec36e"),
    OldName("machine_oracle", "bare_oracle", "the first code comparison (its ceiling)", "65ec36e"),
    OldName("machine_plus", "machine", "the machine's features, each one declaration", "9006a3f",
            BEFORE_REPOSITORIES),
    OldName("machine_plus_oracle", "oracle", "the machine's features, each one declaration", "9006a3f",
            BEFORE_REPOSITORIES),
    *(OldName(f"machine_plus_no_{name}", f"machine_without_{name}", "the features' ablation", "9006a3f",
              BEFORE_REPOSITORIES - {name}) for name in sorted(BEFORE_REPOSITORIES)),
    OldName("machine_plus_best_of_3", "machine_best_of_3", "best of k, the visible tests picking", "3ae5b4f",
            BEFORE_REPOSITORIES),
)
TODAY = {entry.old: entry.arm for entry in RENAMED}


def features_then(old: str) -> frozenset[str] | None:
    """The features an arm recorded as ``old`` ran with, if they are not today's arm's (None: they are)."""
    return next((entry.features for entry in RENAMED if entry.old == old), None)


def today(name: str) -> str:
    """The arm a recorded name is today (a name never renamed is itself)."""
    return TODAY.get(name, name)


def recorded_names(arm: str) -> tuple[str, ...]:
    """Every name ``arm`` may be recorded under: today's first, then its old ones."""
    return (arm, *(entry.old for entry in RENAMED if entry.arm == arm))


def recorded_path(folder: Path, kind: str, arm: str, leaf: str = "") -> Path:
    """``folder/kind/<name>[/leaf]`` for the name ``arm`` was recorded under there (today's if none exists).

    ``kind`` is ``cassettes`` (``<name>.jsonl``), ``logs`` or ``transcripts`` (a folder per arm)."""
    for name in recorded_names(arm):
        path = folder / kind / (f"{name}.jsonl" if kind == "cassettes" else name)
        path = path / leaf if leaf else path
        if path.exists():
            return path
    path = folder / kind / (f"{arm}.jsonl" if kind == "cassettes" else arm)
    return path / leaf if leaf else path
