"""A run's working copy: a fresh temporary git repository, and real pytest runs in it.

Why a copy under git: the run may break the project, so it never touches the shipped folder, and
rolling back is ``git reset --hard`` plus ``git clean`` to a commit made before the first edit —
a real restore, checked by comparing file hashes, not a promise. Why a subprocess with a time
limit, inside a sandbox: the code under test is untrusted (a model wrote part of it); a hanging test
must end as a typed outcome (``timeout``), never as a hanging run, and a hostile one must not reach
the machine (:mod:`labkit.core.sandbox`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from labkit.core.errors import LabkitError
from labkit.core.sandbox import SandboxLimits, run_sandboxed

TestOutcome = Literal["passed", "failed", "timeout", "no_tests", "error"]
OUTPUT_TAIL = 1500  # characters of pytest output kept per run: enough for a traceback, small for a prompt
_GIT_IDENTITY = ("-c", "user.name=labkit", "-c", "user.email=labkit@localhost", "-c", "commit.gpgsign=false")
_IGNORED = ("__pycache__", ".pytest_cache")
# The caller's variables that change what pytest prints (CI and BUILD_NUMBER turn off its truncation of
# assertion messages; the others add options, plugins or colour) or what it imports. Test output goes into
# prompts, so it must not depend on where the kit runs: a replay on CI must send the recorded prompts.
CALLER_ONLY_ENV = frozenset({"CI", "BUILD_NUMBER", "PYTEST_ADDOPTS", "PYTEST_PLUGINS", "PYTEST_CURRENT_TEST",
                             "PYTEST_THEME", "PYTEST_THEME_MODE", "FORCE_COLOR", "PY_COLORS", "NO_COLOR",
                             "PYTHONPATH"})
_DURATION = re.compile(r" in \d+(?:\.\d+)?s(?: \(\d+:\d\d:\d\d\))?")
_ADDRESS = re.compile(r"\b0x[0-9a-fA-F]{6,}\b")


def portable(text: str, root: Path) -> str:
    """Test output that reads the same wherever and whenever it ran.

    The copy's temporary path becomes relative to the project, the interpreter's folder ``<python>``,
    and pytest's run time and objects' memory addresses are dropped. The output goes into the next
    prompt (a targeted fix, the free loop's transcript), and a replay serves answers by the exact
    prompt: a prompt that differed by a path or a duration would not be the recorded one.
    """
    for prefix in dict.fromkeys((str(root.resolve()), str(root))):
        text = text.replace(prefix + os.sep, "").replace(prefix, ".")
    for prefix in dict.fromkeys((sys.prefix, sys.base_prefix)):  # the interpreter's own frames (a collection error)
        text = text.replace(prefix + os.sep, "<python>/")
    return _ADDRESS.sub("0x?", _DURATION.sub("", text))


@dataclass(frozen=True)
class TestRun:
    """What one pytest run showed: the outcome, per-test results and the tail of its output.

    ``outcome`` is ``passed`` only if at least one test ran and none failed or errored;
    ``error`` means pytest could not collect or run (exit codes 2-4), ``no_tests`` that it found none.
    """

    __test__ = False  # not a pytest test class

    outcome: TestOutcome
    passed: tuple[str, ...] = ()
    failed: tuple[str, ...] = ()
    output: str = ""
    exit_code: int | None = None
    details: dict[str, str] = field(default_factory=dict)  # failing node id -> its failure text (short)
    # The sandbox's record of the run (SandboxResult.record: mode, bwrap, limits, limits hit). It says where the
    # run was confined, not what the tests did, so it is kept out of equality and out of the recorded events.
    sandbox: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def green(self) -> bool:
        return self.outcome == "passed"


def tree_hashes(root: Path) -> dict[str, str]:
    """sha256 of every file under ``root`` (except .git and caches), by relative path."""
    hashes: dict[str, str] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if rel.parts[0] == ".git" or any(part in _IGNORED for part in rel.parts) or not path.is_file():
            continue
        hashes[rel.as_posix()] = hashlib.sha256(path.read_bytes()).hexdigest()
    return hashes


def tree_digest(root: Path) -> str:
    """One sha256 over :func:`tree_hashes`: equal digests mean byte-identical trees."""
    listing = "".join(f"{p}\0{h}\n" for p, h in tree_hashes(root).items())
    return hashlib.sha256(listing.encode()).hexdigest()


class Workspace:
    """A temporary git copy of a project. Use as a context manager; the copy is removed on exit.

    ``python`` is the interpreter that runs pytest (default: this one, which has pytest).
    ``at`` names the folder to hold the copy (it must not exist yet) instead of a fresh temporary
    one: a run with a log keeps its copy there, so that a run stopped half-way can be resumed on the
    very tree it left (:meth:`reopen`).
    """

    def __init__(self, source: str | Path, *, python: str = sys.executable, keep: bool = False,
                 parent: str | Path | None = None, at: str | Path | None = None) -> None:
        source = Path(source)
        if not source.is_dir():
            raise LabkitError(f"project folder {source} does not exist", "pass the folder of a project.")
        self.source = source
        self.python = python
        self.keep = keep
        if at is not None:
            if Path(at).exists():
                raise LabkitError(f"{at} exists already, so a new working copy cannot be made there",
                                  "remove it, or resume the run that made it (with the same log).")
            Path(at).mkdir(parents=True)
            self._tmp = Path(at).resolve()
        else:
            self._tmp = Path(tempfile.mkdtemp(prefix="labkit-repoedit-", dir=parent)).resolve()
        self.root = self._tmp / source.name  # absolute: pytest runs inside the copy, given paths to it
        shutil.copytree(source, self.root, symlinks=True,
                        ignore=shutil.ignore_patterns(*_IGNORED, ".git"))
        (self.root / ".gitignore").write_text("".join(f"{p}/\n" for p in _IGNORED), encoding="utf-8")
        self._git("init", "-q")
        self.baseline = self.commit("baseline: the project as shipped")

    @classmethod
    def reopen(cls, at: str | Path, source: str | Path, *, python: str = sys.executable) -> Workspace:
        """The copy of ``source`` that a stopped run left in ``at``, as it is (nothing is reset here)."""
        self = cls.__new__(cls)
        self.source, self.python, self.keep = Path(source), python, False
        self._tmp = Path(at).resolve()
        self.root = self._tmp / self.source.name
        if not (self.root / ".git").is_dir():
            raise LabkitError(f"{self.root} is not a working copy left by a run",
                              "the copy is gone, so the run cannot go on where it stopped: start it again "
                              "with a new log (the old log stays as the record of what happened).")
        self.baseline = self._git("rev-list", "--max-parents=0", "HEAD")
        return self

    def __enter__(self) -> Workspace:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if not self.keep:
            shutil.rmtree(self._tmp, ignore_errors=True)

    # ------------------------------------------------------------------ git
    def _git(self, *args: str) -> str:
        env = {**os.environ, "GIT_AUTHOR_DATE": "2000-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2000-01-01T00:00:00Z"}
        proc = subprocess.run(["git", *_GIT_IDENTITY, *args], cwd=self.root, capture_output=True, text=True,
                              env=env, check=False)
        if proc.returncode != 0:
            raise LabkitError(f"git {' '.join(args)} failed in {self.root}: {proc.stderr.strip()}",
                              "check that git is installed and the temporary folder is writable.")
        return proc.stdout.strip()

    def commit(self, message: str) -> str:
        """Commit everything (even nothing) and return the commit id."""
        self._git("add", "-A")
        self._git("commit", "-q", "--allow-empty", "-m", message)
        return self._git("rev-parse", "HEAD")

    def head(self) -> str:
        """The commit the copy is at."""
        return self._git("rev-parse", "HEAD")

    def rollback(self, commit: str | None = None) -> None:
        """Restore the tree of ``commit`` (default: the baseline): tracked and untracked changes go."""
        self._git("reset", "-q", "--hard", commit or self.baseline)
        self._git("clean", "-q", "-fdx")

    def dirty(self) -> bool:
        """Whether the tree holds changes that are not committed."""
        return bool(self._git("status", "--porcelain"))

    def diff(self) -> str:
        """The uncommitted changes against HEAD, as a unified diff."""
        self._git("add", "-A")
        return self._git("diff", "--cached")

    def digest(self) -> str:
        return tree_digest(self.root)

    # ------------------------------------------------------------------ tests
    def run_tests(self, *, timeout: float = 60.0, select: Sequence[str] = ()) -> TestRun:
        """Run the project's tests with pytest, confined by :func:`labkit.core.sandbox.run_sandboxed`.

        The code under test was partly written by a model, so it runs in the sandbox: under bwrap it
        may write only this run's folder (the copy and the junit report beside it), sees no network
        and no home; everywhere it has resource limits (:func:`limits_for_tests`), and a run past
        ``timeout`` s is killed with every process it started. Which mode ran is
        :func:`labkit.core.sandbox.sandbox_mode`; the outputs do not depend on it. Plugin autoloading is
        off: the projects need plain pytest, and the kit's own plugins (nbval, ...) made each run
        about five times slower to start. The hash seed is fixed, so the ids of tests parametrized over
        a set are the same in every run (the verifier compares ids between runs). ``select`` names
        test files to run instead of the whole suite.
        """
        report = self._tmp / "junit.xml"
        report.unlink(missing_ok=True)
        cmd = [self.python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--tb=short", "-o", "addopts=",
               "--rootdir", str(self.root), f"--junitxml={report}", *select]
        env = {k: v for k, v in os.environ.items() if k not in CALLER_ONLY_ENV}
        env.update({"PYTHONDONTWRITEBYTECODE": "1", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "COLUMNS": "80",
                    "PYTHONHASHSEED": "0"})
        result = run_sandboxed(cmd, cwd=self.root, writable=[self._tmp], timeout=timeout, env=env,
                               limits=limits_for_tests(timeout))
        out = result.output
        if result.timed_out:
            tail = portable(out, self.root)[-OUTPUT_TAIL:]
            return TestRun("timeout", output=f"{tail}\n[killed after {timeout:g} s]", exit_code=None,
                           sandbox=result.record())
        if "cpu_seconds" in result.limits_hit or "file_size_bytes" in result.limits_hit:
            stopped = "CPU-time" if "cpu_seconds" in result.limits_hit else "file-size"
            out += f"\n[stopped by the sandbox's {stopped} limit]"
        assert result.returncode is not None
        if result.returncode == 1 and "No module named pytest" in out:
            raise LabkitError(f"{self.python} has no pytest, so the project's tests cannot run",
                              "install it into that interpreter (pip install pytest), or pass python= one that has it.")
        run = _read_run(result.returncode, portable(out, self.root), report, self.root)
        return dataclasses.replace(run, details={k: portable(v, self.root) for k, v in run.details.items()},
                                   sandbox=result.record())


def limits_for_tests(timeout: float) -> SandboxLimits:
    """The limits of one pytest run: generous for the kit's small projects, fatal to a runaway.

    CPU seconds follow the wall-clock timeout (plus room, so the timeout, not SIGXCPU, ends a hang
    and says so); 2 GiB of address space, 64 MiB files, 256 processes, 4 MiB of output.
    """
    return SandboxLimits(cpu_seconds=int(timeout) + 30, memory_bytes=2 * 1024**3, file_size_bytes=64 * 1024**2,
                         processes=256, output_bytes=4 * 1024**2)


def _read_run(code: int, output: str, report: Path, root: Path) -> TestRun:
    tail = output[-OUTPUT_TAIL:]
    if code == 5:
        return TestRun("no_tests", output=tail, exit_code=code)
    if code not in (0, 1) or not report.is_file():
        return TestRun("error", output=tail, exit_code=code)
    passed, failed, details = [], [], {}
    for case in ET.parse(report).getroot().iter("testcase"):
        node = _node_id(case.get("classname", ""), case.get("name", ""), root)
        problem = next((c for c in case if c.tag in ("failure", "error")), None)
        if problem is None and not any(c.tag == "skipped" for c in case):
            passed.append(node)
        elif problem is not None:
            failed.append(node)
            details[node] = (problem.get("message") or "")[:300]
    outcome: TestOutcome = "failed" if failed or code == 1 else ("passed" if passed else "no_tests")
    return TestRun(outcome, tuple(passed), tuple(failed), tail, code, details)


def _node_id(classname: str, name: str, root: Path) -> str:
    """pytest node id from junit's dotted classname (``tests.test_x`` or ``tests.test_x.TestK``): the longest
    prefix that is a file under ``root`` is the module (a class may be named ``testK`` too); without one, the
    last part named ``test...``."""
    parts = classname.split(".")
    for cut in range(len(parts), 0, -1):
        if (root / ("/".join(parts[:cut]) + ".py")).is_file():
            return "::".join(["/".join(parts[:cut]) + ".py", *parts[cut:], name])
    for cut in range(len(parts), 0, -1):
        if parts[cut - 1].startswith("test"):
            module = "/".join(parts[:cut]) + ".py"
            rest = parts[cut:]
            return "::".join([module, *rest, name])
    return f"{classname}::{name}"


