"""What code reads off a task's text, the menu of next steps, and the draft code composes.

This module is the part of the machine arms that is *not* the model, stated in one place so that
nobody mistakes it for the model's work:

- the record ids a task's description names (in order) and its draft key are found by regular
  expressions, not by the model;
- the menu of next steps is "read one of the named records not yet read" plus "save" — minus the
  records the policy forbids (the harness knows the policy; this is a guard, not a model skill);
- the draft is composed by code (:func:`compose_draft`) from the records the run has read, in the
  order the description names them.

What is left to a planner is the choice from the menu at each step: which record next, whether a
named record belongs to the comparison at all, and when to stop reading and save. The no-model
ablation makes the same choice at random; the difference between the two is the model's share.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from labkit.runtime.records import differences_text, record_ids_in

__all__ = ["SAVE", "compose_draft", "draft_key_in", "menu", "record_ids_in", "shuffled"]

SAVE = "save"
_KEY = re.compile(r"\bkey\s+([A-Za-z0-9][A-Za-z0-9_.-]{0,63})")


def draft_key_in(text: str) -> str | None:
    """The draft key a task text names as ``key NAME`` (a trailing full stop is not part of it)."""
    found = _KEY.search(text)
    return found.group(1).rstrip(".") if found else None


def menu(description: str, read: Iterable[str], saved: Iterable[str], forbidden: Iterable[str]) -> list[str]:
    """The options of the next step: unread, allowed record ids named by the task, then :data:`SAVE`.

    Empty once the draft is saved (nothing is left to do but stop).
    """
    key = draft_key_in(description)
    if key is not None and key in set(saved):
        return []
    done, banned = set(read), set(forbidden)
    return [r for r in record_ids_in(description) if r not in done and r not in banned] + [SAVE]


def compose_draft(description: str, records: Mapping[str, Mapping[str, Any]]) -> str:
    """The differences draft of the records read, in the order the description names them (code, not model)."""
    order = [r for r in record_ids_in(description) if r in records]
    order += [r for r in records if r not in order]
    return differences_text(records[r] for r in order)


def shuffled(options: Sequence[str], rng: Any) -> list[str]:
    """``options`` in an order drawn from ``rng`` (a ``random.Random``): one thing a seed changes."""
    out = list(options)
    rng.shuffle(out)
    return out
