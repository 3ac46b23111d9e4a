"""Checker for exercise 01a: the table must be exactly the specification's, and the machine must count its retries.

Two views of the same answer. The rows are compared, as a set, with the rows the specification
asks for: a table that behaves well on the scenarios but has an extra way through (a fix that
ends the job without testing again) is refused, and so is one that misses a row. The scenarios
then drive the student's table, reducer and guard through runs where the events' payloads lie
about the retries left, so only a machine that counts its own retries passes; hidden runs, drawn
afresh at every check, walk the specification at random so that no table special-cased to the
visible runs passes. The learner's code runs in a sandboxed child (``probe.py``); this file only
judges the data that comes back, and never says where a run should have ended.
"""

from __future__ import annotations

import random
from typing import Any

MAX_RETRIES = 2

# The specification as rows: (source, event, dest, guard). Order does not matter; the set does.
EXPECTED_ROWS = {
    ("DISCOVER", "indexed", "PLAN", None),
    ("PLAN", "plan_valid", "EDIT", None),
    ("PLAN", "plan_invalid", "PLAN", "retries_left"),
    ("PLAN", "plan_invalid", "FAILED", "not retries_left"),
    ("EDIT", "edits_done", "TEST", None),
    ("TEST", "tests_passed", "DONE", None),
    ("TEST", "tests_failed", "FIX", "retries_left"),
    ("TEST", "tests_failed", "FAILED", "not retries_left"),
    ("FIX", "patch_ready", "TEST", None),
    ("FIX", "give_up", "FAILED", None),
    *{(state, "timeout", "FAILED", None) for state in ("DISCOVER", "PLAN", "EDIT", "TEST", "FIX")},
}

LIE = {"retries_left": 99}  # a payload that claims retries are left: the machine must not believe it
TO_TEST = [("indexed", {}), ("plan_valid", {}), ("edits_done", {})]

# (what the scenario checks, the events with their payloads, the state it must end in)
SCENARIOS = [
    ("the happy path", [*TO_TEST, ("tests_passed", {})], "DONE"),
    ("an invalid plan is retried", [("indexed", {}), ("plan_invalid", {"retries_left": 0})], "PLAN"),
    ("a third invalid plan fails, whatever its payload says",
     [("indexed", {}), ("plan_invalid", {}), ("plan_invalid", {}), ("plan_invalid", LIE)], "FAILED"),
    ("failing tests lead to a fix and back to testing", [*TO_TEST, ("tests_failed", {}), ("patch_ready", {})],
     "TEST"),
    ("the budget is shared: an invalid plan and a failed test use it up",
     [("indexed", {}), ("plan_invalid", {}), *TO_TEST[1:], ("tests_failed", {}), ("patch_ready", {}),
      ("tests_failed", LIE)], "FAILED"),
    ("giving up in FIX fails", [*TO_TEST, ("tests_failed", {}), ("give_up", {})], "FAILED"),
    *[(f"a timeout in {state} fails", [*prefix, ("timeout", {})], "FAILED") for state, prefix in [
        ("DISCOVER", []),
        ("PLAN", TO_TEST[:1]),
        ("EDIT", TO_TEST[:2]),
        ("TEST", TO_TEST),
        ("FIX", [*TO_TEST, ("tests_failed", {})]),
    ]],
]


HIDDEN_RUNS = 6
RETRIED = ("plan_invalid", "tests_failed")


def _row(row: tuple[str, str, str, str | None]) -> str:
    source, event, dest, guard = row
    return f"({source}, {event} -> {dest}{f' [{guard}]' if guard else ''})"


def reference_end(steps: list[list[Any]]) -> str | tuple[str, str]:
    """Where the specification ends a run, or (event, state) for the step it refuses."""
    state, used = "DISCOVER", 0
    for event, _payload in steps:
        rows = [r for r in EXPECTED_ROWS if r[0] == state and r[1] == event]
        left = used < MAX_RETRIES
        chosen = [r for r in rows if r[3] is None or (r[3] == "retries_left") == left]
        if not chosen:
            return (event, state)
        state, used = chosen[0][2], used + (event in RETRIED)
    return state


