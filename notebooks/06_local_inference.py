# %% [markdown]
# # 06 — Local inference: speed, memory and the GPU question
#
# The workers in this kit are small models running in-process through llama.cpp. Before trusting them
# inside a state machine we need to know three practical things about them:
#
# 1. **which parameters matter** when loading and calling a model;
# 2. **how fast** it is on *this* machine — reading a prompt, writing tokens, and writing tokens under a
#    JSON-schema grammar (the constrained decoding the planner uses);
# 3. **how much memory** a model needs, and whether a bigger one would fit a given GPU.
#
# Every speed figure below is measured when this notebook runs, on the machine that runs it, and printed
# with its provenance (model hash, llama-cpp-python version, threads). Those cells are marked so that
# nbval does not compare their values — your machine will differ. Everything else is deterministic.

# %%
from labkit.inference import (
    bench_inference,
    build_info,
    check_against_load,
    default_model_path,
    estimate_memory,
    gpu_advice,
    read_gguf_arch,
    render_fit_table,
    render_inference,
    worked_example,
)
from labkit.inference.bench import sha256_of

model_path = default_model_path()
arch = read_gguf_arch(model_path)
print("model:", arch.name, "| file:", model_path.name)
print("sha256:", sha256_of(model_path))
print(f"{arch.n_layer} layers, d_model {arch.n_embd}, {arch.n_head} query heads sharing "
      f"{arch.n_head_kv[0]} KV head, head dim {arch.head_dim_k}, vocabulary {arch.n_vocab}")
print(f"sliding window {arch.n_swa} tokens on layers "
      f"{[i for i, s in enumerate(arch.swa_layers) if s]}; global layers "
      f"{[i for i, s in enumerate(arch.swa_layers) if not s]}")

# %% [markdown]
# ## Loading a model: the parameters that matter
#
# | parameter | what it decides |
# |---|---|
# | `n_ctx` | how many tokens (prompt + output) fit; the KV cache grows linearly with it |
# | `n_threads` / `n_threads_batch` | CPU threads for generation / for prompt processing; more than the physical cores rarely helps |
# | `n_gpu_layers` | how many transformer blocks run on the GPU (`-1` = all); ignored by a CPU-only build |
# | `seed` | the sampler's random seed; same seed + same prompt + same settings = same text |
# | `temperature` | `0` is greedy (always the most likely token): what a state machine wants for decisions |
#
# The model is a *base* model: no chat template, so we use plain completions.

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
warm_a, warm_b = complete(0.9, seed=7), complete(0.9, seed=7)
print("greedy output is the same whatever the seed:", greedy_a == greedy_b)
print("sampled output is the same for the same seed:", warm_a == warm_b)

# %%
# NBVAL_IGNORE_OUTPUT
print("greedy          :", repr(greedy_a))
print("t=0.9, seed 7   :", repr(warm_a))
print("t=0.9, seed 8   :", repr(complete(0.9, seed=8)))
llm.close()

# %% [markdown]
# ## How fast is it here?
#
# `labkit bench inference` (the same function, called with small sizes so the notebook stays quick)
# loads the model several times and reports the median of several runs after one warm-up:
# load time, prompt processing (tokens/s), free greedy generation (tokens/s) and generation under a
# JSON-schema grammar that forces a six-step plan. Run `labkit bench inference` in a terminal for the
# full-size benchmark. The numbers depend on the machine and on whatever else it is doing.

# %%
# NBVAL_IGNORE_OUTPUT
result = bench_inference(n_ctx=512, prompt_tokens=128, gen_tokens=32, runs=2, threads=2)
print(render_inference(result))

# %% [markdown]
# ## The cost of grammar-constrained decoding
#
# Under a grammar, llama.cpp checks candidate tokens against the grammar's state at every step, on the
# CPU, whatever device runs the model. The benchmark above reports the ratio of grammar to free
# generation speed for the plan schema below. The price buys output that always parses — but, as the
# earlier notebooks show, *parses* is not *correct*: the validator still checks every proposal.

# %%
import json

from labkit.inference.bench import PLAN_SCHEMA

print(json.dumps(PLAN_SCHEMA, indent=1))

# %%
# NBVAL_IGNORE_OUTPUT
print(f"grammar / free generation speed on this run: {result['grammar_to_free_ratio']:.2f} "
      f"({result['gen_grammar_tokens_per_s']:.1f} vs {result['gen_tokens_per_s']:.1f} tokens/s)")

