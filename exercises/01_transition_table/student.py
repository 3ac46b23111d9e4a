"""Exercise 01: the code-change job as a transition table. Fill in the TODOs, then run `labkit check 01`."""

from labkit import Row, TransitionTable

STATES = ["DISCOVER", "PLAN", "EDIT", "TEST", "FIX", "DONE", "FAILED"]

ROWS = [
    Row("DISCOVER", "indexed", "PLAN"),
    # TODO: PLAN — plan_valid, and plan_invalid split by the guard "retries_left" / "not retries_left"
    # TODO: EDIT — edits_done
    # TODO: TEST — tests_passed, and tests_failed split by the same guard
    # TODO: FIX — patch_ready and give_up
    # TODO: timeout from every state that is not terminal
]


def build_table() -> TransitionTable:
    """Build (and so check) the table. TableError lists whatever is still wrong with it."""
    return TransitionTable.build(
        "code_change", STATES, ROWS,
        initial="DISCOVER",
        terminal=[],  # TODO: which states end the job?
    )
