# BEGIN SOLUTION
"""Exercise 05b, one solution: the four-field contract's validator and its re-ask message."""
# STUB: """Exercise 05b: the four-field contract's validator and its re-ask message. Fill in the TODOs, then run
# STUB: `labkit check 05b`."""
# END SOLUTION

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Violation:
    code: str  # not_json | wrong_shape | unknown_signal | missing_results
    detail: str


@dataclass(frozen=True)
class Verdict:
    answer: dict[str, Any] | None
    violation: Violation | None


# BEGIN SOLUTION
FIELDS = {"message": str, "signal": str, "results": dict, "summary": str}


def _refuse(code: str, detail: str) -> Verdict:
    return Verdict(None, Violation(code, detail))


def _empty(value: Any) -> bool:
    return value is None or value == "" or value == []


# STUB: # (helpers of your own may go here)
# STUB:
# STUB:
# END SOLUTION
def check_answer(raw: str, signals: list[str], needs: dict[str, list[str]], known: dict[str, Any]) -> Verdict:
    """Check one raw answer against the contract (see README for the order of the checks)."""
    # BEGIN SOLUTION
    try:
        data = json.loads(raw)
    except ValueError as exc:
        return _refuse("not_json", f"the answer is not valid JSON ({exc})")
    if not isinstance(data, dict):
        return _refuse("wrong_shape", f"the answer is a {type(data).__name__}, not an object")
    if set(data) != set(FIELDS):
        return _refuse("wrong_shape", f"the answer must have exactly the fields {', '.join(FIELDS)}; "
                                      f"it has {', '.join(sorted(data)) or 'none'}")
    for name, kind in FIELDS.items():
        if not isinstance(data[name], kind):
            return _refuse("wrong_shape", f"'{name}' must be a {kind.__name__}")
    if not data["message"].strip():
        return _refuse("wrong_shape", "'message' is empty")
    if data["signal"] not in signals:
        return _refuse("unknown_signal", f"signal '{data['signal']}' is not allowed; allowed: {', '.join(signals)}")
    missing = [n for n in needs.get(data["signal"], [])
               if _empty(data["results"].get(n)) and _empty(known.get(n))]
    if missing:
        return _refuse("missing_results", f"signal '{data['signal']}' needs {', '.join(missing)}")
    # STUB: data = json.loads(raw)  # TODO: a text that is not JSON is a violation, not a crash
    # STUB: # TODO: the shape: an object with exactly message, signal, results, summary, of the right types
    # STUB: # TODO: the signal must be one of `signals`
    # STUB: # TODO: every result the signal needs must be given now (non-empty) or known from before
    # END SOLUTION
    return Verdict(data, None)


def reask_message(violation: Violation, signals: list[str]) -> str:
    """The follow-up prompt: what was wrong, and which signals are allowed."""
    # BEGIN SOLUTION
    return (f"Your answer broke the contract: {violation.detail}. Answer again with one JSON object with "
            f"message, signal (one of: {', '.join(signals)}), results and summary.")
    # STUB: return "Please answer again."  # TODO
    # END SOLUTION