# %% [markdown]
# ## Two models, recorded
#
# The run above used small sizes so this notebook stays quick. The full-size benchmark was recorded for
# the embedded model and for the opt-in chat model Qwen2.5-Coder-1.5B-Instruct (`labkit models fetch
# qwen2.5-coder-1.5b`, then `labkit bench inference --model qwen2.5-coder-1.5b`). The table is read from
# the recorded JSON files in `data/bench/`, each with its model hash and conditions; rows recorded with a
# different thread count, or on another machine, do not compare number for number.

# %%
from pathlib import Path

from labkit.inference import read_recorded, render_inference_comparison

BENCH = Path("..") / "data" / "bench"
recorded = [read_recorded(BENCH / name) for name in
            ("inference.json", "inference-gemma3-270m-threads1.json", "inference-qwen2.5-coder-1.5b.json")]
print(render_inference_comparison(recorded))
for r in recorded:
    print(f"{r['model_name']}: sha256 {r['model_sha256'][:16]}…, llama-cpp-python {r['llama_cpp_python']}, "
          f"{r['cpu_count']} CPUs, n_ctx {r['n_ctx']}, prompt {r['prompt_tokens']} tokens")
small, large = recorded[1], recorded[2]  # one thread each, on the same machine
print(f"\n270M over 1.5B, one thread each: prompt {small['prompt_tokens_per_s'] / large['prompt_tokens_per_s']:.1f}x, "
      f"free generation {small['gen_tokens_per_s'] / large['gen_tokens_per_s']:.1f}x, "
      f"grammar generation {small['gen_grammar_tokens_per_s'] / large['gen_grammar_tokens_per_s']:.1f}x faster")
for r in (small, large):
    extra_ms = 1000 / r["gen_grammar_tokens_per_s"] - 1000 / r["gen_tokens_per_s"]
    print(f"{r['model_name']}: the grammar adds {extra_ms:.0f} ms to each generated token "
          f"({1000 / r['gen_tokens_per_s']:.0f} ms without it)")

# %% [markdown]
# Read the last two rows (one thread each, the same shared 2-core machine, a quarter of an hour apart): the
# 1.5B model is several times slower at everything, a little less than its weights are larger (1.04 GiB
# against 0.23 GiB: `labkit fit --model gemma3-270m --model qwen2.5-coder-1.5b --vram 2` reads both files).
# Generating a token reads every weight once, so on a CPU the speed follows the bytes of the weights.
# Its grammar/free ratio is much closer to 1. What the grammar adds to each token follows the vocabulary
# it checks, not the model's size: Qwen's 151,936 tokens cost it less per step than Gemma's 262,144 cost
# the small model, while its forward pass costs far more, so the grammar's share of each step is small. The first row was recorded earlier with two threads on another machine; it is not
# comparable with the other two.

# %% [markdown]
# ## CPU against GPU
#
# **Not measured yet.** The machine that built this notebook has no GPU, and the installed
# llama-cpp-python is a CPU-only build. No GPU figure appears in this kit until a real run produces it:
# `scripts/gpu_bench.sh` builds llama-cpp-python with CUDA on a GPU machine (offline, from sources
# carried in), runs the benchmark with every layer offloaded and the CPU benchmark on the same machine,
# and writes JSON with the GPU/CPU ratios (see `docs/gpu.md`). The goal for this 270M model on a
# data-centre GPU is at least 1,000 generated tokens/s; whether it is met is what that run will say.
#
# What this build can do, and what to do about it:

# %%
info = build_info()
print("llama-cpp-python", info.version, "| can offload to a GPU:", info.gpu_offload)
print(gpu_advice(info.gpu_offload, info.version, platform="linux"))

# %% [markdown]
# ## Will it fit? Estimating memory from the GGUF file
#
# A model needs memory for three things:
#
# * **weights** — the tensor table in the GGUF file gives each tensor's exact size for its quantisation;
# * **the KV cache** — per layer, `cells × KV heads × (key dim + value dim) × 2 bytes` (f16). Grouped-query
#   attention matters a lot: Gemma 3 270M has 4 query heads but stores only 1 KV head. Sliding-window
#   layers could keep only their window, but llama.cpp keeps the full context for them by default
#   (`swa_full=True`);
# * **scratch (compute) space** — here dominated by the logits of a 512-token batch over a 262,144-token
#   vocabulary: 512 MiB, more than the weights.
#
# The estimator reads the file's own metadata. We check it against what llama.cpp itself reports when it
# loads the model (its log lines `... buffer size = N MiB`, captured through `llama_log_set`):

