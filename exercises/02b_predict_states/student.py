"""Exercise 02b: predict the states six runs pass through. Fill in the TODOs, then run `labkit check 02b`.

See what you predict from: `.venv/bin/python exercises/02b_predict_states/scenarios.py`. This file holds only
your predictions, written out by hand (the checker refuses imports and calls here).
"""

# For each scenario: the machine state after each transition in its window, in order.
# Example: a window with three transitions might be ["EXECUTING", "OBSERVING", "COMMITTING"].
PREDICTIONS: dict[str, list[str]] = {
    "lost_write": [],  # TODO
    "duplicate_answer": [],  # TODO
    "premature_done": [],  # TODO
    "approved": [],  # TODO
    "strict_denial": [],  # TODO
    "status_blind": [],  # TODO
}

# For each scenario: how the run ends (succeeded, failed, incomplete or needs_review).
OUTCOMES: dict[str, str] = {
    "lost_write": "",  # TODO
    "duplicate_answer": "",  # TODO
    "premature_done": "",  # TODO
    "approved": "",  # TODO
    "strict_denial": "",  # TODO
    "status_blind": "",  # TODO
}
