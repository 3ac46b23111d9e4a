"""Redaction at the executor: ``national_id`` and ``phone`` become a marker, free text is scrubbed of
anything shaped like either, so neither the planner nor the log ever sees them."""

from __future__ import annotations

import re
from typing import Any

SENSITIVE_FIELDS = ("national_id", "phone")
MARK = "[redacted]"
# national ids look like "NI-123-456-789"; phones like "+1-555-013-4477"; both are scrubbed from text.
_PATTERNS = (
    re.compile(r"\bNI-\d{3}-\d{3}-\d{3}\b"),
    re.compile(r"\+?\d{1,3}[- ]\d{3}[- ]\d{3}[- ]\d{4}\b"),
)


def scrub_text(text: str) -> str:
    """``text`` with every national-id- or phone-shaped substring replaced by the marker."""
    for pattern in _PATTERNS:
        text = pattern.sub(MARK, text)
    return text


def looks_sensitive(value: Any) -> bool:
    """Whether any string inside ``value`` contains a national-id- or phone-shaped substring."""
    if isinstance(value, str):
        return any(p.search(value) for p in _PATTERNS)
    if isinstance(value, dict):
        return any(looks_sensitive(v) for v in value.values())
    if isinstance(value, list | tuple):
        return any(looks_sensitive(v) for v in value)
    return False


def redact(value: Any) -> Any:
    """A copy of ``value`` with sensitive fields masked and all strings scrubbed."""
    if isinstance(value, dict):
        return {k: (MARK if k in SENSITIVE_FIELDS and v not in (None, "") else redact(v)) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact(v) for v in value]
    if isinstance(value, str):
        return scrub_text(value)
    return value
