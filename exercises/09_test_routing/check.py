"""Checker for exercise 09: the RUN_TESTS routing on test runs that must go each way, then the blame."""

from __future__ import annotations

from types import ModuleType

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
]


def check(module: ModuleType) -> list[str]:
    feedback: list[str] = []
    for what, outcome, passed, failed, suspect, used, budget, expected in ROUTES:
        try:
            route = module.route_after_tests(outcome, passed, failed, suspect, used, budget)
        except Exception as exc:
            feedback.append(f"route_after_tests, {what}: raised {type(exc).__name__}: {exc}")
            continue
        got = getattr(route, "next_state", route)
        if got != expected:
            feedback.append(f"route_after_tests, {what}: went to {got}, expected {expected}")
        elif expected == "EDIT_FILE" and route.file != suspect:
            feedback.append(f"route_after_tests, {what}: a targeted fix must name the blamed file, got {route.file!r}")
    for what, output, planned, expected in BLAMES:
        try:
            got = module.blame(output, planned)
        except Exception as exc:
            feedback.append(f"blame, {what}: raised {type(exc).__name__}: {exc}")
            continue
        if got != expected:
            feedback.append(f"blame, {what}: returned {got!r}, expected {expected!r}")
    return feedback