# %%
for n_ctx, swa_full in [(4096, True), (4096, False)]:
    check = check_against_load(model_path, n_ctx, swa_full=swa_full)
    print(check.render())
    print()

# %%
# NBVAL_IGNORE_OUTPUT
print(f"CPU_REPACK buffer on this CPU: {check.repack_mib():.2f} MiB (not modelled)")

# %% [markdown]
# Weights and KV cache agree to the byte (to the log's 0.01 MiB rounding); the scratch estimate is a rule
# of thumb a little under the real figure. Not modelled: the GPU runtime's own memory (CUDA context,
# library workspaces) — the fit decision keeps an *assumed* 0.5 GiB headroom for it — and the CPU-only
# "repacked" weight copies llama.cpp makes for fast SIMD kernels (never on a GPU; their size depends on
# the CPU's instruction set, so it is printed apart, below).
#
# The same estimate for the embedded model on a GPU, all layers offloaded, as the context grows:

# %%
for n_ctx in (2048, 8192, 32768):
    e = estimate_memory(arch, n_ctx, n_gpu_layers=-1)
    print(f"n_ctx {n_ctx:>6}: GPU {e.gpu_total / 2**20:7.1f} MiB "
          f"(weights {e.gpu_weights / 2**20:.1f}, KV {e.gpu_kv / 2**20:.1f}, compute {e.compute / 2**20:.1f}); "
          f"host {e.host_total / 2**20:.1f} MiB (token embedding stays on the CPU)")

# %% [markdown]
# ## Worked example: which 7B and 13B quantisations fit a 12 GB GPU?
#
# No 7B or 13B file is available offline, so we describe Llama-2-7B and Llama-2-13B by their published
# architecture numbers (layers, d_model, heads, KV heads, FFN width, vocabulary) and size their weights
# with *nominal* average bits per weight (Q4_K_M 4.84, Q5_K_M 5.68 — llama.cpp's quantize README for
# Llama 2 7B; Q8_0 8.5 by its format). They go through the same estimator as the real file above.
# Llama 2 has no grouped-query attention below 70B, so its KV cache is large: 0.5 MiB per token for 7B.
# (16k tokens is beyond Llama 2's trained 4k context; the memory is what such a context would take.)

# %%
print(render_fit_table(worked_example(vram_gib=12.0, contexts=(4096, 16384))))

# %% [markdown]
# At 4k context every 7B quantisation fits, and 13B only as Q4_K_M. At 16k nothing fits fully: the f16
# KV cache alone is 8 GiB (7B) or 12.5 GiB (13B); the last column says how many layers could still be
# offloaded. Two levers change that, both at some cost: a quantised KV cache (`q8_0` halves it) and
# flash attention (no full attention-score matrix in the scratch space):

# %%
print(render_fit_table(worked_example(vram_gib=12.0, contexts=(16384,), type_k="q8_0", type_v="q8_0",
                                      flash_attn=True)))

# %% [markdown]
# From a terminal: `labkit fit --ctx 4096 --vram 12` (the embedded model), `labkit fit --model FILE.gguf
# --ctx 8192 --vram 24`, or `labkit fit --arch 7b --arch 13b --ctx 4096 --ctx 16384 --vram 12`.

# %% [markdown]
# ## Faster without changing a token: lazy grammar and prefix reuse
#
# Two costs dominate the comparison's model time, and both can be cut without changing what the model
# writes — where that can be shown, and only there.
#
# **Lazy grammar.** Gemma 3's vocabulary has 262,144 tokens. Masking all of them against the grammar at
# every step costs more than the forward pass of this small model. llama.cpp's own sampler does it
# lazily: pick a token *without* the grammar, check only that one token against the grammar, and run
# the full mask only when it is rejected. Under greedy decoding the result is the same token, by a
# short argument: if the most likely token is allowed, masking the others away does not change the
# maximum; if it is not allowed, the lazy sampler masks and picks exactly as before. Under sampling
# (temperature > 0) it is *not* the same: the random draws are used differently, and the top-k, top-p
# and min-p cuts are taken over different candidate sets, so the distribution shifts towards allowed
# tokens the unconstrained model already likes. `LlamaCppBackend(grammar_mode="auto")`, the default,
# is therefore lazy for greedy calls only; `"lazy"` and `"mask"` force one way.
#
# **Prefix reuse.** Every machine-arm prompt starts with the same instruction and worked decisions.
# Keeping their KV state and evaluating only the rest saves most of the prompt's cost — but evaluating
# a prompt in two pieces instead of one can change floating-point results. labkit makes reuse equal
# *by construction*: a prompt that starts with a **declared** prefix is always evaluated as two batches,
# [prefix][rest], whether the prefix's state is kept or computed afresh; the cache then changes only
# the time. Whether two batches give the same tokens as one is a separate question, measured below;
# reuse is the default only for the prefix where they do (the machine arm's).
#
# The proof: `labkit bench equality` replays every prompt the comparison recorded, greedily, on each
# path and compares the token ids (recorded in `data/bench/equality.json`):

