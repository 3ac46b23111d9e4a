"""Exercise 05b: the four-field contract's validator and its re-ask message. Fill in the TODOs, then run
`labkit check 05b`."""

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


# (helpers of your own may go here)


def check_answer(raw: str, signals: list[str], needs: dict[str, list[str]], known: dict[str, Any]) -> Verdict:
    """Check one raw answer against the contract (see README for the order of the checks)."""
    data = json.loads(raw)  # TODO: a text that is not JSON is a violation, not a crash
    # TODO: the shape: an object with exactly message, signal, results, summary, of the right types
    # TODO: the signal must be one of `signals`
    # TODO: every result the signal needs must be given now (non-empty) or known from before
    return Verdict(data, None)


def reask_message(violation: Violation, signals: list[str]) -> str:
    """The follow-up prompt: what was wrong, and which signals are allowed."""
    return "Please answer again."  # TODO
