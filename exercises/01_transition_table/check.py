"""Checker for exercise 01: the table must be exactly the specification's, and the machine must count its retries.

Two views of the same answer. The rows are compared, as a set, with the rows the specification
asks for: a table that behaves well on the scenarios but has an extra way through (a fix that
ends the job without testing again) is refused, and so is one that misses a row. The scenarios
then drive the student's table, reducer and guard through runs where the events' payloads lie
about the retries left, so only a machine that counts its own retries passes.
"""

from __future__ import annotations

from types import ModuleType

from labkit import IllegalTransition, LabkitError, LabMachine, TableError

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


def _row(row: tuple[str, str, str, str | None]) -> str:
    source, event, dest, guard = row
    return f"({source}, {event} -> {dest}{f' [{guard}]' if guard else ''})"


def _compare_rows(table) -> list[str]:
    """Missing and extra rows, each named; an extra row is a way through the job nobody specified."""
    mine = {(r.source, r.event, r.dest, r.guard) for r in table.rows}
    feedback = [f"missing row {_row(row)}" for row in sorted(EXPECTED_ROWS - mine, key=str)]
    for row in sorted(mine - EXPECTED_ROWS, key=str):
        source, event, _, _ = row
        handled = any((s, e) == (source, event) for s, e, _, _ in EXPECTED_ROWS)
        why = ("the specification sends this event elsewhere" if handled
               else f"the specification does not handle '{event}' in {source}; the machine must reject it")
        feedback.append(f"row {_row(row)} is not in the specification: {why}")
    return feedback


def _machine(module: ModuleType, table) -> LabMachine:
    return LabMachine(table, guards={"retries_left": module.retries_left}, reduce=module.reduce,
                      empty=module.JobState(), clock=lambda: 0.0)


def _scenarios(module: ModuleType, table) -> list[str]:
    feedback = []
    for title, steps, expected in SCENARIOS:
        machine = _machine(module, table)
        try:
            for event, payload in steps:
                machine.fire(event, **payload)
        except IllegalTransition as exc:
            feedback.append(f"{title}: event '{exc.event}' was refused in state '{exc.state}'")
            continue
        if machine.status != expected:
            feedback.append(f"{title}: ended in {machine.status}, expected {expected}")
        elif machine.state.status != machine.status:
            feedback.append(f"{title}: your reducer says {machine.state.status!r}, the machine is in "
                            f"{machine.status}; reduce must move status to the event's dest")
    return feedback


def check(module: ModuleType) -> list[str]:
    missing = [name for name in ("build_table", "reduce", "retries_left", "JobState") if not hasattr(module, name)]
    if missing:
        return [f"the file must define {', '.join(missing)}"]
    if getattr(module, "MAX_RETRIES", None) != MAX_RETRIES:
        return [f"MAX_RETRIES must stay {MAX_RETRIES}, as the specification says"]
    try:
        table = module.build_table()
    except TableError as exc:
        return [f"build_table() is refused by the build checks: {p}" for p in exc.problems]
    except LabkitError as exc:
        return [f"build_table() failed: {exc.message}"]
    feedback: list[str] = []
    if table.initial != "DISCOVER":
        feedback.append(f"the job must start in DISCOVER, not {table.initial}")
    if set(table.terminal) != {"DONE", "FAILED"}:
        feedback.append(f"DONE and FAILED (only) must be terminal; you have {sorted(table.terminal) or 'none'}")
    unknown_guards = table.guard_names() - {"retries_left"}
    if unknown_guards:
        return [*feedback, f"use only the guard 'retries_left'; found {', '.join(sorted(unknown_guards))}"]
    feedback += _compare_rows(table)
    try:
        feedback += _scenarios(module, table)
    except LabkitError as exc:
        feedback.append(f"the machine could not run your table: {exc.message}")
    return feedback
