"""``labkit bench equality``: the fast paths give the same token ids as today's path, prompt by prompt.

Greedy, on the embedded model and a recording's prompts: ``lazy-vs-mask``, ``reuse-vs-fresh``,
``two-batches-vs-one`` and ``optimised-vs-today``, each path in one pass in recorded order, timed."""

from __future__ import annotations

import hashlib
import json
import statistics
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from labkit.core.errors import LabkitError
from labkit.llm.backend import Request


@dataclass(frozen=True)
class DecodePath:
    """One way of decoding: the backend options it sets."""

    grammar_mode: str
    split: bool
    reuse: bool
    meaning: str


PATHS: dict[str, DecodePath] = {
    "mask": DecodePath("mask", False, False, "today: one batch, the grammar masks the vocabulary at every step"),
    "lazy": DecodePath("lazy", False, False, "one batch, lazy grammar"),
    "split-fresh": DecodePath("lazy", True, False, "[prefix][rest] from an empty cache, lazy grammar"),
    "split-reuse": DecodePath("lazy", True, True, "[prefix][rest], the prefix's KV state kept, lazy grammar"),
}


@dataclass(frozen=True)
class Comparison:
    """Two paths whose token ids must agree on every prompt that ``needs`` (grammar or prefix)."""

    name: str
    path: str
    reference: str
    needs: str


COMPARISONS: tuple[Comparison, ...] = (
    Comparison("lazy-vs-mask", "lazy", "mask", "grammar"),
    Comparison("reuse-vs-fresh", "split-reuse", "split-fresh", "prefix"),
    Comparison("two-batches-vs-one", "split-fresh", "lazy", "prefix"),
    Comparison("optimised-vs-today", "split-reuse", "mask", "prefix"),
)


@dataclass(frozen=True)
class Prompt:
    """A recorded request of one arm, replayed greedily; ``prefix`` is the declared prefix it starts with."""

    arm: str
    key: str
    request: Request
    prefix: str | None

    @property
    def has_grammar(self) -> bool:
        return self.request.schema is not None

    def resolve(self, path: str) -> str:
        """The path that really runs: without a grammar, lazy and mask are the same code."""
        return "mask" if path == "lazy" and not self.has_grammar else path

    def applies(self, comparison: Comparison) -> bool:
        return self.has_grammar if comparison.needs == "grammar" else self.prefix is not None

    def paths(self) -> set[str]:
        return {self.resolve(p) for c in COMPARISONS if self.applies(c) for p in (c.path, c.reference)}


DEFAULT_RECORDING = "data/experiment-v2/gemma3-270m"  # the embedded model's recording of the reading comparison


def declared_prefixes_by_arm(recording: Path) -> dict[str, tuple[str, ...]]:
    """The prompt prefixes each arm of ``recording`` declared (arms without: absent), rebuilt from its
    ``experiment.json`` with the function the live run used."""
    from labkit.reading.arms import declared_prefixes
    from labkit.reading.runner import prepare_reading_replay

    config = prepare_reading_replay(recording)
    examples = config.task_sets()["dev"].example_tasks()
    found = {arm: declared_prefixes([arm], config.seeds, examples) for arm in config.arms}
    return {arm: prefixes for arm, prefixes in found.items() if prefixes}


