# %% [markdown]
# # 07 — Local inference: speed, memory and the GPU question
#
# The workers in this kit are small language models running in-process through llama.cpp. Before trusting one
# inside a state machine you need to know three practical things about it: which parameters matter when it is
# loaded and called, how fast it reads a prompt and writes tokens (free, and under a JSON grammar), and how much
# memory it needs on a CPU or a GPU.
#
# **After this notebook you can**
# - read a [GGUF](../docs/glossary.md) file's header and say what its [quantization](../docs/glossary.md) and
#   architecture mean for speed and memory;
# - choose the load and call parameters that matter (`n_ctx`, threads, `n_gpu_layers`, seed,
#   [temperature](../docs/glossary.md)), and say why a machine's decisions use
#   [greedy decoding](../docs/glossary.md);
# - read a recorded benchmark in [tokens per second](../docs/glossary.md) (prompt processing, free generation,
#   [grammar-constrained](../docs/glossary.md) generation), and explain why a live run on your machine differs
#   from it;
# - explain how a [lazy grammar](../docs/glossary.md) and [prefix reuse](../docs/glossary.md) of the
#   [KV cache](../docs/glossary.md) make calls faster without changing a token, and where that equality holds;
# - estimate whether a model fits a GPU from its weights, KV cache and [scratch space](../docs/glossary.md).
#
# **Prerequisites:** Python; notebook 06 helps (its arms are the prompts measured here).
# **Time:** about 70 minutes, the quiz included. The **Predict** boxes hide their answer until you choose and press
# *check* (their code cell is collapsed, because it holds the answer).
#
# Every number before the last section is read from a recorded benchmark in `data/bench/`, printed with its
# [provenance](../docs/glossary.md) (model sha256, llama-cpp-python version, threads, commit). Only the last
# section, *Live, on this machine*, loads the model; its numbers are yours and will differ.

# %%
import json
from datetime import datetime
from pathlib import Path

from labkit import predict
from labkit.inference import default_model_path, read_gguf_arch
from labkit.inference.bench import sha256_of

BENCH = Path("..") / "data" / "bench"


def record(name):
    """One recorded benchmark from data/bench/."""
    return json.loads((BENCH / name).read_text(encoding="utf-8"))


model_path = default_model_path()
arch = read_gguf_arch(model_path)  # reads the file's header only; nothing is loaded
print("model:", arch.name, "| file:", model_path.name, f"| {model_path.stat().st_size / 2**20:.0f} MiB")
print("sha256:", sha256_of(model_path))
print(f"{arch.n_layer} layers, d_model {arch.n_embd}, {arch.n_head} query heads sharing "
      f"{arch.n_head_kv[0]} KV head, head dim {arch.head_dim_k}, vocabulary {arch.n_vocab:,} tokens")
print(f"sliding window {arch.n_swa} tokens on layers "
      f"{[i for i, s in enumerate(arch.swa_layers) if s]}; global layers "
      f"{[i for i, s in enumerate(arch.swa_layers) if not s]}")

# %% [markdown]
# ## The model file: GGUF and quantization
#
# **GGUF** is llama.cpp's single-file model format: a header of metadata (architecture, sizes, the tokenizer's
# vocabulary) followed by the weight tensors. The file above is the kit's embedded model, Gemma 3 270M, with its
# weights **quantized** to `Q4_K_M`: about 4.5 to 5 bits per weight instead of 16, so the file is a fraction of
# the full-precision model's size and each generated token reads a fraction of the bytes, at a small cost in
# quality. The header alone, read above without loading anything, says what the memory estimate later in
# this notebook needs: layers, heads, KV heads, vocabulary, and which layers use a sliding attention window.
#
# ## Loading a model: the parameters that matter
#
# | parameter | what it decides |
# |---|---|
# | `n_ctx` | how many tokens (prompt + output) fit; the KV cache grows linearly with it |
# | `n_threads` / `n_threads_batch` | CPU threads for generation / for prompt processing; more than the physical cores rarely helps |
# | `n_gpu_layers` | how many transformer blocks run on the GPU (`-1` = all); ignored by a CPU-only build |
# | `seed` | the sampler's random seed; same seed + same prompt + same settings = same text |
# | `temperature` | `0` is greedy (always the most likely token); above 0 the next token is drawn at random |
#
# **Why a machine's decisions use temperature 0.** A decision call (which tool next, which menu entry) moves a
# state machine, and the kit's guarantees rest on being able to repeat it. At temperature 0 the same prompt gets
# the same answer whatever the seed, so a run can be replayed from its [cassette](../docs/glossary.md), a failure
# can be reproduced, and two code paths can be compared token by token — which is exactly how the two speed-ups
# below are proven to change nothing. Greedy decoding also takes the model's single best guess, which is what a
# choice from a menu should be. Sampling (temperature above 0) is for *measuring* a model: notebook 06 samples
# at 0.5 with several seeds on purpose, to see how often a task passes when the model's answers vary.

