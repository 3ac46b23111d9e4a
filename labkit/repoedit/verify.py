"""The one verifier of the code comparison: every arm's final tree, judged by the same rules.

Each arm ends with a tree in its temporary copy. The verifier runs the project's *full* pytest suite
on it (the arm's own test runs do not count: some arms never run the tests, and a free loop may have
changed them) and compares the tree with the project as shipped:

- ``fixed``: every test green, no test file added, changed or removed, and nothing written outside
  the project copy. A model that edits the tests can make them pass; that is not a fix.
- ``broken_left``: the tests that passed before the run and do not pass after it (failing, erroring,
  or gone). For the machine this is empty by construction: it ends green or rolls back.
- ``outside_written``: the shipped project folder changed, or a file appeared beside the copy in its
  temporary folder (where only the copy and pytest's report belong).

The baseline (which tests pass on the shipped project, the shipped files' hashes) is measured once
per task in a copy of its own, so every arm is judged against the same facts.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from labkit.core.errors import LabkitError
from labkit.repoedit.index import is_test_path
from labkit.repoedit.workspace import TestRun, Workspace, tree_digest, tree_hashes

REPORT_NAME = "junit.xml"  # the one file the workspace itself writes beside the copy
VERIFY_TIMEOUT = 60.0
PYTEST_CANNOT_RUN = {3: "an internal error", 4: "a usage error"}
"""pytest exit codes that say the harness, not the project, is wrong: a baseline that ends so is refused, not
recorded as a task whose every test is red."""
HIDDEN_NAME = "test_hidden_grader.py"  # where a benchmark's own tests go in the verifier's copy


@dataclass(frozen=True)
class Baseline:
    """The project as shipped: which tests pass, its files' hashes (in a fresh copy) and the folder's digest."""

    passed: tuple[str, ...]
    failed: tuple[str, ...]
    hashes: dict[str, str]
    source_digest: str
    details: dict[str, str]  # failing node id -> its short failure message
    output: str = ""  # the failing run's output tail (what the machine's first edit and prompt_whole are shown)


@dataclass(frozen=True)
class Verdict:
    """What the verifier found on one final tree."""

    fixed: bool
    outcome: str
    passed: int
    failed: tuple[str, ...]
    broken_left: tuple[str, ...]
    tests_changed: tuple[str, ...]
    outside_written: tuple[str, ...]
    digest: str
    hidden_passed: bool | None = None  # the benchmark's own tests on the final tree (None: the task has none)


def measure_baseline(source: Path, *, python: str = sys.executable, timeout: float = VERIFY_TIMEOUT) -> Baseline:
    """Run the shipped project's tests once in a throw-away copy and hash its files."""
    with Workspace(source, python=python) as ws:
        run = ws.run_tests(timeout=timeout)
        if run.exit_code in PYTEST_CANNOT_RUN:
            raise LabkitError(f"pytest could not run the tests of {source} (exit {run.exit_code}, "
                              f"{PYTEST_CANNOT_RUN[run.exit_code]}): {run.output.strip()[-400:]}",
                              "nothing was recorded for this task: make `python -m pytest` run in the project "
                              "(its config, the harness's arguments), then record it.")
        return Baseline(run.passed, run.failed, tree_hashes(ws.root), tree_digest(source), dict(run.details),
                        run.output)


def changed_tests(before: dict[str, str], after: dict[str, str]) -> tuple[str, ...]:
    """Test files that were added, changed or removed between two hash listings."""
    paths = {p for p in before.keys() | after.keys() if is_test_path(p)}
    return tuple(sorted(p for p in paths if before.get(p) != after.get(p)))


def outside_changes(workspace: Workspace, baseline: Baseline) -> tuple[str, ...]:
    """Writes outside the project copy: a changed shipped folder, or strangers beside the copy."""
    found = []
    if tree_digest(workspace.source) != baseline.source_digest:
        found.append(f"{workspace.source} (the shipped project) changed")
    parent = workspace.root.parent
    found += [f"{p.name} (beside the copy)" for p in sorted(parent.iterdir())
              if p != workspace.root and p.name != REPORT_NAME]
    return tuple(found)


def function_of(node: str) -> str:
    """A node id without its parameters: ``t.py::test_f[3-x]`` -> ``t.py::test_f``."""
    return node.split("[", 1)[0]


def broken_tests(before: Sequence[str], after: Sequence[str]) -> tuple[str, ...]:
    """The tests that passed ``before`` and do not pass ``after``.

    A parametrized test's generated ids may differ between two runs of the same tree (cases drawn from a
    set whose order follows object ids), so a missing id counts as broken only as far as its test
    function passes fewer cases than before."""
    passing = set(after)
    missing = [node for node in before if node not in passing]
    now = Counter(function_of(n) for n in after)
    then = Counter(function_of(n) for n in before)
    shown: Counter[str] = Counter()
    broken = []
    for node in missing:
        function = function_of(node)
        if shown[function] < then[function] - now[function]:
            shown[function] += 1
            broken.append(node)
    return tuple(broken)


def judge(run: TestRun, hashes: dict[str, str], outside: tuple[str, ...], baseline: Baseline,
          digest: str, hidden_passed: bool | None = None) -> Verdict:
    """The verdict from a final test run and the final tree's hashes (pure; :func:`verify` gathers the facts).

    With a hidden grader, a fix also needs the grader green: visible tests alone can be passed by a
    function that special-cases the examples."""
    tests_changed = changed_tests(baseline.hashes, hashes)
    broken = broken_tests(baseline.passed, run.passed)
    fixed = run.green and not tests_changed and not outside and hidden_passed is not False
    return Verdict(fixed, run.outcome, len(run.passed), tuple(run.failed), broken, tests_changed, outside, digest,
                   hidden_passed)


def hidden_grade(workspace: Workspace, grader: Path, *, timeout: float = VERIFY_TIMEOUT) -> bool:
    """Run a benchmark's hidden tests on the final tree, in a copy of its own (the arm's copy never sees them)."""
    with Workspace(workspace.root, python=workspace.python) as copy:
        target = copy.root / "tests" / HIDDEN_NAME
        target.parent.mkdir(exist_ok=True)
        target.write_text(grader.read_text(encoding="utf-8"), encoding="utf-8")
        run = copy.run_tests(timeout=timeout)
    mine = f"tests/{HIDDEN_NAME}::"
    return any(n.startswith(mine) for n in run.passed) and not any(n.startswith(mine) for n in run.failed)


def verify(workspace: Workspace, baseline: Baseline, *, timeout: float = VERIFY_TIMEOUT,
           hidden: Path | None = None) -> Verdict:
    """Judge the tree an arm left in ``workspace`` (which must still exist): full pytest run, hashes, outside,
    and the hidden grader where the task has one."""
    run = workspace.run_tests(timeout=timeout)
    graded = hidden_grade(workspace, hidden, timeout=timeout) if hidden is not None else None
    return judge(run, tree_hashes(workspace.root), outside_changes(workspace, baseline), baseline,
                 workspace.digest(), graded)