def recorded_prompts(cassettes: Path, prefixes: Mapping[str, Sequence[str]], arms: Sequence[str] | None = None,
                     limit: int | None = None) -> list[Prompt]:
    """Every distinct recorded request under ``cassettes/<arm>/``, made greedy, with the longest of its
    arm's ``prefixes`` it starts with; ``limit`` takes each arm's first in sorted order."""
    from labkit.llm.cassette import read_cassette
    from labkit.llm.prefix_cache import longest_declared

    if not cassettes.is_dir():
        raise LabkitError(f"{cassettes} is not a folder of cassettes",
                          f"point --recording at a recorded reading comparison (e.g. {DEFAULT_RECORDING}).")
    found: list[Prompt] = []
    for arm_dir in sorted(p for p in cassettes.iterdir() if p.is_dir()):
        if arms and arm_dir.name not in arms:
            continue
        seen: set[str] = set()
        taken: list[Prompt] = []
        for file in sorted(arm_dir.rglob("*.jsonl")):
            for call in read_cassette(file)[1]:
                r = call["request"]
                request = Request(prompt=r["prompt"], max_tokens=int(r["max_tokens"]), stop=tuple(r.get("stop") or ()),
                                  schema=r.get("schema"), temperature=0.0, seed=0, sampling=dict(r["sampling"]))
                key = hashlib.sha256(json.dumps(request.to_dict(), sort_keys=True).encode()).hexdigest()
                if key in seen:
                    continue
                seen.add(key)
                prefix = longest_declared(request.prompt, prefixes.get(arm_dir.name, ()))
                taken.append(Prompt(arm_dir.name, key, request, prefix))
        found += taken[:limit] if limit else taken
    if not found:
        raise LabkitError(f"no recorded calls found under {cassettes}" + (f" for arms {list(arms)}" if arms else ""),
                          "check --recording and --arms.")
    return found


def prefix_evaluations(prompts: Sequence[Prompt]) -> int:
    """How often the reuse pass must evaluate a prefix: at the first prompt and wherever it changes."""
    order = [p.prefix for p in prompts if p.prefix is not None]
    return sum(1 for i, prefix in enumerate(order) if i == 0 or prefix != order[i - 1])


def compare(prompts: Sequence[Prompt], ids: dict[tuple[str, str], tuple[int, ...]]) -> list[dict[str, Any]]:
    """For every comparison and arm: how many prompts it covers and which differ (with their token ids)."""
    rows: list[dict[str, Any]] = []
    for c in COMPARISONS:
        for arm in sorted({p.arm for p in prompts}):
            covered = [p for p in prompts if p.arm == arm and p.applies(c)]
            if not covered:
                continue
            differ = [{"key": p.key, c.path: list(ids[(p.key, p.resolve(c.path))]),
                       c.reference: list(ids[(p.key, p.resolve(c.reference))])}
                      for p in covered if ids[(p.key, p.resolve(c.path))] != ids[(p.key, p.resolve(c.reference))]]
            rows.append({"comparison": c.name, "arm": arm, "path": c.path, "reference": c.reference,
                         "prompts": len(covered), "differ": len(differ), "differing": differ})
    return rows


def default_problems(result: dict[str, Any], reused_arms: Iterable[str]) -> list[str]:
    """Every comparison backing a default that found a difference (two-batches-vs-one only backs one for
    ``reused_arms``); empty: the defaults are proven."""
    reused = set(reused_arms)
    problems = []
    for row in result["comparisons"]:
        backs_default = row["comparison"] in ("lazy-vs-mask", "reuse-vs-fresh") or row["arm"] in reused
        if backs_default and row["differ"]:
            problems.append(f"{row['comparison']} on {row['arm']}: {row['differ']} of {row['prompts']} prompts differ")
    return problems


def _timing(values: list[float]) -> dict[str, float | int]:
    return {"calls": len(values), "mean_s": statistics.fmean(values), "median_s": statistics.median(values),
            "total_s": sum(values)}