# %% [markdown]
# ## How fast? The recorded benchmarks
#
# `labkit bench inference` loads the model several times and reports medians of several runs after a warm-up,
# in **tokens per second**: *prompt processing* (reading the prompt, many tokens per step), *free generation*
# (writing one token per step, greedy) and generation under a JSON-schema grammar that forces a six-step plan.
# The records below were made with it for the embedded model and for the opt-in chat model
# Qwen2.5-Coder-1.5B-Instruct (`labkit models fetch qwen2.5-coder-1.5b`). Rows with different thread counts, or
# from different machines, do not compare number for number: the conditions come first.

# %%
from labkit.inference import render_inference_comparison

speed = {name: record(name) for name in ("inference.json", "inference-lazy-grammar.json",
                                         "inference-gemma3-270m-threads1.json", "inference-qwen2.5-coder-1.5b.json")}
print(render_inference_comparison(list(speed.values())))
print()
for name, r in speed.items():
    features = "AMX" if r.get("cpu_amx") else ("no AMX" if "cpu_amx" in r else "CPU features not recorded")
    print(f"{name}: sha256 {r['model_sha256'][:12]}…, llama-cpp-python {r['llama_cpp_python']}, "
          f"{r['cpu_count']} CPUs ({features}), {r['threads']} thread(s), prompt {r['prompt_tokens']} tokens, "
          f"free runs {', '.join(f'{x:.1f}' for x in r['gen_tokens_per_s_runs'])} tokens/s")


def hours_apart(a, b):
    return abs(datetime.fromisoformat(a["started_utc"]) - datetime.fromisoformat(b["started_utc"])).total_seconds() / 3600


first, again = speed["inference.json"], speed["inference-lazy-grammar.json"]
print(f"\nembedded model, two threads, same settings: free generation {first['gen_tokens_per_s']:.1f} against "
      f"{again['gen_tokens_per_s']:.1f} tokens/s ({first['gen_tokens_per_s'] / again['gen_tokens_per_s']:.1f}x), "
      f"recorded {hours_apart(first, again):.0f} h apart")
print(f"one thread each, 270M and 1.5B: recorded "
      f"{hours_apart(speed['inference-gemma3-270m-threads1.json'], speed['inference-qwen2.5-coder-1.5b.json']) * 60:.0f}"
      " min apart")

# %% [markdown]
# The two two-thread rows of the embedded model have the same model and the same settings, yet their speeds differ
# by the factor printed above: they were recorded many hours apart, on a machine shared with other work (the first
# before the kit recorded the CPU's features, so not even the CPU is known to be the same). A benchmark number is a
# property of a machine *at a moment*; that is why every record carries its conditions, and why the run-to-run
# values are kept beside the median.
#
# The two one-thread rows were recorded on the same machine, minutes apart: they do compare.

# %% jupyter={"source_hidden": true}
small, large = speed["inference-gemma3-270m-threads1.json"], speed["inference-qwen2.5-coder-1.5b.json"]
_times = small["gen_tokens_per_s"] / large["gen_tokens_per_s"]
_bucket = "about as fast (1x)" if _times < 1.8 else "about 3x" if _times < 6 else "about 10x or more"
predict("On one thread each, how many times faster does the 270M model generate tokens than the 1.5B one "
        "(almost six times as many parameters)?",
        ["about as fast (1x)", "about 3x", "about 10x or more"], _bucket,
        "Writing one token reads every weight once, so on a CPU the speed follows the bytes of the weights: the "
        "1.5B model is several times slower. Less than its size alone would suggest: part of each step does "
        "not grow with the model (sampling over the vocabulary, Python's own work per token).")

