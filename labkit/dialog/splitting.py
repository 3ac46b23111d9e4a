"""Whether a free-text value the model records mixes in another variable's part of the message: ``split_values``.

Neither the grammar (the shape is right) nor grounding (every word was said) sees several values written as
one ("A tool that plans my running, just for me." as the ``goal``). The value is cut into parts at commas,
semicolons, sentence ends and "and"; a later part holding a *cue* of another variable (declared under
``cues:``) and none of the value's own is that variable's. The first part is never taken (the answer to the
current question starts there). A cue matches case-insensitively, as whole words where it begins or ends
with a letter or digit ("@" matches inside an email). The check only refuses; it never edits a value.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from itertools import pairwise
from typing import Any

from labkit.dialog.events import ModelCalled

PART_BREAK = re.compile(r"\s*(?:[,;]|[.!?](?:\s+|$)|\s+and\s+)\s*", re.IGNORECASE)
_BREAK_KEPT = re.compile(f"({PART_BREAK.pattern})", re.IGNORECASE)


def parts(value: Any) -> list[str]:
    """The parts of a string or list value, in order: each item cut at commas, semicolons, sentence ends and
    "and" (an email address keeps its dots)."""
    items = value if isinstance(value, list) else [value]
    return [p for item in items if isinstance(item, str) for p in PART_BREAK.split(item.strip()) if p.strip()]


def _pattern(cue: str) -> re.Pattern[str]:
    head = r"\b" if cue[:1].isalnum() else ""
    tail = r"\b" if cue[-1:].isalnum() else ""
    return re.compile(head + re.escape(cue) + tail, re.IGNORECASE)


def cued(text: str, cues: Mapping[str, Sequence[str]]) -> list[str]:
    """The variables one of whose cues ``text`` holds, in the order of ``cues``."""
    return [name for name, words in cues.items() if any(_pattern(w).search(text) for w in words)]


def foreign_parts(results: Mapping[str, Any], cues: Mapping[str, Sequence[str]]) -> dict[str, list[tuple[str, str]]]:
    """For each string or list value in ``results``: its parts after the first that belong to another variable,
    as (part, that variable). A part holding cues of two other variables, or one of its own, is left alone."""
    mixed: dict[str, list[tuple[str, str]]] = {}
    for name, value in results.items():
        if not isinstance(value, (str, list)):
            continue
        for part in parts(value)[1:]:
            names = cued(part, cues)
            if len(names) == 1 and names[0] != name:
                mixed.setdefault(name, []).append((part, names[0]))
    return mixed


def cut_parts(value: Any, foreign: set[str]) -> Any:
    """``value`` with its ``foreign`` parts cut out, each with the break before it; the rest is left as written
    ("a tool that plans my running training, just for me" -> "a tool that plans my running training"). A list
    item left empty is dropped; the first part is never foreign (:func:`foreign_parts`), so something stays."""
    if isinstance(value, list):
        items = [cut_parts(item, foreign) for item in value if isinstance(item, str)]
        return [item for item in items if item]
    pieces = _BREAK_KEPT.split(value.strip())  # part, break, part, break, ..., part
    kept = pieces[0] if pieces[0].strip() not in foreign else ""
    for brk, part in zip(pieces[1::2], pieces[2::2], strict=True):
        if part.strip() and part.strip() not in foreign:
            kept += (brk if kept else "") + part
    return kept.strip()


def mixed_detail(mixed: Mapping[str, list[tuple[str, str]]]) -> str:
    """The sentence the re-ask shows: each value, the parts it took from others, and whose they are."""
    said = "; ".join(f"{name} also holds " + ", ".join(f"'{part}' (that is {other})" for part, other in found)
                     for name, found in mixed.items())
    return (f"{said}. Keep in each field only its own words, and put each of those parts under the field named, "
            "in the user's words")


def split_reasks(events: Sequence[Any]) -> list[tuple[int, str, bool]]:
    """Each ``mixed_values`` refusal of a conversation's log as (turn, step, whether the re-ask wrote the same
    results again): what the feature's refusal bought, read from the log."""
    calls = [e for e in events if isinstance(e, ModelCalled)]
    found = []
    for refused, reask in pairwise(calls):
        if refused.violation != "mixed_values" or reask.attempt != 2:
            continue
        try:
            same = json.loads(refused.raw).get("results") == json.loads(reask.raw).get("results")
        except (ValueError, AttributeError):
            same = False
        found.append((refused.turn, refused.step, same))
    return found