def run_equality(backend: Any, prompts: Sequence[Prompt], *, progress: Callable[[str], None] | None = None
                 ) -> dict[str, Any]:
    """Decode every prompt on each of its paths on a ``LlamaCppBackend`` (options restored afterwards);
    return comparisons, timings and reuse counts."""
    saved = (backend.grammar_mode, backend.prefixes, backend.prefix_reuse)
    ids: dict[tuple[str, str], tuple[int, ...]] = {}
    seconds: dict[tuple[str, str], list[float]] = {}
    reuse_hits = evaluations = 0
    try:
        for name, path in PATHS.items():
            todo = [p for p in prompts if name in p.paths()]
            backend.grammar_mode, backend.prefix_reuse = path.grammar_mode, path.reuse
            backend.forget_kept_prefix()  # each pass starts from an empty cache
            before = (backend.prefix_stats.reused, backend.prefix_stats.evaluated)
            for n, p in enumerate(todo, start=1):
                backend.prefixes = (p.prefix,) if path.split and p.prefix else ()
                out = backend._complete(p.request)
                ids[(p.key, name)] = backend.last_token_ids
                seconds.setdefault((p.arm, name), []).append(out.seconds)
                if progress and (n % 25 == 0 or n == len(todo)):
                    progress(f"{name}: {n}/{len(todo)}")
            if path.reuse:
                reuse_hits += backend.prefix_stats.reused - before[0]
                evaluations += backend.prefix_stats.evaluated - before[1]
    finally:
        backend.grammar_mode, backend.prefixes, backend.prefix_reuse = saved
    timing: dict[str, dict[str, Any]] = {}
    for (arm, name), values in sorted(seconds.items()):
        timing.setdefault(arm, {})[name] = _timing(values)
    speedup = {arm: t["mask"]["mean_s"] / t["split-reuse"]["mean_s"]
               for arm, t in timing.items() if "mask" in t and "split-reuse" in t}
    rows = compare(prompts, ids)
    return {"comparisons": rows, "all_equal": all(r["differ"] == 0 for r in rows),
            "timing": timing, "mean_call_speedup_mask_to_split_reuse": speedup, "reuse_hits": reuse_hits,
            "prefix_evaluations": evaluations}


def alternating_call_time(backend: Any, prompts: Sequence[Prompt], *, rounds: int = 5, block: int = 20,
                          paths: tuple[str, str] = ("mask", "split-reuse")) -> dict[str, Any]:
    """Mean seconds per call of two paths, timed in alternating blocks on the same prefixed prompts, so
    drifting load hits both; the per-round ratios show the noise."""
    chosen = [p for p in prompts if p.prefix is not None][:block]
    if not chosen or rounds < 1:
        raise LabkitError("no prompt with a declared prefix to time (or rounds < 1)",
                          "time an arm that declares a prefix (--arms prompt-grammar) with --timing-rounds 1 or more.")
    saved = (backend.grammar_mode, backend.prefixes, backend.prefix_reuse)
    means: dict[str, list[float]] = {name: [] for name in paths}
    try:
        for _ in range(rounds):
            for name in paths:
                path = PATHS[name]
                backend.grammar_mode, backend.prefix_reuse = path.grammar_mode, path.reuse
                took = []
                for p in chosen:
                    backend.prefixes = (p.prefix,) if path.split else ()
                    took.append(backend._complete(p.request).seconds)
                means[name].append(statistics.fmean(took))
    finally:
        backend.grammar_mode, backend.prefixes, backend.prefix_reuse = saved
    ratios = [a / b for a, b in zip(means[paths[0]], means[paths[1]], strict=True)]
    return {"arm": chosen[0].arm, "paths": list(paths), "prompts_per_block": len(chosen), "rounds": rounds,
            "mean_s_per_round": means, "ratio_per_round": ratios, "ratio_median": statistics.median(ratios),
            "ratio_min": min(ratios), "ratio_max": max(ratios)}


