"""What llama.cpp says it allocated: its log captured during one load (``llama_log_set``, put back after)
and its "... buffer size = N MiB" lines parsed, the ground truth for the fit estimator."""

from __future__ import annotations

import ctypes
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from labkit.inference.fit import MIB, MemoryEstimate, estimate_memory
from labkit.inference.gguf_meta import read_gguf_arch

_BUFFER_RE = re.compile(
    r"(?P<device>[\w.\-]+)\s+(?P<kind>model|KV|compute|output) buffer size =\s*(?P<mib>[\d.]+) MiB")


@dataclass
class LlamaLog:
    """Text llama.cpp logged while the capture was active."""

    lines: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "".join(self.lines)


@contextmanager
def capture_llama_log() -> Iterator[LlamaLog]:
    """Collect llama.cpp's log output (all levels) into a :class:`LlamaLog` while the block runs."""
    import llama_cpp

    log = LlamaLog()

    @llama_cpp.llama_log_callback
    def _collect(level: int, text: bytes, user_data: ctypes.c_void_p) -> None:
        log.lines.append(text.decode("utf-8", errors="replace"))

    # Remember whoever was listening (llama-cpp-python's own callback, or another part of the kit's),
    # so that the capture nests and leaves the process as it found it.
    previous, previous_data = llama_cpp.llama_log_callback(), ctypes.c_void_p()
    llama_cpp.llama_log_get(ctypes.byref(previous), ctypes.byref(previous_data))
    llama_cpp.llama_log_set(_collect, ctypes.c_void_p(0))
    try:
        yield log
    finally:  # ours must not be called once this frame (and the ctypes thunk) is gone
        llama_cpp.llama_log_set(previous, previous_data)


@dataclass(frozen=True)
class BufferReport:
    """Buffer sizes (MiB, as logged) by kind, summed over buffers of that kind, and by device."""

    model: dict[str, float]
    kv: dict[str, float]
    compute: dict[str, float]
    output: dict[str, float]


def parse_buffers(text: str) -> BufferReport:
    """Sum the '<device> <kind> buffer size = N MiB' lines of a llama.cpp load log."""
    found: dict[str, dict[str, float]] = {"model": {}, "KV": {}, "compute": {}, "output": {}}
    for m in _BUFFER_RE.finditer(text):
        bucket = found[m.group("kind")]
        bucket[m.group("device")] = bucket.get(m.group("device"), 0.0) + float(m.group("mib"))
    return BufferReport(model=found["model"], kv=found["KV"], compute=found["compute"], output=found["output"])


@dataclass(frozen=True)
class LoadCheck:
    """The estimator's figures next to llama.cpp's own, for one real CPU load."""

    n_ctx: int
    swa_full: bool
    estimate: MemoryEstimate
    report: BufferReport

    def rows(self) -> list[tuple[str, float, float, float]]:
        """(what, estimated MiB, logged MiB, error %) for weights (vs ``CPU_Mapped``), KV, compute, total."""
        est = self.estimate
        weights_logged = sum(v for k, v in self.report.model.items() if "REPACK" not in k)
        pairs = [("weights", est.weights / MIB, weights_logged),
                 ("KV cache", est.kv / MIB, sum(self.report.kv.values())),
                 ("compute", est.compute / MIB, sum(self.report.compute.values())),
                 ("output", est.output_buffer / MIB, sum(self.report.output.values()))]
        total_est = sum(p[1] for p in pairs)
        total_log = sum(p[2] for p in pairs)
        pairs.append(("total", total_est, total_log))
        return [(name, e, r, 100.0 * (e - r) / r if r else float("nan")) for name, e, r in pairs]

    def repack_mib(self) -> float:
        return sum(v for k, v in self.report.model.items() if "REPACK" in k)

    def render(self) -> str:
        lines = [f"n_ctx={self.n_ctx}, swa_full={self.swa_full}",
                 f"{'buffer':<10} {'estimate MiB':>13} {'llama.cpp MiB':>14} {'error %':>8}"]
        lines += [f"{n:<10} {e:>13.2f} {r:>14.2f} {err:>+8.2f}" for n, e, r, err in self.rows()]
        return "\n".join(lines)


def check_against_load(model_path: str | Path, n_ctx: int, *, swa_full: bool = True,
                       n_threads: int = 1) -> LoadCheck:
    """Load ``model_path`` on the CPU with llama.cpp, capture its buffer report, compare with the estimate."""
    from labkit.llm.native import open_llama

    arch = read_gguf_arch(model_path)
    estimate = estimate_memory(arch, n_ctx, 0, swa_full=swa_full)
    with capture_llama_log() as log:
        llm = open_llama(model_path, n_ctx=n_ctx, n_threads=n_threads, n_gpu_layers=0,
                              swa_full=swa_full, verbose=False)
        llm.close()
    return LoadCheck(n_ctx=n_ctx, swa_full=swa_full, estimate=estimate, report=parse_buffers(log.text))