# %% tags=["reveal"]
print(f"270M over 1.5B, one thread each: prompt {small['prompt_tokens_per_s'] / large['prompt_tokens_per_s']:.1f}x, "
      f"free generation {small['gen_tokens_per_s'] / large['gen_tokens_per_s']:.1f}x, "
      f"grammar generation {small['gen_grammar_tokens_per_s'] / large['gen_grammar_tokens_per_s']:.1f}x faster")
for r in (small, large):
    extra_ms = 1000 / r["gen_grammar_tokens_per_s"] - 1000 / r["gen_tokens_per_s"]
    print(f"{r['registered_model']}: {1000 / r['gen_tokens_per_s']:.0f} ms per free token; "
          f"the grammar (masking first) adds {extra_ms:.0f} ms to each")

# %% [markdown]
# What the grammar adds to each token follows the vocabulary it checks, not the model's size: masking checks
# every vocabulary entry against the grammar at every step — Qwen's 151,936 entries cost it less per step than
# Gemma's 262,144 cost the small model — while the 1.5B model's forward pass costs far more, so the grammar's
# share of its step is small.
#
# ## The grammar's price, and a lazy grammar
#
# [Grammar-constrained decoding](../docs/glossary.md) is how the planner gets output that always parses. The
# plain way *masks first*: before every token, every vocabulary entry that would break the grammar is removed,
# then the best remaining one is taken. For a small model with a big vocabulary that costs more than the model's
# own forward pass.
#
# A **lazy grammar** does what llama.cpp's own sampler does: take the best token *without* the grammar, check only
# that one token, and mask the whole vocabulary only when it is rejected. Under greedy decoding this picks the
# same token, by a short argument: if the best token is allowed, removing others does not change the maximum; if
# it is not, the lazy path masks and picks exactly as before. Under sampling (temperature above 0) it is *not*
# the same: the random draws are used differently, and the top-k, top-p and min-p cuts are taken over different
# candidates, so the distribution shifts towards allowed tokens the unconstrained model already likes.
# `LlamaCppBackend(grammar_mode="auto")`, the default, is therefore lazy for greedy calls only; `"lazy"` and
# `"mask"` force one way.

# %%
lazy = speed["inference-lazy-grammar.json"]
print(f"free generation      {lazy['gen_tokens_per_s']:6.1f} tokens/s")
print(f"masking first        {lazy['gen_grammar_tokens_per_s']:6.1f} tokens/s   "
      f"grammar/free {lazy['grammar_to_free_ratio']:.2f}")
print(f"lazy grammar         {lazy['gen_lazy_grammar_tokens_per_s']:6.1f} tokens/s   "
      f"grammar/free {lazy['lazy_grammar_to_free_ratio']:.2f}   "
      f"(same token ids as masking in this benchmark: {lazy['lazy_grammar_same_tokens']})")

# %% [markdown]
# One benchmark prompt giving the same tokens is not a proof. `labkit bench equality` replays the prompts the
# comparison of notebook 06 recorded in its cassettes (the embedded model's recording), greedily, on each path, and
# compares the token ids. Which prompts, and how many of each arm, the record says:

# %%
equality = record("equality.json")
_limit = equality["limit_per_arm"]
print(f"replayed from {equality['source']}: "
      + ", ".join(f"{arm} {n}" for arm, n in equality["prompts"].items())
      + (f" (the first {_limit} distinct prompts of each arm)" if _limit else " (every distinct recorded prompt)"))

