"""Errors that speak to a learner: what was wrong, where, and what to do next (``str(err)`` says all three)."""

from __future__ import annotations


class LabkitError(Exception):
    """Base class: a message for the learner plus an optional hint on what to do."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        self.message = message
        self.hint = hint
        super().__init__(message if hint is None else f"{message}\n  what to do: {hint}")


class TableError(LabkitError):
    """A transition table failed its build checks; ``problems`` lists every finding."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        listing = "\n".join(f"  - {p}" for p in problems)
        super().__init__(
            f"the transition table has {len(problems)} problem(s):\n{listing}",
            "fix the rows named above; every row is shown as (source, event -> dest [guard]).",
        )


class IllegalTransition(LabkitError):
    """An event arrived in a state whose table rows do not handle it."""

    def __init__(self, state: str, event: str, allowed: list[str], reason: str = "") -> None:
        self.state, self.event, self.allowed = state, event, allowed
        allowed_text = ", ".join(allowed) if allowed else "none"
        why = f" ({reason})" if reason else ""
        super().__init__(
            f"event '{event}' is not allowed in state '{state}'{why}; allowed there: {allowed_text}",
            "send one of the allowed events, or add a row for it to the table.",
        )


class InvariantViolation(LabkitError):
    """An invariant did not hold after a step; the violation is already in the event log."""

    def __init__(self, name: str, detail: str, seq: int, after_seq: int | None = None) -> None:
        """``seq`` is the recorded violation's own seq; ``after_seq`` the event that broke the invariant."""
        self.name, self.detail, self.seq = name, detail, seq
        self.after_seq = seq - 1 if after_seq is None else after_seq
        super().__init__(
            f"invariant '{name}' broken by event seq {self.after_seq}: {detail} "
            f"(the violation is recorded as event seq {seq})",
            "read the events up to that seq to see which step broke it; the log keeps the violation.",
        )


class RunFinished(LabkitError):
    """Something was to be recorded in a run that already ended: a terminal state is absorbing."""

    def __init__(self, state: str, event: str, end_seq: int) -> None:
        self.state, self.event, self.end_seq = state, event, end_seq
        super().__init__(
            f"the run ended in '{state}' at event seq {end_seq}; '{event}' cannot be recorded after the end",
            "a finished run stays finished: start a new run for new work (nothing was recorded).",
        )


class EventLogError(LabkitError):
    """An event log (JSONL or SQLite) could not be read as a valid, untampered chain."""

    def __init__(self, message: str, hint: str | None = None, *, seq: int | None = None,
                 line: int | None = None) -> None:
        self.seq, self.line = seq, line
        super().__init__(message, hint)
