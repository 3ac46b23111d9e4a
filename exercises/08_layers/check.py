"""Checker for exercise 08: the flow whitelist move by move, the lifecycle scenario by scenario.

The whitelist is compared with the README's moves (each missing or extra move is named, the known
shortcuts with the reason they are wrong) and must build as a labkit layer. The lifecycle is driven
through scenarios; it must also refuse to be assigned, and must be right at once after a restore.
"""

from __future__ import annotations

from types import ModuleType

from labkit import TableError
from labkit.layers.writing import FLOW_WHITELIST, FLOWS, flow_layer

WHY_NOT = {
    ("REWRITING", "REVIEWING"): "a rewrite must go back to WRITING before a new review",
    ("POLISHING", "REVIEWING"): "a polish must go back to WRITING before a new review",
    ("IDLE", "REVIEWING"): "there is nothing to review before a section is written",
    ("REWRITING", "IDLE"): "a rewritten section has not been reviewed yet",
    ("POLISHING", "IDLE"): "a polished section has not been reviewed yet",
}

# (what the scenario checks, the calls on a new BookStatus, the lifecycle expected after them)
SCENARIOS = [
    ("a new book", [], "idle"),
    ("a started loop", [("start",)], "running"),
    ("an abort the loop has not seen yet", [("start",), ("abort",)], "paused"),
    ("an abort the loop has honoured", [("start",), ("abort",), ("stop",)], "paused"),
    ("a loop stopped mid-book", [("start",), ("move_phase", "WRITING"), ("stop",)], "idle"),
    ("a finished book", [("start",), ("move_phase", "WRITING"), ("move_flow", "WRITING"),
                         ("move_flow", "REVIEWING"), ("move_flow", "IDLE"), ("move_phase", "COMPLETE"),
                         ("stop",)], "completed"),
    ("phase COMPLETE while a review is still open", [("start",), ("move_phase", "WRITING"),
                                                     ("move_flow", "WRITING"), ("move_flow", "REVIEWING"),
                                                     ("move_phase", "COMPLETE")], "paused"),
    ("a restart after the abort", [("start",), ("abort",), ("stop",), ("start",)], "running"),
]

RESTORES = [(("COMPLETE", "IDLE"), "completed"), (("WRITING", "REVIEWING"), "idle"),
            (("COMPLETE", "REVIEWING"), "paused")]


def _whitelist_feedback(whitelist: object) -> list[str]:
    if not isinstance(whitelist, dict):
        return [f"FLOW_WHITELIST must be a dict of sets, not {type(whitelist).__name__}"]
    feedback = [f"FLOW_WHITELIST has no entry for {state}" for state in FLOWS if state not in whitelist]
    feedback += [f"FLOW_WHITELIST has an entry for {state}, which is not a flow state"
                 for state in whitelist if state not in FLOWS]
    given = {(s, d) for s, dests in whitelist.items() for d in dests}
    expected = {(s, d) for s, dests in FLOW_WHITELIST.items() for d in dests}
    for source, dest in sorted(expected - given):
        feedback.append(f"FLOW_WHITELIST: {source} -> {dest} is missing (the README allows it)")
    for source, dest in sorted(given - expected):
        why = WHY_NOT.get((source, dest), "the README does not allow it")
        feedback.append(f"FLOW_WHITELIST: {source} -> {dest} is allowed, but {why}")
    if not feedback:
        try:
            flow_layer({s: tuple(sorted(d)) for s, d in whitelist.items()})
        except TableError as exc:
            feedback += [f"the whitelist does not build as a layer: {p}" for p in exc.problems]
    return feedback


def _lifecycle_feedback(cls: type) -> list[str]:
    feedback: list[str] = []
    status = cls()
    try:
        status.lifecycle = "completed"
    except AttributeError:
        pass
    else:
        feedback.append("BookStatus().lifecycle = 'completed' was accepted: the lifecycle can be set directly; "
                        "make it a read-only property computed from phase, flow, running and aborted")
    for title, calls, expected in SCENARIOS:
        status = cls()
        for name, *args in calls:
            getattr(status, name)(*args)
        got = status.lifecycle
        if got != expected:
            steps = ", ".join(f"{n}({', '.join(repr(a) for a in args)})" for n, *args in calls) or "nothing"
            feedback.append(f"lifecycle, {title} (after {steps}): {got!r}, expected {expected!r}")
    for (phase, flow), expected in RESTORES:
        got = cls.restore(phase, flow).lifecycle
        if got != expected:
            feedback.append(f"lifecycle after BookStatus.restore({phase!r}, {flow!r}): {got!r}, expected "
                            f"{expected!r} (it must be recomputed from the restored layers)")
    return feedback


def check(module: ModuleType) -> list[str]:
    feedback = _whitelist_feedback(getattr(module, "FLOW_WHITELIST", None))
    cls = getattr(module, "BookStatus", None)
    if cls is None:
        return [*feedback, "student.py defines no class BookStatus"]
    if not feedback:  # the scenarios move the flow, so they need a complete whitelist
        feedback += _lifecycle_feedback(cls)
    return feedback