# %%
from pathlib import Path

from labkit.inference import render_equality

bench_dir = Path("..") / "data" / "bench"
equality = json.loads((bench_dir / "equality.json").read_text(encoding="utf-8"))
print(render_equality(equality))

# %% [markdown]
# The same decoding, faster. The grammar's price in `labkit bench inference` (recorded in
# `data/bench/inference-lazy-grammar.json`; goal: grammar/free ≥ 0.8), and the machine arm's mean time per call, today's
# path against lazy grammar + prefix reuse (goal: ≥ 3× faster). The machine is shared, so the call times
# are measured twice: once per pass of the equality run above, and in alternating blocks of the same 20
# prompts, seconds apart (`--timing-rounds`, recorded in `data/bench/equality-timing.json`), whose spread
# shows the noise:

# %%
recorded = json.loads((bench_dir / "inference-lazy-grammar.json").read_text(encoding="utf-8"))
print(f"free generation      {recorded['gen_tokens_per_s']:6.1f} tokens/s")
print(f"masking first        {recorded['gen_grammar_tokens_per_s']:6.1f} tokens/s   "
      f"grammar/free {recorded['grammar_to_free_ratio']:.2f}")
print(f"lazy grammar         {recorded['gen_lazy_grammar_tokens_per_s']:6.1f} tokens/s   "
      f"grammar/free {recorded['lazy_grammar_to_free_ratio']:.2f}   "
      f"(same token ids as masking: {recorded['lazy_grammar_same_tokens']}; goal 0.8 "
      f"{'met' if recorded['lazy_grammar_to_free_ratio'] >= 0.8 else 'missed'})")
machine = equality["timing"]["machine-model"]
print(f"machine arm, one pass per path: today {machine['mask']['mean_s']:.3f} s per call, optimised "
      f"{machine['split-reuse']['mean_s']:.3f} s: "
      f"{equality['mean_call_speedup_mask_to_split_reuse']['machine-model']:.2f}x")
timing_file = bench_dir / "equality-timing.json"
if timing_file.exists():
    blocks = json.loads(timing_file.read_text(encoding="utf-8"))["alternating_timing"]
    print(f"machine arm, {blocks['rounds']} alternating blocks of {blocks['prompts_per_block']} prompts: "
          f"median {blocks['ratio_median']:.2f}x (range {blocks['ratio_min']:.2f}-{blocks['ratio_max']:.2f}); "
          f"goal 3x {'met' if blocks['ratio_median'] >= 3 else 'missed'}")
else:
    print("machine arm in alternating blocks: not recorded in this version of the kit")

# %% [markdown]
# And the whole comparison, with both optimisations off and then on, back to back in one process
# (`labkit bench experiment`, recorded in `data/bench/experiment-speed.json`). Every run must have the
# same counts, token totals and model outputs in both; only the seconds may change. At the default
# temperature 0.5 only prefix reuse applies (the lazy grammar would change sampled tokens), and only to
# the machine arm; the prompt-only arms, which spend most of the model time, are unchanged. Run greedily
# (`--temperature 0 --seeds 1`), both optimisations apply; that run is shown when it has been recorded
# (`data/bench/experiment-speed-greedy.json`):

# %%
from labkit.experiment import render_experiment_speed

for name in ("experiment-speed.json", "experiment-speed-greedy.json"):
    if (bench_dir / name).exists():
        print(render_experiment_speed(json.loads((bench_dir / name).read_text(encoding="utf-8"))), end="\n\n")
    else:
        print(f"{name}: not recorded in this version of the kit")
