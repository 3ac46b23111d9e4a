"""The strongest rules written without a model, designed on dev only, for the machine-rule arm: :func:`route` (a keyword
lexicon), :func:`extract` (cue-scored candidates), :func:`pick_message` (shared stems) and
:func:`next_record` (named order, skipping those a sentence forbids)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from labkit.reading.taskfile import FORM_FIELDS
from labkit.runtime.records import record_ids_in

# ----------------------------------------------------------------------------- triage
QUEUE_WORDS = {
    "billing": ("charg", "invoice", "receipt", "price", "amount", "card", "debit", "payment", "paid", "refund",
                "bill", "money", "cost", "trial"),
    "shipping": ("parcel", "deliver", "tracking", "transit", "courier", "box", "arriv", "package", "ship",
                 "address", "items"),
    "technical": ("app", "crash", "wifi", "connect", "update", "export", "file", "screen", "flicker", "error",
                  "device", "settings"),
    "account": ("email", "profile", "account", "log in", "login", "verification", "code", "user", "membership",
                "delete", "password", "data"),
}
ASIDE_CUES = ("fine", "no complaints", "not asking", "on time", "as usual", "otherwise", "no error",
              "do not want to change")
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n")


def _sentences(text: str) -> list[str]:
    return [s for s in _SENTENCE.split(text) if s.strip()]


def route(text: str, queues: Sequence[str]) -> str:
    """The queue whose keywords the message's non-aside sentences hit most (ties: the queue listed first)."""
    scores = dict.fromkeys(queues, 0.0)
    for sentence in _sentences(text.lower()):
        weight = 0.25 if any(c in sentence for c in ASIDE_CUES) else 1.0
        for queue in queues:
            scores[queue] += weight * sum(sentence.count(w) for w in QUEUE_WORDS.get(queue, ()))
    return max(queues, key=lambda q: scores[q])


# ----------------------------------------------------------------------------- extraction
SHAPES = {
    "order": re.compile(r"\bORD-\d+\b"),
    "date": re.compile(r"\b\d{4}-\d{2}-\d{2}\b"),
    "amount": re.compile(r"\b\d+\.\d{2}\b"),
    "name": re.compile(r"\b[A-Z][a-zà-ÿ]+ [A-Z][a-zà-ÿ]+\b"),
}
OWN_CUES = ("writing about", "customer", "asks about", "complaint is about", "paid", "placed on", "bought", "charged",
            "total", "dated")
OTHER_CUES = ("earlier", "cancelled", "replacement", "colleague", "agent", "ignore", "forwarded", "logged",
              "arrived fine", "closed", "handled")
NOT_NAMES = ("Order", "Please", "Your", "My", "This", "Now", "Agent", "Customer")


def candidates(note: str, field: str) -> list[str]:
    """Every value in ``note`` of the shape of ``field``, in order of appearance (the random arm uses these too)."""
    found = SHAPES[field].findall(note)
    if field == "name":
        found = [n for n in found if n.split()[0] not in NOT_NAMES]
    return list(dict.fromkeys(found))


def _clauses(note: str) -> list[str]:
    return [c for c in re.split(r"(?<=[.;:!?])\s+|\(|\)|, but |; ", note) if c.strip()]


def _clause_score(clause: str) -> int:
    low = clause.lower()
    return sum(c in low for c in OWN_CUES) - 2 * sum(c in low for c in OTHER_CUES)


def extract(note: str) -> dict[str, str]:
    """The form the rule reads off ``note``: per field, the candidate in the best-scored clause."""
    clauses = _clauses(note)
    form: dict[str, str] = {}
    for field in FORM_FIELDS:
        best: tuple[int, int, str] | None = None
        for position, clause in enumerate(clauses):
            for value in candidates(clause, field):
                key = (_clause_score(clause), -position, value)
                if best is None or key[:2] > best[:2]:
                    best = key
        form[field] = best[2] if best else ""
    return form


# ----------------------------------------------------------------------------- selection
SYNONYMS = {
    "parcel": ("package", "shown up", "arriv"), "charged": ("payment", "two times", "statement"),
    "twice": ("two times", "same"), "screen": ("display", "crack"), "cracked": ("crack",),
    "moving": ("moved", "new flat", "address"), "house": ("moved", "flat"),
    "cancelling": ("stop", "no longer"), "subscription": ("plan",), "invoice": ("bill",),
    "password": ("reset", "link"), "reset": ("link", "expired"), "colour": ("blue", "green", "ordered"),
    "wrong": ("but",),
}
_STOP = {"a", "an", "the", "their", "that", "being", "about", "who", "wrote", "with", "of", "to", "in", "for", "and",
         "never", "not", "has", "have", "item", "customer"}


def concerns(description: str) -> list[str]:
    """The phrases after "about" in the task text, in order (the rule's reading of the two customers)."""
    return [m.strip() for m in re.findall(r"about (.+?)(?= with | and |[.,;]|$)", description)]


def _stems(text: str) -> set[str]:
    return {w[:5] for w in re.findall(r"[a-z]+", text.lower()) if w not in _STOP and len(w) > 2}


def _overlap(concern: str, message: str) -> float:
    low = message.lower()
    score = float(len(_stems(concern) & _stems(message)))
    for word in re.findall(r"[a-z]+", concern.lower()):
        score += sum(0.5 for s in SYNONYMS.get(word, ()) if s in low)
    return score


def pick_message(description: str, messages: Sequence[Mapping[str, Any]], position: int,
                 exclude: Sequence[str] = ()) -> str:
    """The message that best matches the ``position``-th concern of the text (ties: the first listed)."""
    found = concerns(description)
    concern = found[position - 1] if len(found) >= position else description
    pool = [m for m in messages if m["id"] not in exclude]
    return str(max(pool, key=lambda m: _overlap(concern, str(m.get("text", ""))))["id"])


# ----------------------------------------------------------------------------- compare
HOLD_CUES = ("legal hold", "do not read", "not part of")


def held(description: str) -> list[str]:
    """Record ids the text says not to read (dev wording)."""
    return [r for s in _sentences(description) if any(c in s.lower() for c in HOLD_CUES) for r in record_ids_in(s)]


def next_record(description: str, options: Sequence[str]) -> str:
    """The first option in the text's order that is not held, else ``save`` (or the first option)."""
    skip = set(held(description))
    for rid in record_ids_in(description):
        if rid in options and rid not in skip:
            return rid
    return "save" if "save" in options else options[0]
