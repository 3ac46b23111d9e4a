"""Whether a value the model records was said by the user: the ``grounded_values`` check.

A grammar cannot catch invented values (the shape is right); code can, since every free-text value the script
asks for is the user's own words: each content word must occur in what the user has said so far. Enum values
are the script's words, so the current step's are not checked (a later step's taken early is: :func:`ungrounded`).
Case and punctuation are ignored, short function words (and "none") skipped, and two words match when equal or
sharing their first :data:`STEM` letters ("plans" / "planning"). The check refuses; it never edits a value.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping
from typing import Any

from labkit.dialog.scenario import ResultField

STEM = 4
# Words that carry no content of their own: a value may add them to the user's words.
FUNCTION_WORDS = frozenset({
    "a", "an", "the", "and", "or", "but", "of", "to", "in", "on", "at", "by", "for", "with", "from", "as",
    "is", "are", "be", "been", "it", "its", "this", "that", "these", "those", "my", "our", "your", "their",
    "his", "her", "me", "we", "you", "they", "i", "us", "them", "so", "not", "no", "any", "some", "all", "one",
    "must", "should", "can", "will", "would", "has", "have", "had", "do", "does", "did", "just", "only", "also",
    "very", "more", "most", "less", "than", "then", "there", "here", "what", "which", "who", "none",
})

_WORD = re.compile(r"[a-z0-9@._+-]+")


def words(text: str) -> list[str]:
    """The lower-cased words of ``text`` (an email address stays one word)."""
    return [w.strip("._-") for w in _WORD.findall(text.lower()) if w.strip("._-")]


def _same(a: str, b: str) -> bool:
    return a == b or (len(a) >= STEM and len(b) >= STEM and a[:STEM] == b[:STEM])


def unsaid_words(value: Any, said: Iterable[str]) -> list[str]:
    """The content words of ``value`` (a string or a list of strings) that the user never said."""
    items = value if isinstance(value, list) else [value]
    heard = {w for text in said for w in words(text)}
    missing: list[str] = []
    for item in items:
        if not isinstance(item, str):
            continue
        for word in words(item):
            if word in FUNCTION_WORDS or any(_same(word, h) for h in heard):
                continue
            if word not in missing:
                missing.append(word)
    return missing


def ungrounded(results: Mapping[str, Any], fields: Iterable[ResultField], said: Iterable[str],
               enums: Collection[str] = ()) -> dict[str, list[str]]:
    """For each free-text field of ``results`` holding words the user never said: those words.

    ``enums`` names enum fields checked too (a later step's choice taken early must be the user's word); the
    current step's own choice may be inferred ("I cannot use it at all" is ``high``).
    """
    said = list(said)
    free = {f.name for f in fields if f.type in ("string", "list") or (f.type == "enum" and f.name in enums)}
    found = {name: unsaid_words(value, said) for name, value in results.items() if name in free}
    return {name: missing for name, missing in found.items() if missing}