def bench_equality(recording: Path, *, arms: Sequence[str] | None = None, limit: int | None = None,
                   threads: int | None = None, timing_rounds: int = 0, progress: bool = True,
                   now: Callable[[], datetime] = lambda: datetime.now(timezone.utc)) -> dict[str, Any]:
    """Load the embedded model, replay a recording's prompts on every path, return the result with its
    provenance."""
    from labkit.core.provenance import git_commit, machine
    from labkit.llm.llamacpp import LlamaCppBackend
    from labkit.reading.runner import N_CTX

    declared = declared_prefixes_by_arm(recording)
    prompts = recorded_prompts(recording / "cassettes", declared, arms, limit)
    started = now()
    commit, host = git_commit(), machine()  # at the start: the code that ran, the load it met
    backend = LlamaCppBackend(n_threads=threads, n_ctx=N_CTX)
    say = (lambda m: print(f"labkit bench equality: {m}", file=sys.stderr, flush=True)) if progress else None
    result = run_equality(backend, prompts, progress=say)
    if timing_rounds:
        result["alternating_timing"] = alternating_call_time(backend, prompts, rounds=timing_rounds)
    reused_arms = sorted({p.arm for p in prompts if p.prefix is not None})
    counts: dict[str, int] = {}
    unchanged: dict[str, int] = {}
    for p in prompts:
        counts[p.arm] = counts.get(p.arm, 0) + 1
        if not p.paths() - {"mask"}:
            unchanged[p.arm] = unchanged.get(p.arm, 0) + 1
    return {
        "benchmark": "labkit bench equality",
        "started_utc": started.isoformat(timespec="seconds"),
        "finished_utc": now().isoformat(timespec="seconds"),
        "labkit_commit": commit, "machine": host, "backend": backend.describe(),
        "model_sha256": backend.model_sha256, "llama_cpp_python": backend.llama_cpp_version,
        "source": str(recording), "limit_per_arm": limit, "prompts": counts,
        "prompts_on_todays_path_unchanged": unchanged, "prefixes_tested": reused_arms,
        "decoding": "greedy (temperature 0, seed 0); max_tokens, stop, schema and sampling knobs as recorded",
        "paths": {name: path.meaning for name, path in PATHS.items()},
        "prefixes": {arm: [{"chars": len(p), "sha256": hashlib.sha256(p.encode()).hexdigest()} for p in prefixes]
                     for arm, prefixes in declared.items()},
        "prefix_evaluations_expected": prefix_evaluations(prompts),
        **result,
        "default_problems": default_problems(result, reused_arms),
    }


def render_equality(r: dict[str, Any]) -> str:
    """The comparisons and timings as a short table."""
    lines = [f"labkit bench equality — {sum(r['prompts'].values())} recorded prompts "
             f"({', '.join(f'{a} {n}' for a, n in r['prompts'].items())}), {r['decoding'].split(';')[0]}",
             f"  model sha256 {r['model_sha256']}, llama-cpp-python {r['llama_cpp_python']}, "
             f"commit {r['labkit_commit']}", "",
             f"  {'comparison':<20} {'arm':<16} {'prompts':>7} {'differ':>6}"]
    lines += [f"  {c['comparison']:<20} {c['arm']:<16} {c['prompts']:>7} {c['differ']:>6}" for c in r["comparisons"]]
    if r.get("prompts_on_todays_path_unchanged"):
        lines.append("  no grammar and no reused prefix (decoded on today's path, nothing to compare): "
                     + ", ".join(f"{a} {n}" for a, n in r["prompts_on_todays_path_unchanged"].items()))
    lines += ["", f"  {'arm':<16} {'path':<12} {'calls':>5} {'mean s/call':>11}"]
    for arm, paths in r["timing"].items():
        lines += [f"  {arm:<16} {name:<12} {t['calls']:>5} {t['mean_s']:>11.3f}" for name, t in paths.items()]
    lines += ["", "  mean time per call, today's path / optimised: "
              + ", ".join(f"{a} {x:.2f}x" for a, x in r["mean_call_speedup_mask_to_split_reuse"].items()),
              f"  prefix state reused {r['reuse_hits']} times"]
    alt = r.get("alternating_timing")
    if alt:
        lines.append(f"  alternating blocks ({alt['arm']}, {alt['rounds']} rounds of "
                     f"{alt['prompts_per_block']} prompts): {alt['paths'][0]} / {alt['paths'][1]} "
                     f"median {alt['ratio_median']:.2f}x "
                     f"(range {alt['ratio_min']:.2f}-{alt['ratio_max']:.2f})")
    problems = r["default_problems"]
    lines.append("  defaults proven: " + ("yes" if not problems else "NO — " + "; ".join(problems)))
    return "\n".join(lines)
