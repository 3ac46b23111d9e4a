"""Checker for exercise 01: the table must build and behave as the specification says.

The checks drive the student's table through scenarios taken from the specification, so any
table that behaves correctly passes, whatever order its rows are written in.
"""

from __future__ import annotations

from types import ModuleType

from labkit import IllegalTransition, LabkitError, LabMachine, TableError

GUARDS = {"retries_left": lambda state, payload: payload.get("retries_left", 0) > 0}

# (what the scenario checks, the events with their payloads, the state it must end in)
SCENARIOS = [
    ("the happy path", [("indexed", {}), ("plan_valid", {}), ("edits_done", {}), ("tests_passed", {})], "DONE"),
    ("an invalid plan is retried", [("indexed", {}), ("plan_invalid", {"retries_left": 2})], "PLAN"),
    ("an invalid plan with no retries left fails", [("indexed", {}), ("plan_invalid", {"retries_left": 0})],
     "FAILED"),
    ("failing tests lead to a fix and back to testing",
     [("indexed", {}), ("plan_valid", {}), ("edits_done", {}), ("tests_failed", {"retries_left": 1}),
      ("patch_ready", {})], "TEST"),
    ("failing tests with no retries left fail",
     [("indexed", {}), ("plan_valid", {}), ("edits_done", {}), ("tests_failed", {"retries_left": 0})], "FAILED"),
    ("giving up in FIX fails",
     [("indexed", {}), ("plan_valid", {}), ("edits_done", {}), ("tests_failed", {"retries_left": 1}),
      ("give_up", {})], "FAILED"),
    *[(f"a timeout in {state} fails", [*prefix, ("timeout", {})], "FAILED") for state, prefix in [
        ("DISCOVER", []),
        ("PLAN", [("indexed", {})]),
        ("EDIT", [("indexed", {}), ("plan_valid", {})]),
        ("TEST", [("indexed", {}), ("plan_valid", {}), ("edits_done", {})]),
        ("FIX", [("indexed", {}), ("plan_valid", {}), ("edits_done", {}), ("tests_failed", {"retries_left": 1})]),
    ]],
]

# (what must be rejected, the events before it, the event that must be refused)
REJECTIONS = [
    ("editing before a plan exists", [("indexed", {})], "edits_done"),
    ("testing before any edit", [("indexed", {}), ("plan_valid", {})], "tests_passed"),
    ("anything after DONE", [("indexed", {}), ("plan_valid", {}), ("edits_done", {}), ("tests_passed", {})],
     "timeout"),
    ("skipping discovery", [], "plan_valid"),
]


def _machine(table) -> LabMachine:
    return LabMachine(table, guards=GUARDS, clock=lambda: 0.0)


def check(module: ModuleType) -> list[str]:
    feedback: list[str] = []
    try:
        table = module.build_table()
    except TableError as exc:
        return [f"build_table() is refused by the build checks: {p}" for p in exc.problems]
    except LabkitError as exc:
        return [f"build_table() failed: {exc.message}"]
    if table.initial != "DISCOVER":
        feedback.append(f"the job must start in DISCOVER, not {table.initial}")
    if set(table.terminal) != {"DONE", "FAILED"}:
        feedback.append(f"DONE and FAILED (only) must be terminal; you have {sorted(table.terminal) or 'none'}")
    unknown_guards = table.guard_names() - set(GUARDS)
    if unknown_guards:
        return [*feedback, f"use only the guard 'retries_left'; found {', '.join(sorted(unknown_guards))}"]
    for title, steps, expected in SCENARIOS:
        machine = _machine(table)
        try:
            for event, payload in steps:
                machine.fire(event, **payload)
        except IllegalTransition as exc:
            feedback.append(f"{title}: event '{exc.event}' was refused in state '{exc.state}'")
            continue
        if machine.status != expected:
            feedback.append(f"{title}: ended in {machine.status}, expected {expected}")
    for title, steps, refused in REJECTIONS:
        machine = _machine(table)
        try:
            for event, payload in steps:
                machine.fire(event, **payload)
            machine.fire(refused)
        except IllegalTransition:
            continue
        feedback.append(f"{title}: '{refused}' should be rejected, but the table let it through")
    return feedback
