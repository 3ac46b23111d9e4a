"""Success k/n, pass^k, and the per-arm summary of an experiment.

pass^k and the intervals live in :mod:`labkit.stats` (one place for every report); this module
counts runs into the rows they need.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from labkit.stats import pass_hat_k

SUM_FIELDS = ("llm_calls", "prompt_tokens", "completion_tokens", "retries", "http_retries", "guard_rejections",
              "schema_invalid", "forced_choices", "planner_calls", "tool_calls")


def summarize(records: Iterable[Any], arms: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """One row per arm: successes, pass^k for k = 1 … n, terminations, failure sources and totals.

    ``records`` are :class:`~labkit.experiment.arms.RunRecord` objects (or anything with the same
    attributes). n is the smallest number of runs any task of the arm has (runs of an interrupted
    experiment can be uneven).
    """
    by_arm: dict[str, list[Any]] = {}
    for r in records:
        by_arm.setdefault(r.arm, []).append(r)
    order = [a for a in (arms or sorted(by_arm)) if a in by_arm]
    rows = []
    for arm in order:
        runs = by_arm[arm]
        per_task: dict[str, tuple[int, int]] = {}
        for r in runs:
            c, n = per_task.get(r.task, (0, 0))
            per_task[r.task] = (c + int(r.passed), n + 1)
        n_min = min(n for _, n in per_task.values())
        successes = sum(int(r.passed) for r in runs)
        row: dict[str, Any] = {
            "arm": arm, "tasks": len(per_task), "runs": len(runs), "successes": successes,
            "success": f"{successes}/{len(runs)}", "seeds_per_task": n_min,
            "tasks_all_seeds_passed": sum(1 for c, n in per_task.values() if c == n),
            "pass_k": [round(pass_hat_k(per_task, k), 4) for k in range(1, n_min + 1)],
            "terminations": dict(sorted(Counter(r.termination for r in runs).items())),
            "failure_sources": dict(sorted(Counter(r.failure_source for r in runs if not r.passed).items())),
            "wall_s": round(sum(r.wall_s for r in runs), 1),
            "model_s": round(sum(r.model_s for r in runs), 1),
        }
        for name in SUM_FIELDS:
            row[name] = sum(int(getattr(r, name)) for r in runs)
        row["mean_prompt_tokens_per_call"] = round(row["prompt_tokens"] / row["llm_calls"], 1) \
            if row["llm_calls"] else 0.0
        row["max_prompt_tokens"] = max(int(r.max_prompt_tokens) for r in runs)
        rows.append(row)
    return rows


# what must be equal between a recorded and a replayed experiment (wall-clock times are not)
COUNT_FIELDS = ("arm", "tasks", "runs", "successes", "success", "seeds_per_task", "tasks_all_seeds_passed",
                "pass_k", "terminations", "failure_sources", *SUM_FIELDS, "mean_prompt_tokens_per_call",
                "max_prompt_tokens")


def counts_only(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The summary rows without timings (the part a replay must reproduce exactly)."""
    return [{k: row[k] for k in COUNT_FIELDS if k in row} for row in rows]
