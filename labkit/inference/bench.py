"""``labkit bench inference``: load time, prompt tokens/s, free greedy tokens/s and tokens/s under a JSON
grammar (masked and lazy, with whether they agree), medians after a warm-up, with provenance."""

from __future__ import annotations

import json
import os
import platform
import statistics
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from labkit.core.errors import LabkitError
from labkit.inference.gguf_meta import read_gguf
from labkit.inference.loadlog import capture_llama_log
from labkit.llm.modelfile import embedded_model_path, file_sha256
from labkit.llm.models import DEFAULT_MODEL, get_model, resolve_model, spec_for_path
from labkit.llm.native import load_plan, open_llama, system_info

# A fixed-length plan: six steps from an enum. The grammar therefore forces ~40 tokens of output, so
# constrained and free generation are timed over comparable lengths.
PLAN_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"steps": {"type": "array", "minItems": 6, "maxItems": 6,
                             "items": {"type": "string",
                                       "enum": ["read_orders", "read_stock", "write_note", "wait"]}}},
    "required": ["steps"],
}
GEN_PROMPT = ('Plans as JSON.\nTask: restock shelf 4.\nPlan: {"steps": ["read_stock", "read_orders", '
              '"write_note", "wait", "read_stock", "write_note"]}\nTask: answer customer 17.\nPlan:')
FILLER = ("The state machine owns the plan, the permissions and the budgets; the model proposes one "
          "small step at a time and the validator checks it against the allowlist. ")


# One implementation of "where is the embedded model" and "hash this model file" serves the whole kit.
default_model_path = embedded_model_path
sha256_of = file_sha256


def model_fields(path: Path, plan: Any, *, embedded: bool, n_gpu_layers: int, threads: int) -> dict[str, Any]:
    """What every inference benchmark records about the model, the llama.cpp build and the machine it ran on
    (with the registered model's name and pinned sha256 where the file is one the registry knows)."""
    import llama_cpp

    spec = get_model(DEFAULT_MODEL) if embedded else spec_for_path(path)
    known = {} if spec is None else {"registered_model": spec.name, "expected_sha256": spec.sha256}
    return {**known, "model": str(path), "model_name": str(read_gguf(path).metadata.get("general.name", path.stem)),
            "model_sha256": sha256_of(path), "llama_cpp_python": llama_cpp.__version__,
            "gpu_offload_supported": bool(llama_cpp.llama_supports_gpu_offload()),
            "n_gpu_layers": n_gpu_layers, "threads": threads, "cpu_count": os.cpu_count(),
            "machine": f"{platform.system()} {platform.machine()}",
            "cpu_amx": plan.cpu_amx, "build_amx": plan.build_amx, "llama_system_info": system_info().strip(),
            "extra_buffer_types": plan.use_extra_bufts, "load_route": plan.label, "load_route_reason": plan.reason}


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def _generate_rate(llm: Any, tokens: list[int], n: int, grammar: Any, clock: Callable[[], float]
                   ) -> tuple[float, int]:
    """Greedy-generate up to ``n`` tokens; return (tokens/s over the steps after the first, steps)."""
    llm.reset()
    eos = llm.token_eos()
    steps, t_first = 0, 0.0
    t_last = 0.0
    for count, token in enumerate(llm.generate(tokens, temp=0.0, reset=True, grammar=grammar), start=1):
        now = clock()
        if count == 1:
            t_first = now
        else:
            steps, t_last = count - 1, now
        if token == eos or count >= n:
            break
    if steps == 0 or t_last <= t_first:
        raise LabkitError("generation stopped after its first token, so no rate can be measured",
                          "raise --gen-tokens, or check that the model is a text model.")
    return steps / (t_last - t_first), steps


