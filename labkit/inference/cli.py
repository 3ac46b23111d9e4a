"""Inference subcommands: ``labkit bench inference|parallel`` and ``labkit fit``."""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from labkit.core.errors import LabkitError
from labkit.inference.fit import (
    DEFAULT_RESERVE_GIB,
    GIB,
    LLAMA2,
    NOMINAL_BPW,
    FitDecision,
    check_fit,
    nominal_arch,
    render_fit_table,
)
from labkit.inference.gguf_meta import ArchSpec, read_gguf_arch


def _cmd_bench_inference(args: argparse.Namespace) -> int:
    from labkit.inference.bench import bench_inference, render_inference
    from labkit.inference.gpu import gpu_advice

    if args.n_gpu_layers != 0:
        import llama_cpp

        if not llama_cpp.llama_supports_gpu_offload():
            raise LabkitError(
                f"--n-gpu-layers {args.n_gpu_layers} asked for GPU offload, but this llama-cpp-python "
                "build cannot offload (the layers would silently stay on the CPU)",
                gpu_advice(False, llama_cpp.__version__))
    result = bench_inference(args.model, n_gpu_layers=args.n_gpu_layers, threads=args.threads,
                             n_ctx=args.n_ctx, prompt_tokens=args.prompt_tokens, gen_tokens=args.gen_tokens,
                             runs=args.runs)
    print(json.dumps(result, indent=2) if args.json else render_inference(result))
    return 0


def _cmd_bench_parallel(args: argparse.Namespace) -> int:
    from labkit.inference.parallel import bench_parallel, render_parallel

    result = bench_parallel(args.model, widths=args.sequences, n_gpu_layers=args.n_gpu_layers,
                            threads=args.threads, gen_tokens=args.gen_tokens, runs=args.runs)
    if args.out:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=2) if args.json else render_parallel(result))
    return 0


def _decision_dict(d: FitDecision) -> dict[str, Any]:
    e = d.estimate
    out = asdict(e)
    out.update(gpu_total_bytes=e.gpu_total, host_total_bytes=e.host_total, need_gib=round(d.need_gib, 4),
               vram_gib=d.vram_gib, reserve_gib=d.reserve_gib, fits=d.fits, max_gpu_layers=d.max_gpu_layers,
               n_layer=d.n_layer)
    return out


def _describe(arch: ArchSpec) -> str:
    kv = sorted(set(arch.n_head_kv))
    swa = (f", sliding window {arch.n_swa} on {sum(arch.swa_layers)} of {arch.n_layer} layers"
           if arch.n_swa else "")
    return (f"{arch.name} ({arch.architecture}): {arch.n_layer} layers, d_model {arch.n_embd}, "
            f"{arch.n_head} heads, {'/'.join(map(str, kv))} KV heads, head dim {arch.head_dim_k}, "
            f"vocab {arch.n_vocab}{swa}; weights {arch.weight_bytes / GIB:.3f} GiB [{arch.source}]")


def _model_file(name_or_path: str | None) -> Path:
    """A ``--model`` value (registered name, GGUF path, or None for the embedded model) as a file."""
    from labkit.llm.modelfile import embedded_model_path
    from labkit.llm.models import model_names, resolve_model

    if name_or_path is not None and not name_or_path.endswith(".gguf") and name_or_path not in model_names():
        raise LabkitError(f"--model {name_or_path!r} is neither a registered model nor a .gguf file",
                          f"use one of: {', '.join(model_names())} (see `labkit models list`), or a .gguf path.")
    path, _kind = resolve_model(name_or_path)
    return embedded_model_path() if path is None else path


def _cmd_fit(args: argparse.Namespace) -> int:
    if args.model and args.arch:
        raise LabkitError("give either --model or --arch, not both",
                          "--model reads a real GGUF file; --arch uses published Llama-2 numbers.")
    archs: list[ArchSpec]
    if args.arch:
        archs = [nominal_arch(a, q) for a in args.arch for q in (args.quant or list(NOMINAL_BPW))]
    else:
        archs = [read_gguf_arch(_model_file(m)) for m in (args.model or [None])]
    options = {"type_k": args.kv_type, "type_v": args.kv_type, "flash_attn": args.flash_attn,
               "swa_full": not args.swa_small}
    decisions = [check_fit(arch, ctx, args.vram, args.n_gpu_layers, reserve_gib=args.reserve, **options)
                 for arch in archs for ctx in (args.ctx or [4096])]
    if args.json:
        print(json.dumps([_decision_dict(d) for d in decisions], indent=2))
        return 0
    notes: list[str] = []
    for arch in archs:
        print(_describe(arch))
        notes += [n for n in arch.notes if n not in notes]
    for note in notes:
        print(f"note: {note}")
    print(f"KV cache {args.kv_type}, flash attention {'on' if args.flash_attn else 'off'}, "
          f"n_gpu_layers {args.n_gpu_layers}")
    print(render_fit_table(decisions))
    return 0


