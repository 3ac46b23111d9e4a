"""Event logs that follow no table and how ``labkit replay`` reads them: a :class:`LogKind` recognises its
log and says what it records (``LOG_KINDS`` in ``registry.LOG_KIND_MODULES``; chains verified first)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from labkit.core import registry
from labkit.core.events import Event


@dataclass(frozen=True)
class LogKind:
    """One kind of table-less log: ``recognises(events)``, and ``summarize(events)`` as named fields."""

    name: str
    recognises: Callable[[Sequence[Event]], bool]
    summarize: Callable[[Sequence[Event]], dict[str, Any]]


_KINDS: dict[str, LogKind] = {}
_loaded = False


def _load() -> None:
    global _loaded
    if _loaded:
        return
    for name, kind in registry.declared(registry.LOG_KIND_MODULES, "LOG_KINDS", "LOG_KIND_MODULES").items():
        _KINDS.setdefault(name, kind)
    _loaded = True


def names() -> list[str]:
    """The declared kinds' names."""
    _load()
    return list(_KINDS)


def recognise(events: Sequence[Event]) -> LogKind | None:
    """The first declared kind that recognises ``events``, or None."""
    _load()
    return next((kind for kind in _KINDS.values() if kind.recognises(events)), None)


def render(summary: dict[str, Any]) -> list[str]:
    """The summary as indented lines: ``key: value``, a list as one line per item under its key."""
    lines = []
    for key, value in summary.items():
        if isinstance(value, list):
            lines.append(f"  {key}:" + ("" if value else " none"))
            lines += [f"    {item}" for item in value]
        else:
            lines.append(f"  {key}: {value}")
    return lines
