"""``labkit bench parallel``: generated tokens/s with N sequences decoded in one batch (one ``llama_decode``
per step), per width: aggregate and per-sequence rates, the ratio to one stream, and whether each
sequence's tokens equal the prompt decoded alone."""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from labkit.core.errors import LabkitError
from labkit.core.provenance import git_commit, machine
from labkit.inference.bench import model_fields
from labkit.inference.gguf_meta import read_gguf
from labkit.inference.loadlog import capture_llama_log
from labkit.llm.modelfile import embedded_model_path
from labkit.llm.models import resolve_model
from labkit.llm.native import load_plan, open_llama

# Different prompts per sequence, so the batch is N users, not one answer copied N times.
PROMPT = "Ticket {n}: a customer writes that the {thing} stopped working after the update. Reply:"
THINGS = ("printer", "login page", "invoice export", "mobile app", "search box", "calendar sync", "backup",
          "report builder")


def prompt_for(n: int) -> str:
    """The prompt of sequence ``n`` (a ticket number and a product, so no two sequences share it)."""
    return PROMPT.format(n=101 + n, thing=THINGS[n % len(THINGS)])


def _decode_batch(native: Any, ctx: Any, batch: Any, entries: Sequence[tuple[int, int, int, bool]]) -> None:
    """Decode one batch of (token, position, sequence, wants logits) entries; a failure is an error."""
    batch.n_tokens = len(entries)
    for i, (token, pos, seq, logits) in enumerate(entries):
        batch.token[i] = token
        batch.pos[i] = pos
        batch.n_seq_id[i] = 1
        batch.seq_id[i][0] = seq
        batch.logits[i] = logits
    code = native.llama_decode(ctx, batch)
    if code != 0:
        raise LabkitError(f"llama_decode returned {code} for a batch of {len(entries)} token(s)",
                          "lower --sequences or --gen-tokens (the context may be full).")


def _run_width(native: Any, ctx: Any, batch: Any, sampler: Any, vocab: Any, prompts: list[list[int]],
               gen_tokens: int, clock: Callable[[], float]) -> tuple[float, int, list[list[int]]]:
    """Greedy-generate for every prompt at once; (aggregate tokens/s after the first step, steps, tokens)."""
    native.llama_memory_clear(native.llama_get_memory(ctx), True)
    for seq, ids in enumerate(prompts):
        _decode_batch(native, ctx, batch, [(t, p, seq, False) for p, t in enumerate(ids[:-1])])
    _decode_batch(native, ctx, batch, [(ids[-1], len(ids) - 1, seq, True) for seq, ids in enumerate(prompts)])
    tokens = [[native.llama_sampler_sample(sampler, ctx, i)] for i in range(len(prompts))]
    steps, t_first = 0, clock()
    while steps < gen_tokens - 1:
        live = [s for s in range(len(prompts)) if not native.llama_vocab_is_eog(vocab, tokens[s][-1])]
        if not live:
            break
        _decode_batch(native, ctx, batch, [(tokens[s][-1], len(prompts[s]) + len(tokens[s]) - 1, s, True)
                                           for s in live])
        for i, s in enumerate(live):
            tokens[s].append(native.llama_sampler_sample(sampler, ctx, i))
        steps += 1
    native.llama_synchronize(ctx)
    elapsed = clock() - t_first
    generated = sum(len(t) - 1 for t in tokens)
    if generated == 0 or elapsed <= 0:
        raise LabkitError("generation stopped after its first token, so no rate can be measured",
                          "raise --gen-tokens, or check that the model is a text model.")
    return generated / elapsed, steps, tokens


