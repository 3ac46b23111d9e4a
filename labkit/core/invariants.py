"""Named invariants: properties that must hold after every step of a run.

An invariant looks at the reduced state and the event history and returns ``None`` when it holds
or a sentence saying what is wrong. Returning a sentence (rather than ``False``) lets the violation
event in the log say *which* action broke the rule, which is what a learner needs to see.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from labkit.core.events import Event

Check = Callable[[Any, Sequence[Event]], "str | None"]


@dataclass(frozen=True)
class Invariant:
    """A named property of a run. ``check(state, events)`` returns None or a violation detail."""

    name: str
    check: Check
    description: str = ""

    def violation(self, state: Any, events: Sequence[Event]) -> str | None:
        """Run the check; an exception inside it counts as a violation, never as a pass."""
        try:
            result = self.check(state, events)
        except Exception as exc:  # a crashing check must not let a bad state through
            return raised(exc)
        return None if result is None else judged(result)


def raised(exc: Exception) -> str:
    """The violation detail for a check that raised instead of answering."""
    return f"the check itself raised {type(exc).__name__}: {exc}"


def judged(result: object) -> str:
    """The violation detail for a check's answer other than None: the sentence, or what was wrong with it.

    Split from :meth:`Invariant.violation` so a hot path (``LabMachine``) can call ``check`` itself and
    judge only the rare non-None answer, with the same outcome.
    """
    if not isinstance(result, str) or not result:
        return f"the check returned {result!r}; it must return None (holds) or a non-empty sentence"
    return result
