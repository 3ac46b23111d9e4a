"""Loading llama.cpp so that it cannot take a route known to crash on this CPU.

With AMX in CPU and build, repacked weights crash the first decode (llama.cpp #20824), so
:func:`decide_load_plan` turns extra buffer types off only then (``LABKIT_EXTRA_BUFTS=on|off|auto``
overrides). Every model opens through :func:`open_llama`; ``labkit.llm.serve`` uses the same plan."""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from labkit.core.errors import LabkitError

AMX_CPU_FLAGS = frozenset({"amx_int8", "amx_tile", "amx_bf16"})
OVERRIDE_ENV = "LABKIT_EXTRA_BUFTS"
CRASH_ISSUE = "llama.cpp issue #20824"


@dataclass(frozen=True)
class LoadPlan:
    """How models are loaded on this machine, and why."""

    use_extra_bufts: bool
    reason: str
    cpu_amx: bool
    build_amx: bool
    override: str  # "auto", "on" or "off"

    @property
    def label(self) -> str:
        """A short name of the route for reports: which weight buffers llama.cpp uses."""
        return ("extra buffer types on (CPU_REPACK/AMX repack allowed)" if self.use_extra_bufts
                else "extra buffer types off (plain CPU buffers)")


def cpu_flags(cpuinfo: str | None = None) -> frozenset[str]:
    """The CPU's feature flags from ``/proc/cpuinfo`` (empty where there is none, e.g. macOS)."""
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
        except OSError:
            return frozenset()
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("flags", "Features"):
            return frozenset(value.split())
    return frozenset()


def build_features(system_info: str) -> dict[str, bool]:
    """Parse llama.cpp's ``llama_print_system_info()`` line (``AVX2 = 1 | AMX_INT8 = 1 | ...``)."""
    return {name: value == "1" for name, value in re.findall(r"([A-Z][A-Z0-9_]*) = (\d+)", system_info)}


def decide_load_plan(flags: Iterable[str], system_info: str, override: str | None = None) -> LoadPlan:
    """Whether llama.cpp may use its extra (repacking) buffer types here, from the CPU ``flags``, the build's
    ``system_info`` and ``override`` (normally ``$LABKIT_EXTRA_BUFTS``), with a readable reason."""
    choice = (override or "auto").strip().lower()
    if choice not in ("auto", "on", "off"):
        raise LabkitError(f"{OVERRIDE_ENV}={override!r} is not one of auto, on, off",
                          f"unset {OVERRIDE_ENV}, or set it to auto (the default), on or off.")
    cpu_amx = bool(AMX_CPU_FLAGS & set(flags))
    build_amx = any(v for k, v in build_features(system_info).items() if k.startswith("AMX"))
    if choice != "auto":
        on = choice == "on"
        return LoadPlan(on, f"{OVERRIDE_ENV}={choice}", cpu_amx, build_amx, choice)
    if cpu_amx and build_amx:
        why = (f"this CPU and this llama.cpp build both have AMX: the AMX repack route crashes on the first "
               f"decode ({CRASH_ISSUE}), so extra buffer types are off")
        return LoadPlan(False, why, cpu_amx, build_amx, choice)
    why = "the CPU has no AMX" if not cpu_amx else "this llama.cpp build has no AMX code"
    return LoadPlan(True, f"{why}: extra buffer types stay on (CPU_REPACK keeps its speed)",
                    cpu_amx, build_amx, choice)


def system_info() -> str:
    """This process's llama.cpp build feature line."""
    import llama_cpp

    return llama_cpp.llama_print_system_info().decode(errors="replace")


@lru_cache(maxsize=1)
def _auto_plan() -> LoadPlan:
    return decide_load_plan(cpu_flags(), system_info(), "auto")


def load_plan() -> LoadPlan:
    """The plan for this process (the environment override is read on every call)."""
    override = os.environ.get(OVERRIDE_ENV)
    if override is None or override.strip().lower() == "auto":
        return _auto_plan()
    return decide_load_plan(cpu_flags(), system_info(), override)


_patch_lock = threading.Lock()


def _defaults_with(plan: LoadPlan) -> Any:
    """``llama_model_default_params`` applying ``plan``: the narrowest hook, as ``Llama`` takes no such argument."""
    import llama_cpp.llama_cpp as native

    original = native.llama_model_default_params

    def defaults() -> Any:
        params = original()
        if hasattr(params, "use_extra_bufts"):
            params.use_extra_bufts = plan.use_extra_bufts
        return params

    defaults.labkit_original = original  # type: ignore[attr-defined]  (not __wrapped__: llama_cpp's own
    return defaults                      # ctypes functions carry a __wrapped__ stub that returns None)


def open_llama(model_path: str | Path, plan: LoadPlan | None = None, **kwargs: Any) -> Any:
    """``llama_cpp.Llama(model_path, **kwargs)`` loaded by this machine's :class:`LoadPlan`."""
    import llama_cpp
    import llama_cpp.llama_cpp as native

    plan = plan or load_plan()
    with _patch_lock:
        original = native.llama_model_default_params
        native.llama_model_default_params = _defaults_with(plan)
        try:
            return llama_cpp.Llama(model_path=str(model_path), **kwargs)
        finally:
            native.llama_model_default_params = original


def apply_plan_process_wide(plan: LoadPlan | None = None) -> LoadPlan:
    """Make every later ``llama_cpp.Llama`` of this process follow the plan (for the server process)."""
    import llama_cpp.llama_cpp as native

    plan = plan or load_plan()
    native.llama_model_default_params = getattr(native.llama_model_default_params, "labkit_original",
                                                native.llama_model_default_params)
    native.llama_model_default_params = _defaults_with(plan)
    return plan
