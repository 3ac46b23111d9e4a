# BEGIN SOLUTION
"""Exercise 02b, one solution: the states six runs pass through after their first surprise."""
# STUB: """Exercise 02b: predict the states six runs pass through. Fill in the TODOs, then run `labkit check 02b`.
# STUB:
# STUB: See what you predict from: `.venv/bin/python exercises/02b_predict_states/scenarios.py`. This file holds only
# STUB: your predictions, written out by hand (the checker refuses imports and calls here).
# STUB: """
# END SOLUTION

# For each scenario: the machine state after each transition in its window, in order.
# Example: a window with three transitions might be ["EXECUTING", "OBSERVING", "COMMITTING"].
PREDICTIONS: dict[str, list[str]] = {
    # BEGIN SOLUTION
    "lost_write": ["UNKNOWN", "EXECUTING", "OBSERVING", "COMMITTING", "SUCCEEDED"],
    "duplicate_answer": ["OBSERVING", "OBSERVING", "COMMITTING", "PLANNING"],
    "premature_done": ["PLANNING", "VALIDATING", "EXECUTING", "OBSERVING", "COMMITTING", "PLANNING"],
    "approved": ["WAITING_HUMAN", "VALIDATING", "EXECUTING", "OBSERVING", "COMMITTING", "PLANNING"],
    "strict_denial": ["FAILED"],
    "status_blind": ["UNKNOWN", "UNKNOWN", "UNKNOWN", "UNKNOWN", "UNKNOWN", "FAILED"],
    # STUB: "lost_write": [],  # TODO
    # STUB: "duplicate_answer": [],  # TODO
    # STUB: "premature_done": [],  # TODO
    # STUB: "approved": [],  # TODO
    # STUB: "strict_denial": [],  # TODO
    # STUB: "status_blind": [],  # TODO
    # END SOLUTION
}

# For each scenario: how the run ends (succeeded, failed, incomplete or needs_review).
OUTCOMES: dict[str, str] = {
    # BEGIN SOLUTION
    "lost_write": "succeeded",
    "duplicate_answer": "succeeded",
    "premature_done": "succeeded",
    "approved": "succeeded",
    "strict_denial": "failed",
    "status_blind": "needs_review",
    # STUB: "lost_write": "",  # TODO
    # STUB: "duplicate_answer": "",  # TODO
    # STUB: "premature_done": "",  # TODO
    # STUB: "approved": "",  # TODO
    # STUB: "strict_denial": "",  # TODO
    # STUB: "status_blind": "",  # TODO
    # END SOLUTION
}
