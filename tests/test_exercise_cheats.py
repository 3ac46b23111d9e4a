"""Cheats and lazy answers fail their checker (issue 25): each is a learner file that must not pass.

The learner's file runs in a sandboxed child and the checker judges in the parent, so a file that
patches the checker through ``sys.modules`` patches nothing that judges; hidden inputs, drawn at
every check, refuse answers fitted to the visible cases; the source is read in the parent, so
imports of the answer (the solution, the checker, labkit's own answer) are refused before it runs.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from labkit.course.exercises import exercise_folders, exercise_number, exercises_root, find_exercise, run_check

ROOT = exercises_root()
NUMBERS = [exercise_number(p) for p in exercise_folders()]


def _folder(number: str) -> Path:
    return find_exercise(number)


def _solution(number: str) -> str:
    return (_folder(number) / "solution.py").read_text(encoding="utf-8")


def _replaced(number: str, *pairs: tuple[str, str]) -> str:
    text = _solution(number)
    for before, after in pairs:
        assert before in text, f"the mutation target is gone from {number}/solution.py: {before!r}"
        text = text.replace(before, after)
    return text


SYS_MODULES = ("import sys\n"
               "for _name, _mod in list(sys.modules.items()):\n"
               "    if 'check' in _name or 'probe' in _name:\n"
               "        _mod.check = _mod.judge = _mod.probe = lambda *a, **k: []\n")
# the same bypass without the words the static rule looks for: it still patches only the child
SYS_MODULES_HIDDEN = ("import sys\n"
                      "_m = getattr(sys, 'mod' + 'ules')\n"
                      "for _name, _mod in list(_m.items()):\n"
                      "    if 'labkit_probe' in _name:\n"
                      "        _mod.probe = lambda module, cases: {}\n")
IMPORT_SOLUTION = "from solution import *  # noqa\n"
IMPORT_SOLUTION_BY_PATH = (f"exec(open({str(ROOT)!r} + '/{{folder}}/solution.py').read())\n")
CRASH_PROBE_EXIT = "import os\nos._exit(0)\n"


def _cheats() -> list[tuple[str, str, str]]:
    """(exercise, what the cheat does, the learner's file)."""
    out: list[tuple[str, str, str]] = []
    for n in NUMBERS:
        folder = _folder(n).name
        out += [
            (n, "replaces the checker through sys.modules", SYS_MODULES),
            (n, "patches the probes through an obfuscated sys.modules", SYS_MODULES_HIDDEN),
            (n, "imports the solution", IMPORT_SOLUTION),
            (n, "execs the solution's file", IMPORT_SOLUTION_BY_PATH.format(folder=folder)),
            (n, "leaves the child before the probes run", CRASH_PROBE_EXIT),
            (n, "the solution, then forges a result line", _solution(n) + "\nprint('\\n@@labkit-probe-result@@"
                                                                       "{\"results\": {}}')\n"),
        ]
    out += [
        # 01a: constants and the visible runs special-cased
        ("01a", "a guard that is always true", _replaced("01a", ("    return state.retries_used < MAX_RETRIES\n",
                                                               "    return True\n"))),
        ("01a", "a guard that trusts the payload", _replaced("01a", ("    return state.retries_used < MAX_RETRIES\n",
                                                                   "    return payload.get('retries_left', 1) > 0\n"))),
        ("01a", "a table without the FIX timeout", _replaced("01a", (
            'for state in ("DISCOVER", "PLAN", "EDIT", "TEST", "FIX")', 'for state in ("DISCOVER", "PLAN")'))),
        # 02a
        ("02a", "a token signed with an empty signature", _replaced("02a", (
            "return Token(action_id, action, digest, policy.version, sign(secret, action_id, action, digest, "
            "policy.version))", "return Token(action_id, action, digest, policy.version, '')"))),
        ("02a", "an executor that accepts everything", _replaced("02a", (
            "    digest = args_digest(args)\n    if (token",
            "    return True\n    digest = args_digest(args)\n    if (token"))),
        ("02a", "an executor that refuses everything", _replaced("02a", (
            "    digest = args_digest(args)\n    if (token",
            "    return False\n    digest = args_digest(args)\n    if (token"))),
        ("02a", "validate special-cased to the visible action id", _replaced("02a", (
            "    digest = args_digest(args)\n    return Token(action_id",
            "    digest = args_digest(args)\n    action_id = 'a7'\n    return Token(action_id"))),
        # 02b: computes its answers, then deletes __file__
        ("02b", "computes its answers and deletes __file__",
         "from labkit.runtime import STATES\nPREDICTIONS = {}\nOUTCOMES = {}\ndel __file__\n"),
        ("02b", "a constant guess everywhere", _solution("02b").replace('"succeeded"', '"failed"')),
        ("02b", "the answers built by a comprehension", "PREDICTIONS = {k: [] for k in 'ab'}\nOUTCOMES = {}\n"),
        ("02b", "the answers read from the feedback's example", _solution("02b").replace(
            '"approved": ["WAITING_HUMAN", "VALIDATING", "EXECUTING", "OBSERVING", "COMMITTING", "PLANNING"]',
            '"approved": ["EXECUTING", "OBSERVING", "COMMITTING", "PLANNING", "PLANNING", "PLANNING"]')),
        # 03a
        ("03a", "a chain check that always says whole", _replaced("03a", ("    previous = GENESIS_HASH\n",
                                                                        "    return None\n    "
                                                                        "previous = GENESIS_HASH\n"))),
        ("03a", "a divergence that is always none", _replaced("03a", ("    state = empty\n    for position",
                                                                    "    return None\n    state = "
                                                                    "empty\n    for position"))),
        ("03a", "a reducer special-cased to the visible records", _replaced("03a", (
            '        record = event.payload["record_id"]\n',
            '        record = event.payload["record_id"] if event.payload["record_id"].startswith("r") else "r1"\n'))),
        # 04a
        ("04a", "counts that are always zero", _replaced("04a", ("    return sum(n - 1 for n in counts.values())",
                                                               "    return 0"))),
        ("04a", "the reference count imported from labkit", "from labkit.runtime.free_loop import "
                                                           "machine_unknown_writes_committed\n" + _solution("04a")),
        ("04a", "the visible seeds special-cased", _replaced("04a", (
            '    if run.arm == "machine":\n        count = 0\n',
            '    if run.seed > 11:\n        return 0\n    if run.arm == "machine":\n        count = 0\n'))),
        # 05a: an extra signal straight to the end without needs
        ("05a", "an extra signal straight to the end step", _replaced("05a", (
            "      back: {to: name, when: the guest wants to change the name}\n",
            "      back: {to: name, when: the guest wants to change the name}\n      finish: {to: done}\n"))),
        ("05a", "next without needs", _replaced("05a", ("next: {to: done, needs: [date], when: the guest gave a date}",
                                                      "next: {to: done, when: the guest gave a date}"))),
        ("05a", "a scenario that is not text", "SCENARIO = None\n"),
        ("05a", "the step left as handed out", (_folder("05a") / "student.py").read_text(encoding="utf-8")),
        # 05b: a validator that ignores its needs argument
        ("05b", "a validator that ignores needs", _replaced("05b", ('needs.get(data["signal"], [])', '["goal"]'))),
        ("05b", "a validator that ignores signals", _replaced("05b", (
            'if data["signal"] not in signals:', 'if data["signal"] not in ("next", "stay", "back"):'))),
        ("05b", "a validator that passes everything", _replaced("05b", (
            "    try:\n        data = json.loads(raw)",
            "    return Verdict(json.loads(raw) if raw.startswith('{') else None, None)\n"
            "    try:\n        data = json.loads(raw)"))),
        ("05b", "a re-ask message with the visible signals written in", _replaced("05b", (
            "(one of: {', '.join(signals)})", "(one of: next, stay, back)"))),
        # 08a: the whitelist imported, the lifecycle asks completed before the abort
        ("08a", "the whitelist imported from the library", _replaced("08a", (
            "from __future__ import annotations\n",
            "from __future__ import annotations\n\nfrom labkit.layers.writing import FLOW_WHITELIST as _W\n")).replace(
            "FLOW_WHITELIST: dict[str, set[str]] = {", "FLOW_WHITELIST: dict[str, set[str]] = dict(_W) or {")),
        ("08a", "the whitelist taken from the library module", _replaced("08a", (
            "from __future__ import annotations\n", "from __future__ import annotations\n\nimport "
            "labkit.layers.writing\n"))),
        ("08a", "a lifecycle that asks completed before the abort", _replaced("08a", (
            '        if self._aborted or (self._phase == "COMPLETE" and self._flow != "IDLE"):',
            '        if self._phase == "COMPLETE" and self._flow == "IDLE":\n            return "completed"\n'
            '        if self._aborted or (self._phase == "COMPLETE" and self._flow != "IDLE"):'))),
        ("08a", "a lifecycle that is a constant", _replaced("08a", ("    @property\n    def lifecycle(self) -> str:",
                                                                  "    lifecycle = 'idle'\n\n    "
                                                                  "@property\n    def _lc(self) -> str:"))),
        # 09a: a blame that goes by the plan's order
        ("09a", "a blame that ignores which frame is deepest", _replaced("09a", (
            "    in_plan = [path for path in named if path in planned]\n    return in_plan[-1] if in_plan else None",
            "    in_plan = [path for path in planned if path in named]\n    return in_plan[-1] if in_plan else None"))),
        ("09a", "the routing imported from labkit", "from labkit.repoedit.routing import route_after_tests  # noqa\n"
                                                   + _solution("09a")),
        ("09a", "a blame special-cased to the visible traceback", _replaced("09a", (
            "    named = [m.group(1) for m in FRAME.finditer(output)]",
            "    named = ['words.py', 'textutil.py'] if 'textutil' in output else [m.group(1) for m in "
            "FRAME.finditer(output)]\n    named = [n for n in named if n in ('words.py', 'textutil.py', 'cli.py')]"))),
        ("09a", "a route that is a constant", _replaced("09a", (
            '    if outcome == "passed" and failed == 0 and passed > 0:',
                                                              '    return Route("ROLLBACK_OR_FIX")\n    if outcome == '
                                                              '"passed" and failed == 0 and passed > 0:'))),
    ]
    return out


CHEATS = _cheats()


@pytest.mark.parametrize(("number", "what", "text"), CHEATS, ids=[f"{n}-{w}" for n, w, _ in CHEATS])
def test_a_cheat_fails_its_checker(tmp_path: Path, number: str, what: str, text: str) -> None:
    mine = tmp_path / "mine.py"
    mine.write_text(text, encoding="utf-8")
    report = run_check(number, mine, timeout=30)
    assert not report.passed, f"{number}: '{what}' passed"
    assert all(item.strip() for item in report.feedback)


def test_every_exercise_has_at_least_three_cheats_of_its_own_beyond_the_shared_ones() -> None:
    own = {n: sum(1 for m, _, _ in CHEATS if m == n) - 6 for n in NUMBERS}
    assert all(count >= 3 for count in own.values()), own


def test_an_endless_loop_is_a_clear_failure_not_a_hang(tmp_path: Path) -> None:
    mine = tmp_path / "mine.py"
    mine.write_text("while True:\n    pass\n", encoding="utf-8")
    report = run_check("09a", mine, timeout=3)
    assert report.feedback == ["mine.py did not finish within 3 s (an endless loop, or waiting for input?); "
                               "nothing was checked"]


def test_the_sys_modules_bypass_is_refused_by_name(tmp_path: Path) -> None:
    mine = tmp_path / "mine.py"
    mine.write_text(SYS_MODULES, encoding="utf-8")
    assert run_check("01a", mine).feedback == ["mine.py line 2: it reaches into .modules; an answer file must not "
                                              "touch the interpreter's machinery"]


@pytest.mark.parametrize("number", NUMBERS)
def test_feedback_on_the_student_file_names_no_expected_value(number: str) -> None:
    feedback = run_check(number).feedback
    assert feedback and not any("expected" in item for item in feedback), feedback
