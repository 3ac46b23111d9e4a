"""Exercise 01, one solution: the code-change job as a transition table."""

from labkit import Row, TransitionTable

STATES = ["DISCOVER", "PLAN", "EDIT", "TEST", "FIX", "DONE", "FAILED"]

ROWS = [
    Row("DISCOVER", "indexed", "PLAN"),
    Row("PLAN", "plan_valid", "EDIT"),
    Row("PLAN", "plan_invalid", "PLAN", "retries_left"),
    Row("PLAN", "plan_invalid", "FAILED", "not retries_left"),
    Row("EDIT", "edits_done", "TEST"),
    Row("TEST", "tests_passed", "DONE"),
    Row("TEST", "tests_failed", "FIX", "retries_left"),
    Row("TEST", "tests_failed", "FAILED", "not retries_left"),
    Row("FIX", "patch_ready", "TEST"),
    Row("FIX", "give_up", "FAILED"),
    *[Row(state, "timeout", "FAILED") for state in ("DISCOVER", "PLAN", "EDIT", "TEST", "FIX")],
]


def build_table() -> TransitionTable:
    return TransitionTable.build("code_change", STATES, ROWS, initial="DISCOVER", terminal=["DONE", "FAILED"])