def _hidden_run(rng: random.Random) -> list[list[Any]]:
    """A random walk through the specification (lying payloads included), 3 to 12 events long."""
    state, used, steps = "DISCOVER", 0, []
    for _ in range(rng.randint(3, 12)):
        if state in ("DONE", "FAILED"):
            break
        choices = sorted({r[1] for r in EXPECTED_ROWS if r[0] == state and r[1] != "timeout"})
        event = rng.choice(choices) if rng.random() > 0.05 else "timeout"
        payload = rng.choice([{}, {}, LIE, {"retries_left": 0}])
        steps.append([event, payload])
        end = reference_end(steps)
        state = end if isinstance(end, str) else "FAILED"
        used += event in RETRIED
    return steps


def cases(rng: random.Random) -> dict[str, Any]:
    visible = [[[e, dict(p)] for e, p in steps] for _, steps, _ in SCENARIOS]
    return {"runs": visible + [_hidden_run(rng) for _ in range(HIDDEN_RUNS)]}


def _compare_rows(mine: set[tuple[str, str, str, str | None]]) -> list[str]:
    """Missing and extra rows, each named; an extra row is a way through the job nobody specified.

    The rows are the README's specification, so naming a missing one gives nothing away.
    """
    feedback = [f"missing row {_row(row)}" for row in sorted(EXPECTED_ROWS - mine, key=str)]
    for row in sorted(mine - EXPECTED_ROWS, key=str):
        source, event, _, _ = row
        handled = any((s, e) == (source, event) for s, e, _, _ in EXPECTED_ROWS)
        why = ("the specification sends this event elsewhere" if handled
               else f"the specification does not handle '{event}' in {source}; the machine must reject it")
        feedback.append(f"row {_row(row)} is not in the specification: {why}")
    return feedback


def _runs(results: list[dict[str, Any]], runs: list[list[Any]]) -> list[str]:
    feedback = []
    titles = [title for title, _, _ in SCENARIOS]
    hidden_wrong = 0
    for index, (got, steps) in enumerate(zip(results, runs, strict=True)):
        title = titles[index] if index < len(titles) else None
        expected = reference_end(steps)
        if isinstance(expected, tuple):  # never: every run the checker sends is legal in the specification
            continue
        if "refused" in got:
            event, state = got["refused"]
            problem = f"event '{event}' was refused in state '{state}'"
        elif "error" in got:
            problem = f"the machine stopped: {got['error']}"
        elif got["status"] != expected:
            problem = f"ended in {got['status']}, which is not where the specification ends this run"
        elif got["reduced"] != got["status"]:
            problem = (f"your reducer says {got['reduced']!r}, the machine is in {got['status']}; reduce must move "
                       "status to the event's dest")
        else:
            continue
        if title is not None:
            feedback.append(f"{title}: {problem}")
        else:
            hidden_wrong += 1
            if hidden_wrong == 1:
                shown = ", ".join(e for e, _ in steps)
                feedback.append(f"a hidden run ({shown}): {problem}")
    if hidden_wrong > 1:
        feedback.append(f"{hidden_wrong} of {HIDDEN_RUNS} hidden runs went wrong in all")
    return feedback


def judge(results: dict[str, Any], cases: dict[str, Any], source: str) -> list[str]:
    if "missing" in results:
        return [f"the file must define {', '.join(results['missing'])}"]
    if results.get("max_retries") != MAX_RETRIES:
        return [f"MAX_RETRIES must stay {MAX_RETRIES}, as the specification says"]
    if "table_problems" in results:
        return [f"build_table() is refused by the build checks: {p}" for p in results["table_problems"]]
    if "build_error" in results:
        return [f"build_table() failed: {results['build_error']}"]
    feedback: list[str] = []
    if results["initial"] != "DISCOVER":
        feedback.append(f"the job must start in DISCOVER, not {results['initial']}")
    if set(results["terminal"]) != {"DONE", "FAILED"}:
        feedback.append(f"DONE and FAILED (only) must be terminal; you have {results['terminal'] or 'none'}")
    unknown_guards = set(results["guards"]) - {"retries_left"}
    if unknown_guards:
        return [*feedback, f"use only the guard 'retries_left'; found {', '.join(sorted(unknown_guards))}"]
    feedback += _compare_rows({tuple(row) for row in results["rows"]})
    feedback += _runs(results["runs"], cases["runs"])
    return feedback
