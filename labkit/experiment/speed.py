"""``labkit bench experiment``: the comparison with the inference optimisations off, then on, back to back.

One process, one loaded model, the same configuration as ``make experiment`` (by default): first with
both optimisations off (grammar masking first, every prompt in one batch after a reset: the kit
before them), then with the defaults (lazy grammar where it keeps the tokens, the declared prefixes
evaluated as [prefix][rest] with their KV state kept). It checks that every run has the same
counts, token totals and model outputs in both, and reports the wall times and model seconds.

Timings on a shared machine are noisy: the two variants run back to back so that both see the same
load, and ``repeats`` > 1 alternates them (off, on, off, on, ...) to show the spread.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from labkit.errors import LabkitError
from labkit.experiment.arms import RunRecord

# The compared fields of a run: everything but its timings and trace file name.
SAME_FIELDS = ("passed", "failed_checks", "failure_source", "termination", "reason", "llm_calls", "prompt_tokens",
               "completion_tokens", "max_prompt_tokens", "retries", "guard_rejections", "schema_invalid",
               "forced_choices", "planner_calls", "tool_calls", "outputs")


def variants() -> dict[str, dict[str, Any]]:
    """The two configurations compared: the backend options each sets."""
    from labkit.experiment.prompts import REUSED_PREFIXES

    return {"off": {"grammar_mode": "mask", "prefixes": ()},
            "on": {"grammar_mode": "auto", "prefixes": REUSED_PREFIXES}}


def differences(off: Sequence[RunRecord], on: Sequence[RunRecord]) -> list[str]:
    """Every run whose compared fields differ between the two variants (empty: identical)."""
    a = {(r.arm, r.task, r.seed): r for r in off}
    b = {(r.arm, r.task, r.seed): r for r in on}
    found = [f"run {k} only in one variant" for k in sorted(set(a) ^ set(b))]
    for key in sorted(set(a) & set(b)):
        changed = [f for f in SAME_FIELDS if getattr(a[key], f) != getattr(b[key], f)]
        if changed:
            found.append(f"run {key}: {', '.join(changed)} differ")
    return found


def per_arm(records: Sequence[RunRecord]) -> dict[str, dict[str, float | int]]:
    """Counts, token totals and seconds per arm."""
    rows: dict[str, dict[str, float | int]] = {}
    for r in records:
        row = rows.setdefault(r.arm, {"runs": 0, "passed": 0, "llm_calls": 0, "prompt_tokens": 0,
                                      "completion_tokens": 0, "model_s": 0.0, "wall_s": 0.0})
        row["runs"] += 1
        row["passed"] += int(r.passed)
        for f in ("llm_calls", "prompt_tokens", "completion_tokens", "model_s", "wall_s"):
            row[f] += getattr(r, f)
    for row in rows.values():
        row["model_s_per_call"] = row["model_s"] / row["llm_calls"] if row["llm_calls"] else 0.0
    return rows


def bench_experiment(*, tasks_path: str | None = None, seeds: int = 5, temperature: float = 0.5,
                     arms: Sequence[str] | None = None, task_ids: Sequence[str] | None = None, repeats: int = 1,
                     threads: int | None = None, workdir: Path | None = None, progress: bool = True,
                     clock: Callable[[], float] = time.perf_counter,
                     now: Callable[[], datetime] = lambda: datetime.now(timezone.utc)) -> dict[str, Any]:
    """Run the experiment off/on ``repeats`` times, alternating; return timings, counts and the comparison."""
    from labkit.experiment.planners import Decoding
    from labkit.experiment.runner import BackendSource, ExperimentConfig, run_experiment, select_tasks
    from labkit.experiment.tasks import load_tasks
    from labkit.llm.llamacpp import LlamaCppBackend
    from labkit.provenance import git_commit, machine

    if repeats < 1:
        raise LabkitError(f"--repeats must be at least 1, got {repeats}", "use 1 (one off and one on run) or more.")
    tasks = select_tasks(load_tasks(tasks_path), task_ids)
    config = ExperimentConfig(seeds=list(range(seeds)), task_ids=[t.id for t in tasks],
                              decoding=Decoding(temperature=temperature))
    if arms:
        config.arms = list(arms)
    config.check()
    default = ExperimentConfig(task_ids=[t.id for t in select_tasks(load_tasks(None), None)])
    is_default = (tasks_path is None and (config.seeds, config.arms, config.task_ids, config.decoding)
                  == (default.seeds, default.arms, default.task_ids, default.decoding))
    started = now()
    commit, host = git_commit(), machine()  # at the start: the code that ran, the load it met
    backend = LlamaCppBackend(n_threads=threads)
    chosen = variants()
    base = workdir or Path(tempfile.mkdtemp(prefix="labkit-bench-experiment-"))
    walls: dict[str, list[float]] = {name: [] for name in chosen}
    records: dict[str, list[RunRecord]] = {}
    problems: list[str] = []
    for repeat in range(repeats):
        for name, options in chosen.items():
            backend.grammar_mode, backend.prefixes = options["grammar_mode"], tuple(options["prefixes"])
            if progress:
                print(f"labkit bench experiment: optimisations {name}, repeat {repeat + 1}/{repeats}",
                      file=sys.stderr, flush=True)
            out = base / f"{name}-{repeat}"
            t0 = clock()
            done = run_experiment(config, tasks, BackendSource(live=backend, record_to=out), out, progress=progress)
            walls[name].append(clock() - t0)
            if name in records:
                problems += [f"{name} repeat {repeat + 1}: {d}" for d in differences(records[name], done)]
            records.setdefault(name, done)
    problems += differences(records["off"], records["on"])
    ratios = [off / on for off, on in zip(walls["off"], walls["on"], strict=True)]
    arms_off, arms_on = per_arm(records["off"]), per_arm(records["on"])
    return {
        "benchmark": "labkit bench experiment",
        "started_utc": started.isoformat(timespec="seconds"), "finished_utc": now().isoformat(timespec="seconds"),
        "labkit_commit": commit, "machine": host, "backend": backend.describe(),
        "model_sha256": backend.model_sha256, "llama_cpp_python": backend.llama_cpp_version,
        "config": config.to_dict(), "default_configuration": is_default, "repeats": repeats, "variants": chosen,
        "wall_s": walls, "wall_ratio_off_to_on_runs": ratios, "wall_ratio_off_to_on": statistics.median(ratios),
        "model_s": {"off": sum(r.model_s for r in records["off"]), "on": sum(r.model_s for r in records["on"])},
        "arms": {"off": arms_off, "on": arms_on},
        "model_s_per_call_ratio_off_to_on": {
            arm: arms_off[arm]["model_s_per_call"] / arms_on[arm]["model_s_per_call"]
            for arm in arms_off if arms_on.get(arm, {}).get("model_s_per_call")},
        "identical": not problems, "differences": problems[:50], "n_differences": len(problems),
        "prefix_reuse": {"reused": backend.prefix_stats.reused, "evaluated": backend.prefix_stats.evaluated},
    }


def render_experiment_speed(r: dict[str, Any]) -> str:
    """Wall times, the off/on ratio and the identity check as a short table."""
    c = r["config"]
    lines = [f"labkit bench experiment — {len(c['task_ids'])} tasks x {len(c['seeds'])} seeds x {len(c['arms'])} arms, "
             f"temperature {c['decoding']['temperature']}, {r['repeats']} repeat(s), commit {r['labkit_commit']}",
             "  the default `make experiment` configuration" if r["default_configuration"] else
             "  a SUBSET of the default `make experiment` configuration",
             f"  wall s, optimisations off: {', '.join(f'{w:.0f}' for w in r['wall_s']['off'])}; "
             f"on: {', '.join(f'{w:.0f}' for w in r['wall_s']['on'])}",
             f"  off / on: {r['wall_ratio_off_to_on']:.2f}x (runs: "
             f"{', '.join(f'{x:.2f}' for x in r['wall_ratio_off_to_on_runs'])})",
             f"  model seconds off {r['model_s']['off']:.0f}, on {r['model_s']['on']:.0f}", "",
             f"  {'arm':<16} {'calls':>6} {'s/call off':>10} {'s/call on':>10} {'ratio':>6}"]
    for arm, off in r["arms"]["off"].items():
        on = r["arms"]["on"][arm]
        ratio = r["model_s_per_call_ratio_off_to_on"].get(arm)
        lines.append(f"  {arm:<16} {off['llm_calls']:>6} {off['model_s_per_call']:>10.3f} "
                     f"{on['model_s_per_call']:>10.3f} {(f'{ratio:.2f}' if ratio else '-'):>6}")
    lines.append("  counts, token totals and outputs: " + (
        "identical" if r["identical"] else f"DIFFER in {r['n_differences']} place(s): {r['differences'][:3]}"))
    return "\n".join(lines)
