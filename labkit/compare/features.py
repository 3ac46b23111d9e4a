"""Switchable machine features: each one declaration that an arm switches on and its ablation off; the
name check and lookup shared by the code and dialog machines."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from labkit.core.errors import LabkitError


@dataclass(frozen=True)
class Feature:
    """One switchable part of a machine: its name, what it does, and the machine's hooks it acts in."""

    name: str
    about: str
    hooks: tuple[str, ...] = ()  # where in the machine it acts (each machine names its own hooks)


@dataclass(frozen=True)
class Part:
    """One rule inside a feature that an ablation can switch off alone; recorded only when off, so adding
    one changes nothing a recording says it ran under."""

    name: str
    of: str  # the feature it belongs to
    about: str


@dataclass(frozen=True)
class FeatureTable:
    """A machine's declared features (in the order its report lists them) and their switchable parts."""

    machine: str  # how an error names the machine ("dialog machine")
    features: tuple[Feature, ...]
    parts: tuple[Part, ...] = ()

    def __post_init__(self) -> None:
        orphans = [p.name for p in self.parts if p.of not in self.all]
        if orphans:
            raise LabkitError(f"parts {orphans} belong to no declared feature of the {self.machine}",
                              "declare each part with the name of its feature in `of`.")

    @property
    def all(self) -> frozenset[str]:
        return frozenset(f.name for f in self.features)

    def checked(self, names: Iterable[str]) -> frozenset[str]:
        """``names`` as a set, refused if one is not a declared feature."""
        found = frozenset(names)
        unknown = sorted(found - self.all)
        if unknown:
            raise LabkitError(f"unknown {self.machine} feature(s) {unknown}",
                              f"use some of: {', '.join(f.name for f in self.features)}.")
        return found

    def about(self, name: str) -> str:
        """What feature ``name`` does (refused if it is not declared)."""
        self.checked([name])
        return next(f.about for f in self.features if f.name == name)

    def checked_parts(self, names: Iterable[str]) -> frozenset[str]:
        """``names`` as a set of parts, refused if one is not declared."""
        found = frozenset(names)
        unknown = sorted(found - {p.name for p in self.parts})
        if unknown:
            raise LabkitError(f"unknown {self.machine} part(s) {unknown}",
                              f"use some of: {', '.join(p.name for p in self.parts) or '(none declared)'}.")
        return found


def ablation_sentence(rows: Sequence[Mapping[str, Any]], *, things: str, bought: str, count: str,
                      alpha: float = 0.05) -> str:
    """An ablation table in one sentence from its rows (``feature``, ``buys``, ``p_value``, ``count``): which
    features bought ``bought``, cost, or bought nothing net, and which differences are beyond chance."""
    def names(selected: Sequence[Mapping[str, Any]]) -> str:
        return ", ".join(f"{r['feature']} ({r['buys']:+d} of {r[count]})" for r in selected) or "none"

    gained = [r for r in rows if r["buys"] > 0]
    cost = [r for r in rows if r["buys"] < 0]
    level = len(rows) - len(gained) - len(cost)
    beyond = [r["feature"] for r in rows if r["p_value"] < alpha]
    return (f"Of {len(rows)} {things}, {len(gained)} bought {bought}: {names(gained)}; {len(cost)} cost: "
            f"{names(cost)}; {level} bought nothing net. Beyond chance (exact sign test p < {alpha:g}): "
            f"{', '.join(beyond) or 'none'}.")
