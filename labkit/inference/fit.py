"""Will this model fit? Memory for weights, KV cache and scratch, by llama.cpp's allocation rules (checked
against its log, :mod:`labkit.inference.loadlog`).

Weights: exact tensor bytes; ``n_gpu_layers`` = k offloads the last k blocks, the embedding stays on the
host, the head moves only with every block. KV: per layer ``cells x n_head_kv x (head_dim_k x bytes(type_k)
+ head_dim_v x bytes(type_v))``, cells the context rounded up to 256. Compute: ``4 x n_ubatch x max(n_vocab,
n_head x cells)`` bytes. Not modelled: driver context (``reserve_gib``), repacks, fragmentation, multi-GPU."""

from __future__ import annotations

from dataclasses import dataclass

import gguf

from labkit.core.errors import LabkitError
from labkit.inference.gguf_meta import ArchSpec

GIB = 1024**3
MIB = 1024**2
CELL_PAD = 256  # llama.cpp rounds KV cache sizes up to a multiple of 256 cells
DEFAULT_RESERVE_GIB = 0.5  # assumed headroom for the GPU runtime itself; not measured here

# Nominal architecture numbers of Llama-2 (Touvron et al. 2023, "Llama 2: Open Foundation and
# Fine-Tuned Chat Models", Table 1, and the config.json of meta-llama/Llama-2-{7b,13b}-hf):
# layers, d_model, attention heads, KV heads (no GQA below 70B), FFN width, vocabulary, trained context.
LLAMA2: dict[str, dict[str, int]] = {
    "7b": {"n_layer": 32, "n_embd": 4096, "n_head": 32, "n_head_kv": 32, "n_ff": 11008,
           "n_vocab": 32000, "n_ctx_train": 4096},
    "13b": {"n_layer": 40, "n_embd": 5120, "n_head": 40, "n_head_kv": 40, "n_ff": 13824,
            "n_vocab": 32000, "n_ctx_train": 4096},
}
# Nominal effective bits per weight, averaged over a whole file. Q4_K_M and Q5_K_M are the figures
# llama.cpp's tools/quantize/README.md lists for Llama 2 7B (4.84 and 5.68 BPW; a mix of k-quant types
# per tensor, so the average depends slightly on the model, and we use the 7B figure for 13B too).
# Q8_0 is exact by format: blocks of 32 int8 weights plus one fp16 scale = 34 bytes / 32 = 8.5 bits.
NOMINAL_BPW: dict[str, float] = {"Q4_K_M": 4.84, "Q5_K_M": 5.68, "Q8_0": 8.5}


def kv_type_bytes(type_name: str) -> float:
    """Bytes per stored element of a KV cache type (f16, bf16, f32, q8_0, q4_0, ...)."""
    try:
        qtype = gguf.GGMLQuantizationType[type_name.upper()]
    except KeyError:
        raise LabkitError(f"unknown KV cache type '{type_name}'",
                          "use one of f16, bf16, f32, q8_0, q5_0, q4_0.") from None
    block, size = gguf.GGML_QUANT_SIZES[qtype]
    return size / block