def register(commands: argparse._SubParsersAction, bench: argparse._SubParsersAction) -> None:
    """Add ``bench inference|parallel`` under ``bench``, ``fit`` under the top-level commands."""
    b = bench.add_parser("inference", help="load time, prompt and generation tokens/s, grammar cost")
    b.add_argument("--model", help="a registered model name (`labkit models list`) or a .gguf file "
                   "(default: the embedded Gemma 3 270M)")
    b.add_argument("--n-gpu-layers", type=int, default=0, help="layers to offload, -1 = all (default 0)")
    b.add_argument("--threads", type=int, help="CPU threads (default: all cores)")
    b.add_argument("--n-ctx", type=int, default=1024, help="context size (default 1024)")
    b.add_argument("--prompt-tokens", type=int, default=256, help="prompt length (default 256)")
    b.add_argument("--gen-tokens", type=int, default=48, help="tokens to generate per run (default 48)")
    b.add_argument("--runs", type=int, default=3, help="timed runs after one warm-up (default 3)")
    b.add_argument("--json", action="store_true", help="print the results as JSON")
    b.set_defaults(func=_cmd_bench_inference)

    q = bench.add_parser("parallel", help="aggregate generated tokens/s with several sequences in one batch")
    q.add_argument("--model", help="a registered model name (`labkit models list`) or a .gguf file "
                   "(default: the embedded Gemma 3 270M)")
    q.add_argument("--sequences", type=int, nargs="+", default=[1, 2, 4, 8],
                   help="batch widths to measure (default 1 2 4 8; 1 is always measured)")
    q.add_argument("--n-gpu-layers", type=int, default=0, help="layers to offload, -1 = all (default 0)")
    q.add_argument("--threads", type=int, help="CPU threads (default: all cores)")
    q.add_argument("--gen-tokens", type=int, default=64, help="tokens to generate per sequence (default 64)")
    q.add_argument("--runs", type=int, default=3, help="timed runs per width after one warm-up (default 3)")
    q.add_argument("--out", help="write the result as JSON here (e.g. data/bench/parallel-cpu.json)")
    q.add_argument("--json", action="store_true", help="print the result as JSON")
    q.set_defaults(func=_cmd_bench_parallel)

    p = commands.add_parser("fit", help="estimate weights + KV cache memory and whether it fits a GPU")
    p.add_argument("--model", action="append",
                   help="a registered model name (`labkit models list`) or a .gguf file; its own metadata is "
                   "read (repeatable; default: the embedded model)")
    p.add_argument("--arch", action="append", choices=sorted(LLAMA2),
                   help="a published Llama-2 architecture instead of a file (repeatable)")
    p.add_argument("--quant", action="append", choices=sorted(NOMINAL_BPW),
                   help="with --arch: quantisation by nominal bits/weight (repeatable; default all)")
    p.add_argument("--ctx", type=int, action="append", help="context length in tokens (repeatable; default 4096)")
    p.add_argument("--vram", type=float, required=True, help="GPU memory in GiB, e.g. 12")
    p.add_argument("--n-gpu-layers", type=int, default=-1, help="layers to offload, -1 = all (default)")
    p.add_argument("--kv-type", default="f16", help="KV cache type: f16 (default), q8_0, q4_0 ...")
    p.add_argument("--flash-attn", action="store_true", help="assume flash attention (smaller scratch)")
    p.add_argument("--swa-small", action="store_true",
                   help="sliding-window layers keep only their window (swa_full=False)")
    p.add_argument("--reserve", type=float, default=DEFAULT_RESERVE_GIB,
                   help=f"GiB kept free for the GPU runtime (assumed, default {DEFAULT_RESERVE_GIB})")
    p.add_argument("--json", action="store_true", help="print the decisions as JSON")
    p.set_defaults(func=_cmd_fit)
