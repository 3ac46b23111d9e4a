"""The kit's speed goals (:data:`SPEED_GOALS`) read against ``data/bench/``; a goal whose record is missing
is not recorded, never met."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from labkit.core.errors import LabkitError

Record = dict[str, Any]


@dataclass(frozen=True)
class SpeedGoal:
    """One goal: ``value(record) >= target`` (or ``<=`` when lower is better), explained by ``why(record)``."""

    name: str
    record: str  # path under data/bench/
    value: Callable[[Record], float]
    target: float
    unit: str
    why: Callable[[Record], str]
    lower_is_better: bool = False


@dataclass(frozen=True)
class GoalResult:
    """A goal judged against its record: ``value`` is None when the record does not exist."""

    goal: SpeedGoal
    value: float | None
    why: str

    @property
    def met(self) -> bool | None:
        if self.value is None:
            return None
        if self.goal.lower_is_better:
            return self.value <= self.goal.target
        return self.value >= self.goal.target

    @property
    def margin(self) -> float | None:
        """How far the value is from the target, as a fraction of the target (positive = better than it)."""
        if self.value is None:
            return None
        gap = (self.goal.target - self.value) if self.goal.lower_is_better else (self.value - self.goal.target)
        return gap / self.goal.target


def _lazy_why(r: Record) -> str:
    return (f"masking the whole vocabulary first gave {r['grammar_to_free_ratio']:.2f}; the lazy path checks only "
            f"the chosen token and masks only when it is rejected (same tokens: {r['lazy_grammar_same_tokens']})")


# The arm whose calls both optimisations reach: its prompts start with the declared worked episodes
# (prefix reuse) and its answers are grammar-constrained (lazy grammar).
PER_CALL_ARM = "prompt-grammar"


def _per_call_why(r: Record) -> str:
    t = r["timing"][PER_CALL_ARM]
    return (f"{t['mask']['mean_s']:.2f} s per call today (one batch, masking first), "
            f"{t['split-fresh']['mean_s']:.2f} s with the lazy grammar and the prefix evaluated afresh, "
            f"{t['split-reuse']['mean_s']:.2f} s with its KV state kept: what remains is each prompt's own text "
            f"and the generated tokens; {r['prompts'][PER_CALL_ARM]} prompts of {r['source']}, one pass per path "
            f"on a shared machine (load {r['machine']['load_average_at_start'][0]:.1f} at the start on "
            f"{r['machine']['cpu_count']} CPUs: passes minutes apart met different loads)")


def _experiment_why(r: Record) -> str:
    off, on = r["arms"]["off"], r["arms"]["on"]
    by_arm = ", ".join(f"{arm} {off[arm]['wall_s']:.0f}→{on[arm]['wall_s']:.0f} s" for arm in off
                       if off[arm]["llm_calls"] > 0)
    scope = ("`make experiment`'s default configuration" if r["default_configuration"]
             else "NOT the default configuration")
    return (f"wall time by model arm, off→on: {by_arm}; runs without a model cost the same either way; "
            f"{r['backend']['n_threads']} thread(s), {scope}; counts and token totals identical: {r['identical']}")


def _gpu_why(r: Record) -> str:
    return (f"{1000 / r['gen_tokens_per_s']:.1f} ms per token for one sequence of the {r['model_name']} model: too "
            f"little work per token to fill the GPU (data/bench/gpu/README.md; llama.cpp's own loop is no faster)")


def _core_why(r: Record) -> str:
    t = r["transition"]
    return (f"labkit step {t['labkit_us']:.1f} µs against a bare transitions trigger {t['bare_us']:.1f} µs "
            f"({t['ratio_min']:.2f}–{t['ratio_max']:.2f} over {len(t['rounds'])} rounds, "
            f"{r['machine']['cpu_count']} CPUs, a machine shared with other jobs); where the rest goes: the profile "
            "in labkit/core/bench.py's docstring (event validation, hashing, the invariants, all kept)")


SPEED_GOALS: tuple[SpeedGoal, ...] = (
    SpeedGoal("grammar / free generation speed, embedded model", "inference-lazy-grammar.json",
              lambda r: r["lazy_grammar_to_free_ratio"], 0.8, "×", _lazy_why),
    SpeedGoal("prompt + grammar arm, mean time per call, today ÷ optimised", "equality.json",
              lambda r: r["mean_call_speedup_mask_to_split_reuse"][PER_CALL_ARM], 3.0, "×", _per_call_why),
    SpeedGoal("whole experiment, wall time off ÷ on", "experiment-speed-v2.json",
              lambda r: r["wall_ratio_off_to_on"], 2.0, "×", _experiment_why),
    SpeedGoal("embedded model on a data-centre GPU, free generation", "gpu/gemma3-270m-gpu.json",
              lambda r: r["gen_tokens_per_s"], 1000.0, "tokens/s", _gpu_why),
    SpeedGoal("labkit step ÷ bare transitions trigger", "core.json",
              lambda r: r["transition"]["ratio"], 2.0, "×", _core_why, lower_is_better=True),
)


def speed_goals(bench_dir: str | Path, goals: tuple[SpeedGoal, ...] = SPEED_GOALS) -> list[GoalResult]:
    """Judge each goal against its record in ``bench_dir``; a missing record gives ``value=None``."""
    bench_dir = Path(bench_dir)
    if not bench_dir.is_dir():
        raise LabkitError(f"{bench_dir} is not a folder of benchmark records",
                          "pass the kit's data/bench folder (from notebooks/: ../data/bench)")
    results = []
    for goal in goals:
        path = bench_dir / goal.record
        if not path.exists():
            results.append(GoalResult(goal, None, f"not recorded: {goal.record} does not exist"))
            continue
        record = json.loads(path.read_text(encoding="utf-8"))
        try:
            value, why = float(goal.value(record)), goal.why(record)
        except (KeyError, TypeError) as err:
            raise LabkitError(f"{path} lacks a field the goal {goal.name!r} reads: {err}",
                              "re-record it with the current labkit bench command") from err
        results.append(GoalResult(goal, value, why))
    return results


def render_speed_goals(results: list[GoalResult]) -> str:
    """One block per goal: target, recorded value, met or missed and by how much, and why."""
    blocks = []
    for r in results:
        sign = "≤" if r.goal.lower_is_better else "≥"
        head = f"{r.goal.name}: goal {sign} {r.goal.target:g} {r.goal.unit}"
        if r.value is None:
            verdict = "not recorded"
        else:
            verdict = (f"recorded {r.value:,.2f} {r.goal.unit} ({r.goal.record}): "
                       f"{'met' if r.met else 'missed'} by {abs(r.margin or 0.0):.0%}")
        blocks.append(f"{head}\n  {verdict}\n  why: {r.why}")
    return "\n".join(blocks)
