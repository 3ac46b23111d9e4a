"""Exercise 09a: plausible wrong answers fail with a precise message, and the machine's own routing agrees
with the checker's cases (so the exercise teaches what the machine does)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from labkit.course.exercises import exercises_root, run_check
from labkit.repoedit.routing import route_after_tests

FOLDER = exercises_root() / "09a_test_routing"
SOLUTION = FOLDER / "solution.py"
STATE_OF = {"green": "DONE", "targeted_fix": "EDIT_FILE", "rollback": "ROLLBACK_OR_FIX"}


def _checker():
    spec = importlib.util.spec_from_file_location("check09", FOLDER / "check.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("check09", module)
    spec.loader.exec_module(module)
    return module


def _mutated(tmp_path: Path, before: str, after: str) -> Path:
    text = SOLUTION.read_text(encoding="utf-8")
    assert before in text, f"the mutation target is gone from 09a_test_routing/solution.py: {before!r}"
    target = tmp_path / "mine.py"
    target.write_text(text.replace(before, after), encoding="utf-8")
    return target


WRONG = [
    ("DONE on a partial pass (most tests pass)",
     'if outcome == "passed" and failed == 0 and passed > 0:', "if passed > failed:",
     "route_after_tests, a partial pass (4 passed, 1 failed) with a file to blame: went to DONE, "
     "which is not where this test run must go"),
    ("DONE whenever no test is reported as failed",
     'if outcome == "passed" and failed == 0 and passed > 0:', "if failed == 0:",
     "route_after_tests, a collection error (no test reported as failed) with a file to blame: went to DONE, "
     "which is not where this test run must go"),
    ("a hang is sent to a targeted fix",
     'if outcome in ("timeout", "no_tests") or', 'if outcome == "no_tests" or',
     "route_after_tests, a test run that hung (killed at the time limit): went to EDIT_FILE, "
     "which is not where this test run must go"),
    ("the fix budget is off by one",
     "fixes_used >= fix_budget", "fixes_used > fix_budget",
     "route_after_tests, a failure with every fix round spent: went to EDIT_FILE, which is not "
     "where this test run must go"),
    ("blame takes the first frame, not the deepest",
     "return in_plan[-1] if in_plan else None", "return in_plan[0] if in_plan else None",
     "blame, the deepest planned frame: returned 'words.py', which is not the planned file of the deepest frame"),
    ("blame searches the whole output, not the frames",
     "named = [m.group(1) for m in FRAME.finditer(output)]",
     r"named = re.findall(r'([\w./-]+\.py)', output)",
     "blame, a file named in a message, not in a frame: returned 'words.py', which is not the "
     "planned file of the deepest frame (there is none here)"),
]


@pytest.mark.parametrize(("mistake", "before", "after", "first"), WRONG, ids=[w[0] for w in WRONG])
def test_a_plausible_wrong_answer_fails_with_a_precise_message(tmp_path, mistake, before, after, first):
    feedback = run_check("09a", _mutated(tmp_path, before, after)).feedback
    assert feedback and feedback[0] == first, (mistake, feedback)


def test_the_machines_routing_agrees_with_every_case_of_the_checker():
    for what, outcome, passed, failed, suspect, used, budget, expected in _checker().ROUTES:
        route = route_after_tests(outcome, passed, failed, suspect, used, budget)
        assert STATE_OF[route.trigger] == expected, what
        if expected == "EDIT_FILE":
            assert route.file == suspect


def test_the_machines_blame_agrees_with_the_checker():
    from labkit.repoedit.index import RepoIndex
    from labkit.repoedit.routing import locate_failure

    for what, output, planned, expected in _checker().BLAMES:
        planned_many = [*planned, "unrelated.py"]  # more than one file: no single-file fallback
        assert locate_failure(output, [], planned_many, RepoIndex(())) == expected, what
