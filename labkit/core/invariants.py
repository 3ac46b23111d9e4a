"""Named invariants: properties checked after every step; each returns None or a sentence saying what is
wrong, so the violation event names which action broke the rule."""

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
    """The violation detail for a non-None answer of a check (the hot path calls ``check`` itself)."""
    if not isinstance(result, str) or not result:
        return f"the check returned {result!r}; it must return None (holds) or a non-empty sentence"
    return result