def bench_inference(model_path: str | Path | None = None, *, n_gpu_layers: int = 0, threads: int | None = None,
                    n_ctx: int = 1024, prompt_tokens: int = 256, gen_tokens: int = 48, runs: int = 3,
                    seed: int = 0, clock: Callable[[], float] = time.perf_counter,
                    now: Callable[[], datetime] = lambda: datetime.now(timezone.utc)) -> dict[str, Any]:
    """Run the inference benchmark on ``model_path`` (a registered name, checked against its sha256, a GGUF
    path, or None for the embedded model); results with provenance."""
    import llama_cpp

    if runs < 1 or prompt_tokens < 2 or gen_tokens < 2:
        raise LabkitError("runs must be >= 1, prompt and generation lengths >= 2",
                          "use the defaults (3 runs, 256 prompt tokens, 48 generated tokens).")
    if prompt_tokens + 8 > n_ctx or gen_tokens + 64 > n_ctx:
        raise LabkitError(f"context {n_ctx} is too small for {prompt_tokens} prompt / {gen_tokens} generated "
                          "tokens", "raise --n-ctx or lower the lengths.")
    resolved, _kind = resolve_model(str(model_path) if model_path is not None else None)
    embedded = resolved is None
    path = default_model_path() if resolved is None else resolved
    read_gguf(path)  # clear errors for a missing or non-GGUF file before llama.cpp sees it
    threads = threads or os.cpu_count() or 1
    started = now()

    plan = load_plan()

    def load() -> Any:
        with capture_llama_log():  # keeps llama.cpp's load chatter off the terminal
            return open_llama(path, plan, n_ctx=n_ctx, n_threads=threads, n_threads_batch=threads,
                                   n_gpu_layers=n_gpu_layers, seed=seed, verbose=False)

    from labkit.llm.lazy_grammar import install

    load().close()  # warm-up: page cache and library initialisation
    load_s: list[float] = []
    llm = None
    for i in range(runs):
        t0 = clock()
        llm = load()
        load_s.append(clock() - t0)
        if i < runs - 1:
            llm.close()
    assert llm is not None

    ids = llm.tokenize(FILLER.encode() * (prompt_tokens // 20 + 2), add_bos=True)[:prompt_tokens]
    pp: list[float] = []
    for i in range(runs + 1):
        llm.reset()
        t0 = clock()
        llm.eval(ids)
        if i:  # run 0 is the warm-up
            pp.append(len(ids) / (clock() - t0))

    gen_ids = llm.tokenize(GEN_PROMPT.encode(), add_bos=True)
    t0 = clock()
    grammar = llama_cpp.LlamaGrammar.from_json_schema(json.dumps(PLAN_SCHEMA), verbose=False)
    grammar_build_s = clock() - t0
    lazy_now = [False]
    sampled: list[int] = []
    install(llm, lambda: lazy_now[0], sampled)
    free: list[float] = []
    constrained: list[float] = []
    lazy: list[float] = []
    free_steps = constrained_steps = lazy_steps = 0
    same_tokens = True
    for i in range(runs + 1):
        rate, free_steps = _generate_rate(llm, gen_ids, gen_tokens, None, clock)
        if i:
            free.append(rate)
        sampled.clear()
        rate, constrained_steps = _generate_rate(llm, gen_ids, gen_tokens, grammar, clock)
        masked_ids = list(sampled)
        if i:
            constrained.append(rate)
        lazy_now[0] = True
        sampled.clear()
        rate, lazy_steps = _generate_rate(llm, gen_ids, gen_tokens, grammar, clock)
        lazy_now[0] = False
        same_tokens = same_tokens and sampled == masked_ids
        if i:
            lazy.append(rate)
    llm.close()

    result: dict[str, Any] = {
        "benchmark": "labkit bench inference",
        "started_utc": started.isoformat(timespec="seconds"),
        **model_fields(path, plan, embedded=embedded, n_gpu_layers=n_gpu_layers, threads=threads),
        "n_ctx": n_ctx, "prompt_tokens": len(ids), "gen_tokens_max": gen_tokens,
        "gen_steps_free": free_steps, "gen_steps_grammar": constrained_steps,
        "runs": runs, "warmup_runs": 1, "seed": seed,
        "load_s": _median(load_s), "load_s_runs": load_s,
        "prompt_tokens_per_s": _median(pp), "prompt_tokens_per_s_runs": pp,
        "gen_tokens_per_s": _median(free), "gen_tokens_per_s_runs": free,
        "gen_grammar_tokens_per_s": _median(constrained), "gen_grammar_tokens_per_s_runs": constrained,
        "grammar_build_s": grammar_build_s,
        "gen_steps_lazy_grammar": lazy_steps,
        "gen_lazy_grammar_tokens_per_s": _median(lazy), "gen_lazy_grammar_tokens_per_s_runs": lazy,
        "lazy_grammar_same_tokens": same_tokens,
    }
    result["grammar_to_free_ratio"] = result["gen_grammar_tokens_per_s"] / result["gen_tokens_per_s"]
    result["lazy_grammar_to_free_ratio"] = result["gen_lazy_grammar_tokens_per_s"] / result["gen_tokens_per_s"]
    return result


def render_inference(r: dict[str, Any]) -> str:
    """The benchmark as a table: provenance first, then medians with every run beside them."""

    def runs(key: str, fmt: str) -> str:
        return ", ".join(format(v, fmt) for v in r[key])

    offload = "yes" if r["gpu_offload_supported"] else "no (CPU-only build)"
    sha_note = ""
    if "expected_sha256" in r:
        sha_note = " (matches the package)" if r["model_sha256"] == r["expected_sha256"] else " (MISMATCH!)"
    lines = [
        f"labkit bench inference — {r['model_name']}, started {r['started_utc']}",
        f"  model sha256       {r['model_sha256']}{sha_note}",
        f"  llama-cpp-python   {r['llama_cpp_python']}, GPU offload: {offload}",
        f"  machine            {r['machine']}, {r['cpu_count']} CPUs, threads={r['threads']}, "
        f"n_gpu_layers={r['n_gpu_layers']}, n_ctx={r['n_ctx']}",
        f"  weights route      {r.get('load_route', 'extra buffer types on (not recorded)')}",
        f"  sizes              prompt {r['prompt_tokens']} tokens; generation up to {r['gen_tokens_max']} "
        f"(steps timed: free {r['gen_steps_free']}, grammar {r['gen_steps_grammar']})",
        f"  median of {r['runs']} runs after {r['warmup_runs']} warm-up",
        "",
        f"  {'measure':<34} {'median':>10}   runs",
        f"  {'-' * 34} {'-' * 10}   {'-' * 24}",
        f"  {'model load (s)':<34} {r['load_s']:>10.3f}   {runs('load_s_runs', '.3f')}",
        f"  {'prompt processing (tokens/s)':<34} {r['prompt_tokens_per_s']:>10.1f}   "
        f"{runs('prompt_tokens_per_s_runs', '.1f')}",
        f"  {'generation, free (tokens/s)':<34} {r['gen_tokens_per_s']:>10.1f}   "
        f"{runs('gen_tokens_per_s_runs', '.1f')}",
        f"  {'generation, JSON grammar (tokens/s)':<34} {r['gen_grammar_tokens_per_s']:>10.1f}   "
        f"{runs('gen_grammar_tokens_per_s_runs', '.1f')}",
        f"  {'grammar / free speed ratio':<34} {r['grammar_to_free_ratio']:>10.2f}",
    ]
    if "gen_lazy_grammar_tokens_per_s" in r:  # recorded before the lazy grammar existed: absent
        same = "same token ids as masking" if r["lazy_grammar_same_tokens"] else "TOKEN IDS DIFFER from masking"
        lines += [
            f"  {'generation, lazy grammar (tokens/s)':<34} {r['gen_lazy_grammar_tokens_per_s']:>10.1f}   "
            f"{runs('gen_lazy_grammar_tokens_per_s_runs', '.1f')}",
            f"  {'lazy grammar / free speed ratio':<34} {r['lazy_grammar_to_free_ratio']:>10.2f}   {same}",
        ]
    lines += [
        f"  {'grammar build, once (s)':<34} {r['grammar_build_s']:>10.4f}",
    ]
    return "\n".join(lines)


def read_recorded(path: str | Path) -> dict[str, Any]:
    """A recorded ``labkit bench inference --json`` result; anything else is a clear error."""
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise LabkitError(f"cannot read the benchmark record {p}: {exc}",
                          "record one with `labkit bench inference --json > FILE`.") from None
    if not isinstance(data, dict) or data.get("benchmark") != "labkit bench inference":
        raise LabkitError(f"{p} is not a `labkit bench inference` record",
                          "record one with `labkit bench inference --json > FILE`.")
    return data


def render_inference_comparison(results: list[dict[str, Any]]) -> str:
    """Several recorded benchmarks side by side, the columns that make rows comparable first."""
    head = (f"{'model':<20} {'started (UTC)':<17} {'thr':>3} {'load s':>7} {'prompt t/s':>10} "
            f"{'free t/s':>9} {'grammar t/s':>11} {'ratio':>6}")
    lines = [head, "-" * len(head)]
    for r in results:
        name = str(r.get("registered_model") or r["model_name"])
        lines.append(f"{name:<20} {r['started_utc'][:16]:<17} {r['threads']:>3} {r['load_s']:>7.2f} "
                     f"{r['prompt_tokens_per_s']:>10.1f} {r['gen_tokens_per_s']:>9.1f} "
                     f"{r['gen_grammar_tokens_per_s']:>11.1f} {r['grammar_to_free_ratio']:>6.2f}")
    return "\n".join(lines)
