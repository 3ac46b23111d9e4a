"""Can this llama-cpp-python build use a GPU (a CPU-only build silently ignores ``n_gpu_layers``), and if
not, how to rebuild it so it can."""

from __future__ import annotations

import sys
from dataclasses import dataclass

REBUILD = ('CMAKE_ARGS="{flags}" pip install --force-reinstall --no-cache-dir '
           '"llama-cpp-python=={version}"')


@dataclass(frozen=True)
class BuildInfo:
    """What the installed llama-cpp-python was built with."""

    version: str
    gpu_offload: bool
    system_info: str


def build_info() -> BuildInfo:
    """Ask the installed llama.cpp library what it supports."""
    import llama_cpp

    raw = llama_cpp.llama_print_system_info()
    text = raw.decode("utf-8", errors="replace") if isinstance(raw, bytes) else str(raw)
    return BuildInfo(version=llama_cpp.__version__, gpu_offload=bool(llama_cpp.llama_supports_gpu_offload()),
                     system_info=" ".join(text.split()))


def gpu_advice(gpu_offload: bool, version: str, platform: str | None = None) -> str:
    """What to do about GPU support for the build described (pure, so every machine shows the same text)."""
    platform = platform or sys.platform
    if gpu_offload:
        return (f"llama-cpp-python {version} can offload to a GPU: pass n_gpu_layers=-1 (all layers) "
                "or a layer count; `labkit fit` tells you how many fit.")
    lines = [f"llama-cpp-python {version} was built without GPU support: n_gpu_layers is ignored and "
             "everything runs on the CPU. Rebuild it with the backend for your GPU (compiles llama.cpp, "
             "several minutes):"]
    cuda = REBUILD.format(flags="-DGGML_CUDA=on", version=version)
    metal = REBUILD.format(flags="-DGGML_METAL=on", version=version)
    vulkan = REBUILD.format(flags="-DGGML_VULKAN=on", version=version)
    if platform == "darwin":
        lines += ["  Apple Silicon (Metal; the default build on arm64 macOS already has it):", f"    {metal}"]
    else:
        lines += ["  NVIDIA (CUDA toolkit with nvcc on PATH; set CUDACXX=/usr/local/cuda/bin/nvcc if "
                  "CMake does not find it):", f"    {cuda}",
                  "  AMD, Intel or other GPUs (Vulkan SDK and glslc installed):", f"    {vulkan}"]
    lines += ["  Then check: python -c 'import llama_cpp; print(llama_cpp.llama_supports_gpu_offload())'",
              "  For a GPU machine without network, scripts/gpu_bench.sh builds from carried-in sources "
              "(see docs/gpu.md)."]
    return "\n".join(lines)


def current_gpu_advice() -> str:
    """:func:`gpu_advice` for the llama-cpp-python installed here."""
    info = build_info()
    return gpu_advice(info.gpu_offload, info.version)