# %% jupyter={"source_hidden": true}
_lazy_rows = [c for c in equality["comparisons"] if c["comparison"] == "lazy-vs-mask"]
_differ = sum(c["differ"] for c in _lazy_rows)
_prompts = sum(c["prompts"] for c in _lazy_rows)
_answer = "on none" if _differ == 0 else ("on a few" if _differ <= _prompts // 10 else "on many")
predict(f"Greedy decoding, {_prompts} recorded grammar-constrained prompts, lazy grammar against masking first: "
        "on how many prompts do the generated tokens differ?",
        ["on none", "on a few", "on many"], _answer,
        "Greedy decoding takes the maximum, and masking away tokens that were not the maximum cannot change "
        "it; when the maximum is refused, the lazy path falls back to masking. The argument says none, and the "
        "replay checks it on every prompt it replays. With sampling, the same test would find differences.")

# %% [markdown]
# ## Prefix reuse: the KV cache of a shared beginning
#
# The [KV cache](../docs/glossary.md) holds the keys and values of every token already read, so that each new
# token attends to them without recomputing them. Every prompt of a prompt-only arm starts with the same
# instruction, tool list and worked episodes (one per family); keeping the KV state of that shared *prefix* and
# evaluating only the rest saves most of the prompt's cost. **Prefix reuse** is that saving. But evaluating a prompt in two pieces instead of one can change
# floating-point results, so a reused prefix is not the same computation as a fresh one-piece prompt.
#
# labkit makes reuse equal *by construction*: a prompt that starts with a **declared** prefix is always evaluated
# as two batches, [prefix][rest], whether the prefix's state is kept or computed afresh; the cache then changes
# only the time. Whether two batches give the same tokens as one batch is a separate question, measured too
# (`two-batches-vs-one`): it says whether declaring the prefix changed an answer at all. The whole record:

# %% tags=["reveal"]
from labkit.reading.equality import render_equality

print(render_equality(equality))

# %% [markdown]
# Read the rows by what they back. `lazy-vs-mask` and `reuse-vs-fresh` are the two speed-ups: a difference there
# would be a bug. `two-batches-vs-one` is the price of declaring a prefix at all: the comparison's recordings were
# made with the two batches, so they replay exactly, but a server that reads each prompt in one batch may answer
# the prompts counted there differently. The record's last line names every row behind a default that differs.

# %% jupyter={"source_hidden": true}
from labkit.inference.goals import PER_CALL_ARM  # the prompt + grammar arm: both optimisations reach its calls

_timing = equality["timing"][PER_CALL_ARM]
_speedup = _timing["split-fresh"]["mean_s"] / _timing["split-reuse"]["mean_s"]
_choice = "under 1.3x: the prefix is cheap" if _speedup < 1.3 else "1.3x to 4x" if _speedup < 4 else "4x or more"
predict("Same two-batch evaluation, lazy grammar on both: how much faster is a prompt + grammar call when the "
        "prefix's KV state is kept than when it is computed afresh?",
        ["under 1.3x: the prefix is cheap", "1.3x to 4x", "4x or more"], _choice,
        "The prefix is most of each prompt, so keeping it saves most of the prompt's evaluation. What remains — "
        "each prompt's own text and the tokens it generates — is not touched by the cache, which bounds the gain.")

# %% tags=["reveal"]
for path in ("mask", "split-fresh", "split-reuse"):
    print(f"{PER_CALL_ARM}, {path:<12} {_timing[path]['mean_s']:.3f} s per call ({_timing[path]['calls']} calls)")
print(f"kept prefix against fresh two batches: {_speedup:.2f}x; against today's path (one batch, masking "
      f"first): {equality['mean_call_speedup_mask_to_split_reuse'][PER_CALL_ARM]:.2f}x")
if _timing["split-fresh"]["mean_s"] > _timing["mask"]["mean_s"]:
    print("note: split-fresh took longer than today's path although it does no more work (the lazy grammar, the "
          "same tokens in two batches): each path ran in its own pass, minutes apart, on a machine shared with other "
          "jobs, and met another load; the kept-prefix ratio above carries the same noise")

# %% [markdown]
# And the whole comparison, as `make experiment` runs it (every arm on the ten headline test tasks, greedy), with
# both speed-ups off and then on, back to back in one process (`labkit bench experiment`). Every run must have the
# same counts, token totals and grade in both; only the seconds may change. Arms without a model take no time
# either way; the prompt-only arms gain from their declared prefix (the worked episodes, read once per arm instead
# of once per call), every grammar-constrained call from the lazy grammar:

# %%
from labkit.reading.speed import render_experiment_speed

print(render_experiment_speed(record("experiment-speed-v2.json")))

# %% [markdown]
# ## CPU against GPU, recorded
#
# A GPU machine was lent once: one NVIDIA H200 with a 16-core CPU. `scripts/gpu_bench.sh` builds llama-cpp-python
# with CUDA there and runs the same benchmark with every layer offloaded (`n_gpu_layers=-1`), then on the CPU
# with 16 threads, on the same machine (`data/bench/gpu/`, with its README).

# %%
gpu, cpu16 = record("gpu/gemma3-270m-gpu.json"), record("gpu/gemma3-270m-cpu16.json")
print("first row: every layer on the GPU; second row: the CPU alone, 16 threads")
print(render_inference_comparison([gpu, cpu16]))
print(f"offloaded layers: GPU run {gpu['n_gpu_layers']}, CPU run {cpu16['n_gpu_layers']}; "
      f"GPU build: {gpu['gpu_offload_supported']}; {gpu['prompt_tokens']} prompt tokens, "
      f"{gpu['gen_tokens_max']} generated")

# %% jupyter={"source_hidden": true}
_ratio = gpu["gen_grammar_tokens_per_s"] / cpu16["gen_grammar_tokens_per_s"]
_pick = "about the same" if 0.7 < _ratio < 1.4 else "GPU about 3x faster" if _ratio < 6 else "GPU about 10x faster"
predict("Generation under the JSON grammar, masking first: how does the GPU compare with 16 CPU threads on the "
        "same machine?", ["GPU about 10x faster", "GPU about 3x faster", "about the same"], _pick,
        "The mask is computed on the CPU against all 262,144 vocabulary entries at every step, whatever device "
        "runs the model; it dwarfs the GPU's forward pass. A lazy grammar removes most of that cost.")

# %% tags=["reveal"]
for key, what in (("prompt_tokens_per_s", "prompt processing"), ("gen_tokens_per_s", "free generation"),
                  ("gen_grammar_tokens_per_s", "grammar generation")):
    print(f"{what:<20} GPU {gpu[key]:9.1f}  CPU x16 {cpu16[key]:8.1f} tokens/s   GPU/CPU {gpu[key] / cpu16[key]:.1f}x")

# %% [markdown]
# Reading a prompt is many tokens per step, the GPU's strength; writing is one token per step, and for a model this
# small one step is too little work to keep a GPU busy. The GPU runs were recorded before the lazy grammar existed:
# their grammar rows mask first. What this installation can do, and how to rebuild it for a GPU (`docs/gpu.md`):

# %%
from labkit.inference import build_info, gpu_advice

info = build_info()
print("llama-cpp-python", info.version, "| can offload to a GPU:", info.gpu_offload)
print(gpu_advice(info.gpu_offload, info.version, platform="linux"))

# %% [markdown]
# ## Will it fit? Estimating memory from the GGUF file
#
# A model needs memory for three things:
#
# * **weights** — the tensor table in the GGUF file gives each tensor's exact size for its quantization;
# * **the KV cache** — per layer, `cells × KV heads × (key dim + value dim) × 2 bytes` (f16). Grouped-query
#   attention matters a lot: Gemma 3 270M has 4 query heads but stores only 1 KV head. Sliding-window layers could
#   keep only their window, but llama.cpp keeps the full context for them by default (`swa_full=True`);
# * **scratch (compute) space** — here dominated by the logits of a 512-token batch over a 262,144-token
#   vocabulary: 512 MiB, more than the weights.
#
# The estimate for the embedded model on a GPU, all layers offloaded, as the context grows (the last section checks
# it against what llama.cpp itself reports when it loads the model):

# %%
from labkit.inference import estimate_memory, render_fit_table, worked_example

for n_ctx in (2048, 8192, 32768):
    e = estimate_memory(arch, n_ctx, n_gpu_layers=-1)
    print(f"n_ctx {n_ctx:>6}: GPU {e.gpu_total / 2**20:7.1f} MiB "
          f"(weights {e.gpu_weights / 2**20:.1f}, KV {e.gpu_kv / 2**20:.1f}, compute {e.compute / 2**20:.1f}); "
          f"host {e.host_total / 2**20:.1f} MiB (token embedding stays on the CPU)")

# %% [markdown]
# ### Worked example: which 7B and 13B quantizations fit a 12 GB GPU?
#
# No 7B or 13B file is available offline, so Llama-2-7B and Llama-2-13B are described by their published
# architecture numbers (layers, d_model, heads, KV heads, FFN width, vocabulary), with weights sized by *nominal*
# average bits per weight (Q4_K_M 4.84, Q5_K_M 5.68 — llama.cpp's quantize README for Llama 2 7B; Q8_0 8.5 by its
# format). They go through the same estimator. Llama 2 has no grouped-query attention below 70B, so its KV cache is
# large: 0.5 MiB per token for 7B. (16k tokens is beyond Llama 2's trained 4k context; the memory is what such a
# context would take.)

# %%
print(render_fit_table(worked_example(vram_gib=12.0, contexts=(4096, 16384))))

# %% [markdown]
# At 4k context every 7B quantization fits, and 13B only as Q4_K_M. At 16k nothing fits fully: the f16 KV cache
# alone is 8 GiB (7B) or 12.5 GiB (13B); the last column says how many layers could still be offloaded. Two
# levers change that, both at some cost: a quantized KV cache (`q8_0` halves it) and flash attention (no full
# attention-score matrix in the scratch space):

# %%
print(render_fit_table(worked_example(vram_gib=12.0, contexts=(16384,), type_k="q8_0", type_v="q8_0",
                                      flash_attn=True)))

# %% [markdown]
# From a terminal: `labkit fit --ctx 4096 --vram 12` (the embedded model), `labkit fit --model FILE.gguf
# --ctx 8192 --vram 24`, or `labkit fit --arch 7b --arch 13b --ctx 4096 --ctx 16384 --vram 12`.
#
# ## Live, on this machine
#
# Everything so far was read from files. This section loads the model — the only one that does — so it takes a
# minute, and its numbers are your machine's. First, the seed and the temperature:

# %%
from labkit.inference import capture_llama_log
from labkit.llm import open_llama

with capture_llama_log():  # keeps llama.cpp's load log out of the notebook
    llm = open_llama(model_path, n_ctx=512, n_threads=2, n_gpu_layers=0, seed=0, verbose=False)

prompt = "The three primary colours are"


def complete(temperature: float, seed: int) -> str:
    llm.reset()  # independent calls: no KV-cache prefix reuse between them
    out = llm.create_completion(prompt, max_tokens=12, temperature=temperature, seed=seed)
    return out["choices"][0]["text"]


greedy_a, greedy_b = complete(0.0, seed=1), complete(0.0, seed=2)
warm_a, warm_b, warm_c = complete(0.9, seed=7), complete(0.9, seed=7), complete(0.9, seed=8)
llm.close()

# %% jupyter={"source_hidden": true}
predict("Greedy decoding (temperature 0), the same prompt, seed 1 and then seed 2: is the text the same?",
        ["yes", "no", "only the first token"], "yes" if greedy_a == greedy_b else "no",
        "At temperature 0 the sampler always takes the most likely token; the seed is never used. At 0.9 the "
        "seed decides the draws: the same seed repeats the text, another seed may not.")

# %% tags=["reveal"]
print("greedy, seeds 1 and 2 give the same text:", greedy_a == greedy_b)
print("t=0.9, seed 7 twice gives the same text:", warm_a == warm_b)

# %%
# NBVAL_IGNORE_OUTPUT
print("greedy          :", repr(greedy_a))
print("t=0.9, seed 7   :", repr(warm_a))
print("t=0.9, seed 8   :", repr(warm_c))

# %% [markdown]
# Now the benchmark, the same function as `labkit bench inference` but with small sizes so the notebook stays
# quick, beside the recorded run it is closest to (`inference-lazy-grammar.json`, two threads):

# %%
# NBVAL_IGNORE_OUTPUT
import os

from labkit.inference import bench_inference

live = bench_inference(n_ctx=512, prompt_tokens=128, gen_tokens=32, runs=2, threads=2)
print(f"{'':24}{'live':>12}{'recorded':>12}")
for key, what in (("prompt_tokens_per_s", "prompt tokens/s"), ("gen_tokens_per_s", "free tokens/s"),
                  ("gen_grammar_tokens_per_s", "masking-first tokens/s"),
                  ("gen_lazy_grammar_tokens_per_s", "lazy-grammar tokens/s")):
    print(f"{what:<24}{live[key]:>12.1f}{lazy[key]:>12.1f}")
print("\nconditions that differ:")
for key in ("model_sha256", "llama_cpp_python", "cpu_count", "threads", "llama_system_info", "prompt_tokens",
            "gen_tokens_max", "runs"):
    if live[key] != lazy[key]:
        print(f"  {key}: live {str(live[key])[:50]!r}, recorded {str(lazy[key])[:50]!r}")
print(f"live free-generation runs: {', '.join(f'{x:.1f}' for x in live['gen_tokens_per_s_runs'])} tokens/s; "
      f"recorded: {', '.join(f'{x:.1f}' for x in lazy['gen_tokens_per_s_runs'])}")
print("load average now (1, 5, 15 min):", ", ".join(f"{x:.2f}" for x in os.getloadavg()))

# %% [markdown]
# Why the live numbers differ from the recorded ones, in the order they usually matter:
#
# 1. **A busy machine.** A token costs a few milliseconds of two threads; anything else running (another notebook,
#    a test suite, a browser) takes cores from it. A load average above the number of CPUs means work is waiting,
#    and one slow run out of two pulls the median down. That is the usual cause of one run at half the speed of
#    the other.
# 2. **Another CPU.** Its cores, clock and vector instructions (`llama_system_info`) set the speed of every
#    step; a laptop, a cloud VM and a desktop differ by factors.
# 3. **Shorter runs.** 128 prompt tokens and 32 generated tokens, two runs, against 256 and 48, three runs: short
#    runs weigh start-up and timer noise more.
#
# Lazy grammar's *ratio* to free generation moves much less than the raw speeds, because both are measured in the
# same runs, on the same machine, at the same moment. When you compare two ways of doing something, compare them
# back to back, as the recorded runs do.
#
# Last, the memory estimate against llama.cpp's own report (its log lines `... buffer size = N MiB`, captured when
# it loads the model):

# %%
from labkit.inference import check_against_load

for swa_full in (True, False):
    check = check_against_load(model_path, 4096, swa_full=swa_full)
    print(check.render())
    print()

# %%
# NBVAL_IGNORE_OUTPUT
print(f"CPU_REPACK buffer on this CPU: {check.repack_mib():.2f} MiB (not modelled)")

# %% [markdown]
# Weights and KV cache agree to the byte (to the log's 0.01 MiB rounding); the scratch estimate is a rule of thumb
# a little under the real figure. Not modelled: the GPU runtime's own memory (CUDA context, library workspaces) —
# the fit decision keeps an *assumed* 0.5 GiB headroom for it — and the CPU-only "repacked" weight copies llama.cpp
# makes for fast SIMD kernels (never on a GPU; their size depends on the CPU's instruction set, so it is printed
# apart).
#
# ## Wrap-up quiz
#
# Answer in the boxes and press *check answers*; a wrong answer gets a hint, not the answer. Code answers are one
# line of Python, evaluated in this notebook: the records `gpu`, `cpu16`, `lazy` and `equality`, the model's
# `arch` and `estimate_memory` are there to use.

# %% jupyter={"source_hidden": true}
from labkit import Choice, CodeLine, Quiz

quiz = Quiz([
    Choice("Why does a machine's decision call use temperature 0?",
           ["the same prompt then gets the same answer, so a run can be replayed and two paths compared",
            "it makes the model faster", "it makes the answer correct"],
           "the same prompt then gets the same answer, so a run can be replayed and two paths compared",
           "Greedy decoding is reproducible whatever the seed; it is neither faster nor more often right."),
    Choice("What does a GGUF file hold?",
           ["the weights (usually quantized), the tokenizer and the model's metadata, in one file",
            "only the weights; the tokenizer is fetched when the model loads",
            "a llama.cpp build compiled for one CPU"],
           "the weights (usually quantized), the tokenizer and the model's metadata, in one file",
           "That is why the memory estimate can be made from the file's header alone."),
    Choice("With temperature 0.5, what does a lazy grammar do to the generated tokens?",
           ["it can change them, so labkit uses it only for greedy calls", "nothing: it is always identical",
            "it makes them ignore the grammar"],
           "it can change them, so labkit uses it only for greedy calls",
           "Sampling draws from different candidate sets on the two paths; only the maximum is the same."),
    Choice("Why is a prompt with a declared prefix always evaluated in two batches, even when nothing is cached?",
           ["so the cache changes only the time: two batches can round differently from one",
            "llama.cpp cannot evaluate a long prompt in one batch", "to save memory"],
           "so the cache changes only the time: two batches can round differently from one",
           "Kept or fresh, the prefix is then the same computation; the token-by-token replay checks the rest."),
    CodeLine("Write the line that gives how many times faster the recorded GPU run generated free tokens than "
             "16 CPU threads on the same machine.",
             lambda v: abs(v - gpu["gen_tokens_per_s"] / cpu16["gen_tokens_per_s"]) < 1e-9,
             hint="divide the GPU record's free-generation speed by the CPU record's (the key ends in _tokens_per_s)",
             explain="gpu['gen_tokens_per_s'] / cpu16['gen_tokens_per_s']"),
    CodeLine("Write the line that gives the milliseconds per generated token of the embedded model's recorded free "
             "generation in the record `lazy`.",
             lambda v: abs(v - 1000 / lazy["gen_tokens_per_s"]) < 1e-9,
             hint="tokens per second turned into milliseconds per token: 1000 divided by the speed",
             explain="1000 / lazy['gen_tokens_per_s']"),
    CodeLine("Write the line that gives the KV cache, in MiB, of the embedded model for a context of 8192 tokens, "
             "all layers on the GPU.",
             lambda v: abs(v - estimate_memory(arch, 8192, n_gpu_layers=-1).gpu_kv / 2**20) < 1e-9,
             hint="estimate_memory(arch, n_ctx, n_gpu_layers=...) returns an estimate whose gpu_kv is in bytes",
             explain="estimate_memory(arch, 8192, n_gpu_layers=-1).gpu_kv / 2**20"),
], namespace=globals())
quiz

# %% [markdown]
# ## Take-aways
#
# - A GGUF file holds the quantized weights, the tokenizer and the architecture; its header alone is enough to
#   estimate memory.
# - Decisions use temperature 0: the same prompt gives the same answer, so runs replay and code paths can be
#   compared token by token.
# - Tokens per second are a property of a machine at a moment: read a benchmark with its conditions and its
#   run-to-run spread, and compare two methods back to back.
# - On a CPU, generation speed follows the bytes of the weights; masking a grammar over a large vocabulary can cost
#   more than the model, on a GPU as well as on a CPU.
# - A lazy grammar and a kept prefix make calls faster without changing a token under greedy decoding; the equality
#   is shown by replaying recorded prompts, which also show where cutting a prompt into two batches is not free.
# - Memory is weights + KV cache + scratch space; the KV cache grows with the context, and grouped-query attention
#   and a quantized cache shrink it.
#
# ## Your turn
#
# Run `labkit bench inference` in a terminal twice, once with nothing else running and once during a test suite,
# and compare the medians and the runs. Then `labkit fit --ctx 8192 --vram 8` for the embedded model and
# `labkit fit --arch 7b --ctx 4096 --vram 8`: what has to give for the 7B model to fit?
#
# ## Appendix: the kit's speed goals and the recorded runs
#
# Not part of the lesson. The kit set itself speed goals for this work; this table reads each goal's record in
# `data/bench/` and says whether it is met, by how much it is met or missed, and why, from the same record.

# %%
from labkit.inference import render_speed_goals, speed_goals

print(render_speed_goals(speed_goals(BENCH)))
