"""Running an untrusted command confined: model-written code is run, never trusted.

The kit runs tests that a small model (or a learner) edited. A wrong edit is the expected case, and
a hostile one costs nothing to write: ``os.fork()`` in a loop, ``open("~/.ssh/id_rsa")``, a socket,
``print`` in a loop, a daemon that outlives the run. :func:`run_sandboxed` runs such a command so
that none of these reaches the machine:

* under **bwrap** (bubblewrap, where it works): new namespaces for everything (no network: the new
  net namespace has only a loopback that is down; a pid namespace whose init takes every process
  with it), the system read-only, a private ``/tmp``, the user's home hidden behind an empty tmpfs
  (the interpreter's own folders are bound back read-only), and only the ``writable`` folders
  writable;
* **always**: resource limits (CPU seconds, address space, file size, processes), output read
  incrementally and capped (its head and its tail are kept, the middle is cut and said to be), a
  wall-clock timeout that kills the whole process group, and where this user may create one, a
  pids cgroup that both caps the processes and lets every leftover be killed at the end.

Where bwrap cannot run (not installed, user namespaces off, not Linux) the mode is
``limits-only``: the limits still hold, but the file system, the network and the home are the
user's, and a child that calls ``setsid`` may outlive the run unless a cgroup caught it. The mode
and its reason are probed once (:func:`sandbox_mode`, :func:`sandbox_reason`) and shown by
``labkit doctor``. ``LABKIT_SANDBOX=limits-only`` forces the fallback (to see what it does).
"""

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
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

Mode = Literal["bwrap", "limits-only"]
MODE_ENV = "LABKIT_SANDBOX"  # "limits-only" forces the fallback; anything else: probe
MIB = 1024**2
GIB = 1024**3
INSTALL_FIX = ("apt-get install bubblewrap   # or enable unprivileged user namespaces: "
               "sysctl kernel.unprivileged_userns_clone=1")
_CUT = "\n[... {n} bytes of output cut (the limit is {limit} bytes) ...]\n"
_PIDS_CGROUP_ROOTS = (Path("/sys/fs/cgroup/pids"), Path("/sys/fs/cgroup"))  # cgroup v1 pids, or v2 unified
# The launcher: joins the run's cgroup, sets the rlimits, then becomes the command (same pid). It is a
# program rather than a preexec_fn because preexec_fn may deadlock in a process with threads. Inside
# bwrap it runs a second time, after bwrap made its user namespace, to set RLIMIT_NPROC there: that
# counts only the processes of the namespace, not every process the user already has.
_LAUNCH = ("import json, os, resource, sys; cfg = json.loads(sys.argv[1])\n"
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


@dataclass(frozen=True)
class SandboxResult:
    """How a confined run ended. ``returncode`` is None when it was killed at its timeout."""

    returncode: int | None
    output: str
    timed_out: bool
    mode: Mode
    output_cut: bool = False


# ------------------------------------------------------------------------------------------- the mode
@functools.lru_cache(maxsize=1)
def _probe() -> tuple[Mode, str]:
    if os.environ.get(MODE_ENV) == "limits-only":
        return "limits-only", f"{MODE_ENV}=limits-only asks for it"
    if not sys.platform.startswith("linux"):
        return "limits-only", f"bubblewrap needs Linux namespaces; this is {sys.platform}"
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return "limits-only", "bwrap (bubblewrap) is not installed"
    try:
        proc = subprocess.run([bwrap, *_BWRAP_BASE, "true"], capture_output=True, text=True, timeout=20,
                              stdin=subprocess.DEVNULL, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return "limits-only", f"bwrap could not start: {exc}"
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["(no message)"])[-1]
        return "limits-only", f"bwrap cannot make its namespaces here: {last}"
    return "bwrap", f"bwrap ({bwrap}) runs: own namespaces, read-only system, no network, home hidden"


def sandbox_mode() -> Mode:
    """``bwrap`` where bubblewrap works on this machine, else ``limits-only`` (probed once)."""
    return _probe()[0]


def sandbox_reason() -> str:
    """Why :func:`sandbox_mode` is what it is, in one line."""
    return _probe()[1]


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
    """The folders ``python`` reads to start and import: its prefixes, ``sys.path``, editable installs.

    Why: the home and ``/tmp`` are hidden, but a venv or pyenv often lives under one of them (and an
    editable install's source too); these are bound back read-only so the interpreter still starts.
    """
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
               hidden: Sequence[Path] = ()) -> list[str]:
    """bwrap's options for one run (the order matters: later mounts go on top of earlier ones).

    ``hidden`` folders are covered by an empty tmpfs, like the home (an exercise's answers, the
    other learners' submissions); the interpreter's own folders are bound back on top of them.
    """
    args = ["bwrap", *_BWRAP_BASE]
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
    """A fresh pids cgroup capped at ``limit``, where this user may make one; removed afterwards.

    Why both this and RLIMIT_NPROC: root is exempt from RLIMIT_NPROC (even inside a user
    namespace, whose uid 0 is still the real root), so as root only a cgroup bounds a fork bomb;
    and ``cgroup.procs`` lists every process of the run, so a leftover can be killed at the end.
    """
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
    """What bounds the number of processes here: a pids cgroup, RLIMIT_NPROC, or nothing (root, no cgroup).

    Why it is asked: RLIMIT_NPROC does not bind root, so a fork bomb run as root is bounded only by
    a cgroup (and, under bwrap, by the timeout that ends its pid namespace).
    """
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
    """Run ``cmd`` confined (see the module's text); stdout and stderr come back together, capped.

    ``writable`` are the only folders it may change under bwrap (``cwd`` is not writable unless
    listed), and ``hidden`` folders look empty. Past ``timeout`` seconds the whole process group is
    killed and the result says
    ``timed_out``. When this returns, no process of the run is left under bwrap (its pid namespace
    died) or where a cgroup was made; in ``limits-only`` mode without one, a child that left the
    process group with ``setsid`` may live on.
    """
    limits = limits or SandboxLimits()
    mode = mode or sandbox_mode()
    env = dict(os.environ if env is None else env)
    cwd = Path(cwd)
    argv = list(cmd)
    rlimits = {"RLIMIT_CPU": (limits.cpu_seconds, limits.cpu_seconds + 5),
               "RLIMIT_AS": (limits.memory_bytes, limits.memory_bytes),
               "RLIMIT_FSIZE": (limits.file_size_bytes, limits.file_size_bytes)}
    if mode == "bwrap":
        pythons = [sys.executable] + ([argv[0]] if Path(argv[0]).name.startswith("python") else [])
        nproc = {"RLIMIT_NPROC": (limits.processes, limits.processes)}
        argv = [*bwrap_args(cwd, [Path(w) for w in writable], env, pythons, [Path(h) for h in hidden]),
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
    return SandboxResult(None if timed_out else proc.returncode, out.text(limits.output_bytes), timed_out, mode,
                         out.cut > 0)


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
