"""``labkit bench experiment``: the comparison with the inference optimisations off, then on (lazy grammar,
kept prefix state), in one process; every run's counts, tokens and grade must be equal."""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from labkit.core.errors import LabkitError
from labkit.reading.arms import ReadingRun

VARIANTS: dict[str, dict[str, Any]] = {"off": {"grammar_mode": "mask", "prefix_reuse": False},
                                       "on": {"grammar_mode": "auto", "prefix_reuse": True}}


def differences(off: Sequence[tuple[str, ReadingRun]], on: Sequence[tuple[str, ReadingRun]]) -> list[str]:
    """Every run whose record (all but its wall time) differs between the two variants (empty: identical)."""
    def keyed(runs: Sequence[tuple[str, ReadingRun]]) -> dict[tuple[Any, ...], dict[str, Any]]:
        return {(s, r.arm, r.task, r.seed): {k: v for k, v in r.to_dict().items() if k != "wall_s"} for s, r in runs}

    a, b = keyed(off), keyed(on)
    found = [f"run {k} only in one variant" for k in sorted(set(a) ^ set(b))]
    for key in sorted(set(a) & set(b)):
        changed = [f for f in a[key] if a[key][f] != b[key][f]]
        if changed:
            found.append(f"run {key}: {', '.join(changed)} differ")
    return found


def per_arm(runs: Sequence[tuple[str, ReadingRun]]) -> dict[str, dict[str, float | int]]:
    """Runs, passes, calls, token totals and wall seconds per arm."""
    rows: dict[str, dict[str, float | int]] = {}
    for _, r in runs:
        row = rows.setdefault(r.arm, {"runs": 0, "passed": 0, "llm_calls": 0, "prompt_tokens": 0,
                                      "completion_tokens": 0, "wall_s": 0.0})
        row["runs"] += 1
        row["passed"] += int(r.passed)
        for f in ("llm_calls", "prompt_tokens", "completion_tokens", "wall_s"):
            row[f] += getattr(r, f)
    return rows


def bench_reading(config: Any, *, model: str | None = None, threads: int | None = None, repeats: int = 1,
                        default_configuration: bool = False, workdir: Path | None = None,
                        say: Callable[[str], None] | None = None, clock: Callable[[], float] = time.perf_counter,
                        now: Callable[[], datetime] = lambda: datetime.now(timezone.utc)) -> dict[str, Any]:
    """Run ``config`` off/on ``repeats`` times, alternating, on one loaded model; timings and the identity check."""
    from labkit.core.provenance import git_commit, machine
    from labkit.llm.models import model_backend
    from labkit.reading.arms import declared_prefixes
    from labkit.reading.runner import N_CTX, Backends, run_reading

    if repeats < 1:
        raise LabkitError(f"--repeats must be at least 1, got {repeats}", "use 1 (one off and one on run) or more.")
    config.check()
    started = now()
    commit, host = git_commit(), machine()  # at the start: the code that ran, the load it met
    prefixes = declared_prefixes(config.arms, config.seeds, config.task_sets()["dev"].example_tasks())
    backend = model_backend(model, n_ctx=N_CTX, threads=threads, prefixes=prefixes)
    base = workdir or Path(tempfile.mkdtemp(prefix="labkit-bench-experiment-"))
    walls: dict[str, list[float]] = {name: [] for name in VARIANTS}
    runs: dict[str, list[tuple[str, ReadingRun]]] = {}
    problems: list[str] = []
    reuse: dict[str, int] = {}
    for repeat in range(repeats):
        for name, options in VARIANTS.items():
            backend.grammar_mode, backend.prefix_reuse = options["grammar_mode"], options["prefix_reuse"]
            backend.forget_kept_prefix()  # each variant starts from an empty cache
            before = (backend.prefix_stats.reused, backend.prefix_stats.evaluated)
            if say is not None:
                say(f"labkit bench experiment: optimisations {name}, repeat {repeat + 1}/{repeats}")
            out = base / f"{name}-{repeat}"
            t0 = clock()
            done = run_reading(config, Backends(live=backend), out)
            walls[name].append(clock() - t0)
            if name == "on":
                reuse = {"reused": backend.prefix_stats.reused - before[0],
                         "evaluated": backend.prefix_stats.evaluated - before[1]}
            if name in runs:
                problems += [f"{name} repeat {repeat + 1}: {d}" for d in differences(runs[name], done)]
            runs.setdefault(name, done)
    problems += differences(runs["off"], runs["on"])
    ratios = [off / on for off, on in zip(walls["off"], walls["on"], strict=True)]
    return {
        "benchmark": "labkit bench experiment",
        "started_utc": started.isoformat(timespec="seconds"), "finished_utc": now().isoformat(timespec="seconds"),
        "labkit_commit": commit, "machine": host, "backend": backend.describe(),
        "model_sha256": backend.model_sha256, "config": config.to_dict(),
        "default_configuration": default_configuration, "repeats": repeats, "variants": VARIANTS,
        "wall_s": walls, "wall_ratio_off_to_on_runs": ratios, "wall_ratio_off_to_on": statistics.median(ratios),
        "arms": {name: per_arm(done) for name, done in runs.items()},
        "identical": not problems, "differences": problems[:50], "n_differences": len(problems),
        "prefix_reuse_on": reuse,
    }


def render_experiment_speed(r: dict[str, Any]) -> str:
    """Wall times, the off/on ratio and the identity check as a short table."""
    c = r["config"]
    tasks = "every task" if c["task_ids"] is None else f"{len(c['task_ids'])} tasks"
    lines = [f"labkit bench experiment — {tasks} of {'+'.join(c['splits'])} x {len(c['seeds'])} seed(s) x "
             f"{len(c['arms'])} arms, temperature {c['decoding']['temperature']}, {r['repeats']} repeat(s), "
             f"commit {r['labkit_commit']}",
             "  the default `make experiment` configuration" if r["default_configuration"] else
             "  NOT the default `make experiment` configuration",
             f"  wall s, optimisations off: {', '.join(f'{w:.0f}' for w in r['wall_s']['off'])}; "
             f"on: {', '.join(f'{w:.0f}' for w in r['wall_s']['on'])}",
             f"  off / on: {r['wall_ratio_off_to_on']:.2f}x (runs: "
             f"{', '.join(f'{x:.2f}' for x in r['wall_ratio_off_to_on_runs'])})", "",
             f"  {'arm':<16} {'calls':>6} {'wall s off':>10} {'wall s on':>10} {'ratio':>6}"]
    for arm, off in r["arms"]["off"].items():
        on = r["arms"]["on"][arm]
        ratio = f"{off['wall_s'] / on['wall_s']:.2f}" if on["wall_s"] else "-"
        lines.append(f"  {arm:<16} {off['llm_calls']:>6} {off['wall_s']:>10.1f} {on['wall_s']:>10.1f} {ratio:>6}")
    lines.append("  counts, token totals and grades: " + (
        "identical" if r["identical"] else f"DIFFER in {r['n_differences']} place(s): {r['differences'][:3]}"))
    return "\n".join(lines)


def report_to(path: str | None, result: dict[str, Any]) -> None:
    """Write the result as JSON (for data/bench/), and say where."""
    import json

    if path:
        out = Path(path)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
        print(f"labkit: written to {out}", file=sys.stderr)
