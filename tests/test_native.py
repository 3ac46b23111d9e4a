"""The load decision that keeps llama.cpp off its crashing AMX route, for both kinds of CPU."""

from __future__ import annotations

import subprocess
import sys

import pytest

from labkit.core.errors import LabkitError
from labkit.llm.native import build_features, cpu_flags, decide_load_plan, load_plan, open_llama

# Feature lines as llama.cpp 0.3.x prints them: an AMX build (Sapphire Rapids, -march=native) and an AVX2 one.
AMX_BUILD = ("CPU : SSE3 = 1 | SSSE3 = 1 | AVX = 1 | AVX_VNNI = 1 | AVX2 = 1 | F16C = 1 | FMA = 1 | BMI2 = 1 | "
             "AVX512 = 1 | AVX512_VBMI = 1 | AVX512_VNNI = 1 | AVX512_BF16 = 1 | AMX_INT8 = 1 | LLAMAFILE = 1 | "
             "OPENMP = 1 | REPACK = 1 | ")
AVX2_BUILD = ("CPU : SSE3 = 1 | SSSE3 = 1 | AVX = 1 | AVX2 = 1 | F16C = 1 | FMA = 1 | BMI2 = 1 | OPENMP = 1 | "
              "REPACK = 1 | ")
SAPPHIRE_RAPIDS = {"avx2", "avx512f", "avx512_bf16", "amx_bf16", "amx_tile", "amx_int8"}
EPYC = {"avx2", "avx512f", "avx512_bf16", "sha_ni"}  # AVX-512, no AMX
HASWELL = {"avx", "avx2", "fma", "bmi2"}


def test_amx_cpu_with_amx_build_turns_extra_buffers_off() -> None:
    plan = decide_load_plan(SAPPHIRE_RAPIDS, AMX_BUILD)
    assert (plan.use_extra_bufts, plan.cpu_amx, plan.build_amx) == (False, True, True)
    assert "20824" in plan.reason and "off" in plan.label


@pytest.mark.parametrize("flags", [EPYC, HASWELL, set()])
def test_cpus_without_amx_keep_extra_buffers(flags: set[str]) -> None:
    plan = decide_load_plan(flags, AMX_BUILD if flags is EPYC else AVX2_BUILD)
    assert plan.use_extra_bufts and not plan.cpu_amx
    assert "CPU_REPACK" in plan.reason


def test_amx_cpu_with_a_build_without_amx_keeps_extra_buffers() -> None:
    """A build compiled with -mno-amx-* (or for an older CPU) has no AMX route to crash on."""
    plan = decide_load_plan(SAPPHIRE_RAPIDS, AVX2_BUILD)
    assert plan.use_extra_bufts and plan.cpu_amx and not plan.build_amx


@pytest.mark.parametrize(("override", "expected"), [("on", True), ("OFF", False), (" off ", False)])
def test_the_environment_override_wins(override: str, expected: bool) -> None:
    assert decide_load_plan(SAPPHIRE_RAPIDS, AMX_BUILD, override).use_extra_bufts is expected
    assert decide_load_plan(HASWELL, AVX2_BUILD, override).use_extra_bufts is expected


def test_a_bad_override_is_a_clear_error() -> None:
    with pytest.raises(LabkitError, match=r"LABKIT_EXTRA_BUFTS='maybe'.*auto, on, off"):
        decide_load_plan(HASWELL, AVX2_BUILD, "maybe")


def test_feature_parsing() -> None:
    assert build_features(AMX_BUILD)["AMX_INT8"] is True
    assert build_features(AVX2_BUILD) == {"SSE3": True, "SSSE3": True, "AVX": True, "AVX2": True, "F16C": True,
                                          "FMA": True, "BMI2": True, "OPENMP": True, "REPACK": True}
    assert cpu_flags("processor : 0\nflags\t\t: fpu avx2 amx_tile\n") == frozenset({"fpu", "avx2", "amx_tile"})
    assert cpu_flags("processor : 0\nFeatures : fp asimd\n") == frozenset({"fp", "asimd"})  # Arm
    assert cpu_flags("") == frozenset()


def test_this_machine_gets_the_plan_its_facts_call_for() -> None:
    from labkit.llm.native import system_info

    assert load_plan() == decide_load_plan(cpu_flags(), system_info())


def test_open_llama_applies_the_plan_and_restores_llama_cpp() -> None:
    """The field really reaches llama.cpp's model parameters, and the library is left as it was."""
    import llama_cpp
    import llama_cpp.llama_cpp as native

    from labkit.llm.modelfile import embedded_model_path

    original = native.llama_model_default_params
    for plan in (decide_load_plan(set(), "", "off"), decide_load_plan(set(), "", "on")):
        llm = open_llama(embedded_model_path(), plan, vocab_only=True, verbose=False)
        assert isinstance(llm, llama_cpp.Llama)
        assert llm.model_params.use_extra_bufts is plan.use_extra_bufts
        llm.close()
    assert native.llama_model_default_params is original
    assert native.llama_model_default_params().use_extra_bufts is True  # llama.cpp's own default


@pytest.mark.slow
def test_the_default_route_answers_on_this_cpu() -> None:
    """The first decode, in a child process so a native crash fails this test instead of killing pytest."""
    code = ("from labkit.llm import LlamaCppBackend; b = LlamaCppBackend(n_ctx=256, warmup=False); "
            "print(repr(b.complete('The capital of France is', max_tokens=2, temperature=0.0).text))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, f"exit {proc.returncode}: {proc.stderr[-800:]}"
    assert proc.stdout.strip().startswith("'")


def test_the_process_wide_plan_wraps_llama_cpp_once_and_keeps_its_defaults() -> None:
    """What ``python -m labkit.llm.serve`` does before llama.cpp's server loads the model (in a child process:
    it changes llama_cpp for the whole process)."""
    code = ("import llama_cpp.llama_cpp as n; from labkit.llm.native import apply_plan_process_wide, decide_load_plan; "
            "apply_plan_process_wide(decide_load_plan(set(), '', 'off')); "
            "apply_plan_process_wide(decide_load_plan(set(), '', 'off')); p = n.llama_model_default_params(); "
            "print(p.use_extra_bufts, p.n_gpu_layers, p.use_mmap if hasattr(p, 'use_mmap') else 'na')")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-800:]
    extra, n_gpu_layers, _ = proc.stdout.split()
    assert extra == "False" and int(n_gpu_layers) >= -1
