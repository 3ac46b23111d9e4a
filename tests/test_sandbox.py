"""The sandbox against hostile code: each case is a real hostile program, run through run_sandboxed.

Every case in :data:`HOSTILE_CASES` must be contained where bwrap runs; where the sandbox is only
``limits-only``, the cases that limits cannot cover (files, keys, network) are skipped saying why,
and the others still run. The last test counts them: "N/N contained".
"""

from __future__ import annotations

import resource
import socket
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from labkit.core.sandbox import (
    SandboxLimits,
    SandboxResult,
    _Capped,
    bwrap_args,
    process_cap,
    run_sandboxed,
    sandbox_mode,
    sandbox_reason,
)
from labkit.repoedit.workspace import Workspace

SECRET = "-----BEGIN OPENSSH PRIVATE KEY----- labkit-test-secret-4711"
BWRAP = sandbox_mode() == "bwrap"
NEEDS_BWRAP = f"the sandbox is limits-only here ({sandbox_reason()}): files, keys and the network are the user's"

# name -> (what the hostile program tries, how it is contained)
HOSTILE_CASES: dict[str, tuple[str, str]] = {
    "fork bomb": ("forks without end", "processes capped (pids cgroup / RLIMIT_NPROC in the namespace)"),
    "write outside the copy": ("writes a file into the home", "home behind an empty tmpfs, system read-only"),
    "read ~/.ssh/id_rsa": ("prints the user's private key", "home behind an empty tmpfs"),
    "network": ("connects to a listener on 127.0.0.1", "new net namespace: loopback down"),
    "a gigabyte of output": ("prints 1 GiB", "output read incrementally, head and tail kept, the middle cut"),
    "endless loop": ("never ends", "wall-clock timeout kills the process group; typed timed_out"),
    "outlives the run": ("double-forks a setsid sleeper that writes later", "pid namespace (or cgroup) killed"),
}
CONTAINED: dict[str, bool] = {}


def _run(code: str, tmp_path: Path, *, timeout: float = 20, limits: SandboxLimits | None = None,
         env: dict[str, str] | None = None, mode: str | None = None) -> SandboxResult:
    copy = tmp_path / "copy"
    copy.mkdir(exist_ok=True)
    return run_sandboxed([sys.executable, "-c", textwrap.dedent(code)], cwd=copy, writable=[copy], timeout=timeout,
                         env=env, limits=limits, mode=mode)  # type: ignore[arg-type]


@pytest.fixture
def fake_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text(SECRET)
    monkeypatch.setenv("HOME", str(home))
    return home


# ------------------------------------------------------------------------------------------- the cases
def case_fork_bomb(tmp_path: Path, mode: str | None = None) -> bool:
    if process_cap() is None and (mode or sandbox_mode()) != "bwrap":
        pytest.skip("nothing caps processes here (root, and no pids cgroup can be made)")
    if process_cap() is None:
        pytest.skip("root without a pids cgroup: RLIMIT_NPROC does not bind root, so a fork bomb is not bounded")
    # Safety nets of its own: each process stops after 3 s and at depth 12, so a broken cap cannot take the machine.
    code = """
        import os, time
        end, depth, refused = time.time() + 3, 0, False
        while time.time() < end and depth < 12:
            try:
                if os.fork() == 0:
                    depth += 1
            except OSError:
                refused = True
                time.sleep(0.05)
        if refused:
            print("fork refused", flush=True)
    """
    start = time.monotonic()
    result = _run(code, tmp_path, timeout=30, limits=SandboxLimits(processes=24), mode=mode)  # type: ignore[arg-type]
    return "fork refused" in result.output and not result.timed_out and time.monotonic() - start < 30