def bench_parallel(model: str | None = None, *, widths: Sequence[int] = (1, 2, 4, 8), n_gpu_layers: int = 0,
                   threads: int | None = None, gen_tokens: int = 64, runs: int = 3,
                   clock: Callable[[], float] = time.perf_counter,
                   now: Callable[[], datetime] = lambda: datetime.now(timezone.utc)) -> dict[str, Any]:
    """Generated tokens/s per batch width (width 1 always measured) for ``model``, with provenance."""
    import llama_cpp.llama_cpp as native

    widths = sorted({1, *widths})
    if widths[0] < 1 or runs < 1 or gen_tokens < 2:
        raise LabkitError("widths must be >= 1, runs >= 1 and --gen-tokens >= 2",
                          "use the defaults (widths 1 2 4 8, 3 runs, 64 tokens).")
    resolved, _kind = resolve_model(model)
    path = embedded_model_path() if resolved is None else Path(resolved)
    read_gguf(path)  # a clear error for a missing or non-GGUF file before llama.cpp sees it
    threads = threads or os.cpu_count() or 1
    started, commit, host = now(), git_commit(), machine()  # the code that ran and the load it met, at the start
    plan = load_plan()
    with capture_llama_log():
        llm = open_llama(path, plan, n_ctx=256, n_threads=threads, n_threads_batch=threads,
                         n_gpu_layers=n_gpu_layers, verbose=False)
    prompts = [llm.tokenize(prompt_for(n).encode(), add_bos=True) for n in range(widths[-1])]
    longest = max(len(p) for p in prompts)
    params = native.llama_context_default_params()
    params.n_seq_max = widths[-1]
    per_sequence = -(-(longest + gen_tokens + 16) // 256) * 256  # llama.cpp pads a context to 256 cells
    params.n_ctx = widths[-1] * per_sequence  # split evenly: each sequence gets its own per_sequence cells
    params.n_batch = params.n_ubatch = max(longest, widths[-1])
    params.n_threads = params.n_threads_batch = threads
    with capture_llama_log():
        ctx = native.llama_init_from_model(llm._model.model, params)
    if not ctx:
        llm.close()
        raise LabkitError(f"llama.cpp could not make a context for {widths[-1]} sequences",
                          "lower the widths or --gen-tokens.")
    batch = native.llama_batch_init(params.n_batch, 0, widths[-1])
    sampler = native.llama_sampler_chain_init(native.llama_sampler_chain_default_params())
    native.llama_sampler_chain_add(sampler, native.llama_sampler_init_greedy())
    vocab = native.llama_model_get_vocab(llm._model.model)
    rows: list[dict[str, Any]] = []
    alone: list[list[int]] = []
    try:
        for n in range(widths[-1]):  # each prompt alone: the tokens a batched sequence is compared with
            alone.append(_run_width(native, ctx, batch, sampler, vocab, [prompts[n]], gen_tokens, clock)[2][0])
        for width in widths:
            rates: list[float] = []
            for i in range(runs + 1):
                rate, steps, tokens = _run_width(native, ctx, batch, sampler, vocab, prompts[:width], gen_tokens,
                                                 clock)
                if i:  # run 0 is the warm-up
                    rates.append(rate)
            aggregate = statistics.median(rates)
            rows.append({"sequences": width, "steps": steps, "aggregate_tokens_per_s": aggregate,
                         "aggregate_tokens_per_s_runs": rates, "per_sequence_tokens_per_s": aggregate / width,
                         "same_tokens_as_alone": sum(t == alone[n] for n, t in enumerate(tokens))})
    finally:
        native.llama_sampler_free(sampler)
        native.llama_batch_free(batch)
        native.llama_free(ctx)
        llm.close()
    single = rows[0]["aggregate_tokens_per_s"]
    for row in rows:
        row["aggregate_over_single"] = row["aggregate_tokens_per_s"] / single
    return {"benchmark": "labkit bench parallel", "started_utc": started.isoformat(timespec="seconds"),
            "labkit_commit": commit, "load_average_at_start": host["load_average_at_start"],
            **model_fields(path, plan, embedded=resolved is None, n_gpu_layers=n_gpu_layers, threads=threads),
            "gen_tokens_max": gen_tokens, "runs": runs, "warmup_runs": 1, "prompt": PROMPT, "widths": rows,
            "best_aggregate_tokens_per_s": max(r["aggregate_tokens_per_s"] for r in rows)}


def render_parallel(result: dict[str, Any]) -> str:
    """The result as a short table: one line per batch width."""
    where = f"{result['n_gpu_layers']} layer(s) on the GPU" if result["n_gpu_layers"] else "CPU only"
    lines = [f"labkit bench parallel: {Path(result['model']).name}, {result['threads']} thread(s), {where}, "
             f"median of {result['runs']} runs",
             f"{'sequences':>9}  {'aggregate tok/s':>15}  {'per sequence':>12}  {'x single':>8}  same as alone"]
    for r in result["widths"]:
        lines.append(f"{r['sequences']:>9}  {r['aggregate_tokens_per_s']:>15.1f}  "
                     f"{r['per_sequence_tokens_per_s']:>12.1f}  {r['aggregate_over_single']:>8.2f}  "
                     f"{r['same_tokens_as_alone']}/{r['sequences']}")
    return "\n".join(lines)