def _pad(n: int, to: int = CELL_PAD) -> int:
    return -(-n // to) * to


def nominal_arch(size: str, quant: str) -> ArchSpec:
    """A Llama-2 architecture from its published numbers (nominal bits per weight), as an ``ArchSpec``."""
    key, q = size.lower(), quant.upper()
    if key not in LLAMA2:
        raise LabkitError(f"no nominal architecture '{size}'", f"choose one of {', '.join(LLAMA2)}.")
    if q not in NOMINAL_BPW:
        raise LabkitError(f"no nominal bits-per-weight figure for '{quant}'",
                          f"choose one of {', '.join(NOMINAL_BPW)}.")
    a, bpw = LLAMA2[key], NOMINAL_BPW[q]
    d, head_dim = a["n_embd"], a["n_embd"] // a["n_head"]
    attn = d * a["n_head"] * head_dim * 2 + d * a["n_head_kv"] * head_dim * 2  # q, o and k, v
    per_layer = attn + 3 * d * a["n_ff"] + 2 * d  # gate, up, down + two norms
    embed = a["n_vocab"] * d

    def size_of(params: int) -> int:
        return int(params * bpw / 8)

    return ArchSpec(
        name=f"Llama-2-{key.upper()} {q}", architecture="llama", n_layer=a["n_layer"], n_embd=d,
        n_head=a["n_head"], n_head_kv=(a["n_head_kv"],) * a["n_layer"], head_dim_k=head_dim,
        head_dim_v=head_dim, n_vocab=a["n_vocab"], n_ctx_train=a["n_ctx_train"],
        layer_bytes=(size_of(per_layer),) * a["n_layer"], input_bytes=size_of(embed),
        output_bytes=size_of(embed + d), source=f"nominal: Llama 2 paper numbers, {bpw} bits/weight",
        notes=("weights sized by a nominal average bits-per-weight, not a real file",))


@dataclass(frozen=True)
class MemoryEstimate:
    """Bytes needed, split by where llama.cpp puts them."""

    arch: str
    n_ctx: int
    n_cells: int
    swa_cells: int
    gpu_layers: int
    output_on_gpu: bool
    gpu_weights: int
    host_weights: int
    gpu_kv: int
    host_kv: int
    compute: int
    output_buffer: int

    @property
    def weights(self) -> int:
        return self.gpu_weights + self.host_weights

    @property
    def kv(self) -> int:
        return self.gpu_kv + self.host_kv

    @property
    def gpu_total(self) -> int:
        return self.gpu_weights + self.gpu_kv + (self.compute if self.gpu_layers else 0)

    @property
    def host_total(self) -> int:
        return (self.host_weights + self.host_kv + self.output_buffer
                + (0 if self.gpu_layers else self.compute))


def estimate_memory(arch: ArchSpec, n_ctx: int, n_gpu_layers: int = 0, *, type_k: str = "f16",
                    type_v: str = "f16", swa_full: bool = True, n_ubatch: int = 512, n_seq: int = 1,
                    flash_attn: bool = False) -> MemoryEstimate:
    """Estimate weights, KV cache and compute buffer for ``n_ctx`` tokens and ``n_gpu_layers`` offloaded
    (-1 or above ``n_layer``: every block and the head)."""
    if n_ctx < 1:
        raise LabkitError(f"context length must be positive, got {n_ctx}", "pass --ctx 4096, for example.")
    if n_gpu_layers < -1:
        raise LabkitError(f"n_gpu_layers must be -1 (all) or >= 0, got {n_gpu_layers}",
                          "use -1 to offload everything, 0 for CPU only.")
    if n_ubatch < 1 or n_seq < 1:
        raise LabkitError("n_ubatch and n_seq must be positive", "keep the defaults (512 and 1).")
    all_layers = n_gpu_layers == -1 or n_gpu_layers > arch.n_layer
    gpu_layers = arch.n_layer if all_layers else n_gpu_layers
    first_gpu = arch.n_layer - gpu_layers
    cells = _pad(n_ctx)
    n_ubatch = min(n_ubatch, n_ctx)  # llama.cpp caps the batch (so the micro-batch) at the requested context
    swa_cells = cells if swa_full else min(cells, _pad(arch.n_swa * n_seq + n_ubatch))
    bk, bv = kv_type_bytes(type_k), kv_type_bytes(type_v)

    gpu_w = host_w = gpu_kv = host_kv = 0
    for i in range(arch.n_layer):
        layer_cells = swa_cells if (arch.swa_layers and arch.swa_layers[i]) else cells
        kv = int(layer_cells * arch.n_head_kv[i] * (arch.head_dim_k * bk + arch.head_dim_v * bv))
        if i >= first_gpu:
            gpu_w += arch.layer_bytes[i]
            gpu_kv += kv
        else:
            host_w += arch.layer_bytes[i]
            host_kv += kv
    host_w += arch.input_bytes
    if all_layers:
        gpu_w += arch.output_bytes
    else:
        host_w += arch.output_bytes - (arch.input_bytes if arch.tied_output else 0)
    score_cols = 0 if flash_attn else arch.n_head * cells
    compute = 4 * n_ubatch * max(arch.n_vocab, score_cols)
    return MemoryEstimate(arch=arch.name, n_ctx=n_ctx, n_cells=cells, swa_cells=swa_cells,
                          gpu_layers=gpu_layers, output_on_gpu=all_layers, gpu_weights=gpu_w,
                          host_weights=host_w, gpu_kv=gpu_kv, host_kv=host_kv, compute=compute,
                          output_buffer=4 * arch.n_vocab * n_seq)


@dataclass(frozen=True)
class FitDecision:
    """Whether the GPU part of an estimate fits into ``vram_gib`` minus the reserved headroom."""

    estimate: MemoryEstimate
    vram_gib: float
    reserve_gib: float
    fits: bool
    max_gpu_layers: int  # the most blocks that fit (n_layer + 1 means "everything, output head too")
    n_layer: int

    @property
    def need_gib(self) -> float:
        return self.estimate.gpu_total / GIB + self.reserve_gib


def check_fit(arch: ArchSpec, n_ctx: int, vram_gib: float, n_gpu_layers: int = -1, *,
              reserve_gib: float = DEFAULT_RESERVE_GIB, **options: object) -> FitDecision:
    """Whether ``n_gpu_layers`` of ``arch`` at ``n_ctx`` fit in ``vram_gib``, and the largest count that
    would; options pass to :func:`estimate_memory`."""
    if vram_gib <= 0:
        raise LabkitError(f"VRAM must be positive, got {vram_gib} GiB", "pass --vram 12 for a 12 GiB card.")
    if reserve_gib < 0:
        raise LabkitError(f"reserve must not be negative, got {reserve_gib}", "use 0 or more GiB.")
    budget = (vram_gib - reserve_gib) * GIB
    est = estimate_memory(arch, n_ctx, n_gpu_layers, **options)  # type: ignore[arg-type]
    best = 0
    for k in range(arch.n_layer + 1, 0, -1):  # memory grows with k, so the first that fits is the largest
        if estimate_memory(arch, n_ctx, k, **options).gpu_total <= budget:  # type: ignore[arg-type]
            best = k
            break
    return FitDecision(estimate=est, vram_gib=vram_gib, reserve_gib=reserve_gib,
                       fits=est.gpu_total <= budget, max_gpu_layers=best,
                       n_layer=arch.n_layer)


def worked_example(vram_gib: float = 12.0, contexts: tuple[int, ...] = (4096, 16384),
                   sizes: tuple[str, ...] = ("7b", "13b"),
                   quants: tuple[str, ...] = ("Q4_K_M", "Q5_K_M", "Q8_0"), *,
                   reserve_gib: float = DEFAULT_RESERVE_GIB, **options: object) -> list[FitDecision]:
    """Which Llama-2 7B/13B quantisations fit ``vram_gib`` fully offloaded, at each context length."""
    return [check_fit(nominal_arch(size, q), ctx, vram_gib, -1, reserve_gib=reserve_gib, **options)
            for size in sizes for q in quants for ctx in contexts]


def render_fit_table(decisions: list[FitDecision]) -> str:
    """A plain-text table of fit decisions, sizes in GiB."""
    width = max([20, *(len(d.estimate.arch) for d in decisions)])
    head = (f"{'model':<{width}} {'ctx':>6} {'weights':>8} {'KV':>7} {'compute':>8} {'GPU need':>9} "
            f"{'VRAM':>6}  fits  (max layers)")
    lines = [head, "-" * len(head)]
    for d in decisions:
        e = d.estimate
        layers = "all" if d.max_gpu_layers > d.n_layer else str(d.max_gpu_layers)
        lines.append(f"{e.arch:<{width}} {e.n_ctx:>6} {e.gpu_weights / GIB:>8.2f} {e.gpu_kv / GIB:>7.2f} "
                     f"{(e.compute if e.gpu_layers else 0) / GIB:>8.2f} {d.need_gib:>9.2f} "
                     f"{d.vram_gib:>6.1f}  {'yes' if d.fits else 'no ':<4}  ({layers})")
    reserve = {d.reserve_gib for d in decisions}
    lines.append(f"GPU need = weights + KV + compute on the GPU + {'/'.join(f'{r:g}' for r in reserve)} GiB "
                 "assumed runtime headroom (not measured)")
    return "\n".join(lines)