def case_write_outside(tmp_path: Path, home: Path) -> bool:
    if not BWRAP:
        pytest.skip(NEEDS_BWRAP)
    code = f"""
        import os, pathlib
        for target in (pathlib.Path.home() / "pwned", pathlib.Path({str(home)!r}) / "pwned2"):
            try:
                target.write_text("x"); print("wrote", target)
            except OSError as exc:
                print("refused", exc)
    """
    result = _run(code, tmp_path)
    return result.returncode == 0 and not (home / "pwned").exists() and not (home / "pwned2").exists()


def case_read_key(tmp_path: Path, home: Path) -> bool:
    if not BWRAP:
        pytest.skip(NEEDS_BWRAP)
    code = f"""
        import os
        for path in (os.path.expanduser("~/.ssh/id_rsa"), {str(home / ".ssh" / "id_rsa")!r}):
            try:
                print(open(path).read())
            except OSError as exc:
                print("refused", exc)
    """
    result = _run(code, tmp_path)
    return result.returncode == 0 and SECRET not in result.output and "refused" in result.output


def case_network(tmp_path: Path) -> bool:
    if not BWRAP:
        pytest.skip(NEEDS_BWRAP)
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        listener.settimeout(0.5)
        port = listener.getsockname()[1]
        code = f"""
            import socket
            try:
                socket.create_connection(("127.0.0.1", {port}), timeout=3).sendall(b"stolen")
                print("connected")
            except OSError as exc:
                print("refused", exc)
        """
        result = _run(code, tmp_path)
        try:
            listener.accept()[0].close()
            seen = True
        except TimeoutError:
            seen = False
    return "connected" not in result.output and not seen


def case_gigabyte(tmp_path: Path, mode: str | None = None) -> bool:
    code = """
        import sys
        chunk = b"y" * (1 << 20)
        for _ in range(1024):
            sys.stdout.buffer.write(chunk)
        sys.stdout.buffer.write(b"THE END")
    """
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    start = time.monotonic()
    limits = SandboxLimits(output_bytes=1 << 20)
    result = _run(code, tmp_path, timeout=60, limits=limits, mode=mode)  # type: ignore[arg-type]
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    return (result.output_cut and len(result.output) < 2 * limits.output_bytes and result.output.endswith("THE END")
            and "bytes of output cut" in result.output and grown_kib < 64 * 1024 and time.monotonic() - start < 60)


def case_endless(tmp_path: Path, mode: str | None = None) -> bool:
    start = time.monotonic()
    result = _run("while True: pass", tmp_path, timeout=1, mode=mode)  # type: ignore[arg-type]
    return result.timed_out and result.returncode is None and time.monotonic() - start < 8


def case_outliver(tmp_path: Path, mode: str | None = None) -> bool:
    if (mode or sandbox_mode()) != "bwrap" and process_cap() != "cgroup":
        pytest.skip("limits-only without a pids cgroup: a child that calls setsid outlives the run")
    marker = tmp_path / "copy" / "still-alive"
    code = f"""
        import os, time
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                time.sleep(1.5)
                open({str(marker)!r}, "w").write("alive")
            os._exit(0)
        print("parent done")
    """
    result = _run(code, tmp_path, mode=mode)  # type: ignore[arg-type]
    time.sleep(2.5)
    return result.returncode == 0 and not marker.exists()


CASES: dict[str, Callable[[Path, Path], bool]] = {
    "fork bomb": lambda tmp, home: case_fork_bomb(tmp),
    "write outside the copy": case_write_outside,
    "read ~/.ssh/id_rsa": case_read_key,
    "network": lambda tmp, home: case_network(tmp),
    "a gigabyte of output": lambda tmp, home: case_gigabyte(tmp),
    "endless loop": lambda tmp, home: case_endless(tmp),
    "outlives the run": lambda tmp, home: case_outliver(tmp),
}


@pytest.mark.parametrize("name", list(HOSTILE_CASES))
def test_a_hostile_program_is_contained(name: str, tmp_path: Path, fake_home: Path) -> None:
    CONTAINED[name] = CASES[name](tmp_path, fake_home)
    assert CONTAINED[name], f"{name}: {HOSTILE_CASES[name][0]} was not contained"


