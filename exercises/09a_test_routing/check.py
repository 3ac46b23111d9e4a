"""Checker for exercise 09a: the RUN_TESTS routing on test runs that must go each way, then the blame.

The learner's functions run in the sandboxed child (``probe.py``); the judge is here. Hidden cases
are drawn afresh at every check: test runs judged by this file's reference routing, and tracebacks
with other file names whose deepest planned frame is anywhere in the plan (first, last, or in the
middle), so a blame that goes by the plan's order instead of the traceback's fails. Importing the
machine's own routing from labkit is refused. Feedback never names the expected state or file.
"""

from __future__ import annotations

import random
import re
from typing import Any

# (what, outcome, passed, failed, suspect, fixes used, fix budget, expected next state)
ROUTES: list[tuple[str, str, int, int, str | None, int, int, str]] = [
    ("every test passed", "passed", 5, 0, None, 0, 2, "DONE"),
    ("every test passed after a fix round", "passed", 5, 0, None, 2, 2, "DONE"),
    ("a partial pass (4 passed, 1 failed) with a file to blame", "failed", 4, 1, "words.py", 0, 2, "EDIT_FILE"),
    ("a partial pass (4 passed, 1 failed) after one of two fix rounds", "failed", 4, 1, "words.py", 1, 2,
     "EDIT_FILE"),
    ("a collection error (no test reported as failed) with a file to blame", "error", 0, 0, "cli.py", 0, 2,
     "EDIT_FILE"),
    ("a failure with every fix round spent", "failed", 4, 1, "words.py", 2, 2, "ROLLBACK_OR_FIX"),
    ("a failure with a fix budget of 0", "failed", 4, 1, "words.py", 0, 0, "ROLLBACK_OR_FIX"),
    ("a failure no planned file is blamed for", "failed", 3, 2, None, 0, 2, "ROLLBACK_OR_FIX"),
    ("a test run that hung (killed at the time limit)", "timeout", 0, 0, "words.py", 0, 2, "ROLLBACK_OR_FIX"),
    ("a run in which pytest found no tests", "no_tests", 0, 0, "words.py", 0, 2, "ROLLBACK_OR_FIX"),
    ("'passed' reported with zero tests", "passed", 0, 0, None, 0, 2, "ROLLBACK_OR_FIX"),
]

TRACE = """tests/test_words.py:12: in test_many_spaces
    assert count_words("a  b") == 2
words.py:8: in count_words
    return len(split_words(text))
textutil.py:3: in split_words
    return text.split(" ")
E   AssertionError"""

# (what, output, planned files, expected)
BLAMES: list[tuple[str, str, list[str], str | None]] = [
    ("the deepest planned frame", TRACE, ["words.py", "textutil.py"], "textutil.py"),
    ("the deepest frame is not planned", TRACE, ["words.py"], "words.py"),
    ("only the test file and unplanned files are named", TRACE, ["other.py"], None),
    ("Python's own traceback format", 'Traceback (most recent call last):\n  File "cli.py", line 3, in <module>\n'
     "    from greet import hello\nImportError: cannot import name 'hello'", ["greet.py", "cli.py"], "cli.py"),
    ("a file named in a message, not in a frame", "E   AssertionError: words.py:8 looks wrong", ["words.py"], None),
    ("the deepest planned frame, planned first", TRACE, ["textutil.py", "words.py"], "textutil.py"),
]
REFUSED_IMPORTS = {"labkit.repoedit.routing": "that is the machine's own routing; write yours",
                   **{f"labkit.repoedit.routing.{n}": "that is the machine's own routing; write yours"
                      for n in ("route_after_tests", "locate_failure", "blame")}}
FRAME = re.compile(r'^\s*(?:File ")?([\w./-]+\.py)(?:", line |:)\d+', re.MULTILINE)


def reference_route(outcome: str, passed: int, failed: int, suspect: str | None, used: int, budget: int) -> str:
    if outcome == "passed" and failed == 0 and passed > 0:
        return "DONE"
    if outcome in ("timeout", "no_tests") or suspect is None or used >= budget:
        return "ROLLBACK_OR_FIX"
    return "EDIT_FILE"


def reference_blame(output: str, planned: list[str]) -> str | None:
    in_plan = [m.group(1) for m in FRAME.finditer(output) if m.group(1) in planned]
    return in_plan[-1] if in_plan else None


def _hidden_trace(rng: random.Random) -> tuple[str, list[str]]:
    names = rng.sample(["parse.py", "store.py", "util/fmt.py", "core.py", "api.py", "io_helpers.py"], 4)
    lines = ["tests/test_app.py:7: in test_it", "    assert run() == 1"]
    for depth, name in enumerate(names[:3]):
        lines += [f"{name}:{rng.randint(2, 90)}: in f{depth}", f"    return f{depth + 1}()"]
    lines.append(f"E   ValueError: see {names[3]}:3")
    planned = [*rng.sample(names[:3], rng.randint(1, 3)), names[3]]
    rng.shuffle(planned)
    return "\n".join(lines), planned


def cases(rng: random.Random) -> dict[str, Any]:
    routes = [list(r[1:7]) for r in ROUTES]
    for _ in range(8):
        outcome = rng.choice(["passed", "failed", "error", "timeout", "no_tests"])
        passed, failed = rng.randint(0, 9), rng.randint(0, 3) if outcome != "passed" else 0
        routes.append([outcome, passed, failed, rng.choice([None, "a.py", "pkg/b.py"]), rng.randint(0, 3),
                       rng.randint(0, 3)])
    blames = [[output, planned] for _, output, planned, _ in BLAMES] + [list(_hidden_trace(rng)) for _ in range(4)]
    return {"routes": routes, "blames": blames}


def judge(results: dict[str, Any], cases: dict[str, Any], source: str) -> list[str]:
    if "missing" in results:
        return [f"the file must define {', '.join(results['missing'])}"]
    feedback: list[str] = []
    for index, (got, args) in enumerate(zip(results["routes"], cases["routes"], strict=True)):
        what = ROUTES[index][0] if index < len(ROUTES) else f"a hidden test run {tuple(args)}"
        expected = reference_route(*args)
        if "raised" in got:
            feedback.append(f"route_after_tests, {what}: raised {got['raised']}")
        elif got["next_state"] != expected:
            feedback.append(f"route_after_tests, {what}: went to {got['next_state']}, which is not where this test "
                            "run must go")
        elif expected == "EDIT_FILE" and got["file"] != args[3]:
            feedback.append(f"route_after_tests, {what}: a targeted fix must name the blamed file, got {got['file']!r}")
    for index, (got, (output, planned)) in enumerate(zip(results["blames"], cases["blames"], strict=True)):
        what = BLAMES[index][0] if index < len(BLAMES) else f"a hidden traceback (planned {', '.join(planned)})"
        if "raised" in got:
            feedback.append(f"blame, {what}: raised {got['raised']}")
        elif got["ok"] != reference_blame(output, planned):
            feedback.append(f"blame, {what}: returned {got['ok']!r}, which is not the planned file of the deepest "
                            "frame" + (" (there is none here)" if reference_blame(output, planned) is None else ""))
    return feedback
