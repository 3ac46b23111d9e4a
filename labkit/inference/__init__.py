"""Local inference: how fast the model runs here, what it needs in memory, and how to use a GPU."""

from labkit.inference.bench import (
    bench_inference,
    default_model_path,
    read_recorded,
    render_inference,
    render_inference_comparison,
)
from labkit.inference.fit import (
    FitDecision,
    MemoryEstimate,
    check_fit,
    estimate_memory,
    nominal_arch,
    render_fit_table,
    worked_example,
)
from labkit.inference.gguf_meta import ArchSpec, GGUFError, read_gguf, read_gguf_arch
from labkit.inference.goals import SPEED_GOALS, GoalResult, SpeedGoal, render_speed_goals, speed_goals
from labkit.inference.gpu import build_info, current_gpu_advice, gpu_advice
from labkit.inference.loadlog import capture_llama_log, check_against_load, parse_buffers

__all__ = [
    "SPEED_GOALS", "ArchSpec", "FitDecision", "GGUFError", "GoalResult", "MemoryEstimate", "SpeedGoal",
    "bench_inference", "build_info", "capture_llama_log", "check_against_load", "check_fit",
    "current_gpu_advice", "default_model_path", "estimate_memory", "gpu_advice", "nominal_arch", "parse_buffers",
    "read_gguf", "read_gguf_arch", "read_recorded", "render_fit_table", "render_inference",
    "render_inference_comparison", "render_speed_goals", "speed_goals", "worked_example",
]