@pytest.mark.parametrize("name", ["fork bomb", "a gigabyte of output", "endless loop", "outlives the run"])
def test_limits_alone_contain_what_limits_can(name: str, tmp_path: Path) -> None:
    cases = {"fork bomb": case_fork_bomb, "a gigabyte of output": case_gigabyte, "endless loop": case_endless,
             "outlives the run": case_outliver}
    assert cases[name](tmp_path, mode="limits-only")


def test_a_hostile_test_file_in_a_workspace_is_contained(tmp_path: Path, fake_home: Path) -> None:
    if not BWRAP:
        pytest.skip(NEEDS_BWRAP)
    project = tmp_path / "proj"
    (project / "tests").mkdir(parents=True)
    (project / "tests" / "test_evil.py").write_text(textwrap.dedent(f"""
        import os, pathlib
        def test_steal():
            key = pathlib.Path(os.path.expanduser("~/.ssh/id_rsa"))
            print(key.read_text() if key.exists() else "no key")
            for target in (pathlib.Path.home() / "pwned", pathlib.Path({str(fake_home)!r}) / "pwned"):
                try:
                    target.write_text("x")
                except OSError:
                    pass
            assert False, "shown"
    """))
    with Workspace(project) as ws:
        run = ws.run_tests(timeout=60)
    assert run.outcome == "failed" and run.failed == ("tests/test_evil.py::test_steal",), run.output
    assert SECRET not in run.output and not (fake_home / "pwned").exists()


def test_every_hostile_case_is_counted_contained(tmp_path: Path, fake_home: Path) -> None:
    for name in HOSTILE_CASES:
        if name not in CONTAINED:
            try:
                CONTAINED[name] = CASES[name](tmp_path / name.replace(" ", "_"), fake_home)
            except pytest.skip.Exception:
                continue
    contained = sum(CONTAINED.values())
    print(f"{contained}/{len(HOSTILE_CASES)} contained ({sandbox_mode()}: {sandbox_reason()})")
    if BWRAP and process_cap() is not None:
        assert contained == len(HOSTILE_CASES), CONTAINED
    else:
        assert all(CONTAINED.values()), CONTAINED


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
    args = bwrap_args(tmp_path, [tmp_path], {"HOME": str(home)}, [sys.executable])
    assert args[:2] == ["bwrap", "--unshare-all"] and "--die-with-parent" in args and "--new-session" in args
    assert args[args.index("--ro-bind"):args.index("--ro-bind") + 3] == ["--ro-bind", "/", "/"]
    hide = args.index(str(home)) - 1
    assert args[hide] == "--tmpfs" and args.index("--bind") > hide and args[-2:] == ["--chdir", str(tmp_path)]


def test_a_normal_command_runs_and_its_exit_code_comes_back(tmp_path: Path) -> None:
    result = _run("import sys; print('hello'); sys.exit(3)", tmp_path)
    assert result.returncode == 3 and result.output == "hello\n" and not result.timed_out
    assert result.mode == sandbox_mode()


@pytest.mark.parametrize("mode", ["bwrap", "limits-only"])
def test_the_launcher_imports_nothing_from_the_copy(mode: str, tmp_path: Path) -> None:
    """The launcher runs before the limits (under bwrap, outside the sandbox): no json.py of the copy may run."""
    if mode == "bwrap" and not BWRAP:
        pytest.skip(NEEDS_BWRAP)
    copy, marker = tmp_path / "copy", tmp_path / "launcher-ran-copy-code"
    copy.mkdir()
    for name in ("json", "resource", "os"):
        (copy / f"{name}.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    result = _run("print('ok')", tmp_path, mode=mode)
    assert result.returncode == 0 and result.output == "ok\n" and not marker.exists(), result.output
