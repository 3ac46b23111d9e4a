"""Checker for exercise 08a: the flow whitelist move by move, the lifecycle scenario by scenario.

The whitelist is compared with the README's moves (each missing or extra move is named, the known
shortcuts with the reason they are wrong) and must build as a labkit layer. The lifecycle is driven
through scenarios; it must also refuse to be assigned, and must be right at once after a restore.

The learner's file runs in the sandboxed child (``probe.py``), which returns the whitelist as data
and the lifecycle each scenario ends in; the judge is here. The whitelist must be written in the
file as a literal (importing the library's is refused), and hidden scenarios, drawn afresh at every
check, walk the layers at random (an abort of a completed book included) against this file's
reference lifecycle. The whitelist is the README's, so its moves are named; a lifecycle never is.
"""

from __future__ import annotations

import ast
import random
from typing import Any

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
    ("an abort of a finished book", [("start",), ("move_phase", "WRITING"), ("move_flow", "WRITING"),
                                     ("move_flow", "REVIEWING"), ("move_flow", "IDLE"), ("move_phase", "COMPLETE"),
                                     ("abort",)], "paused"),
]
PHASES = ("INIT", "PREMISE", "OUTLINE", "WRITING", "COMPLETE")
REFUSED_IMPORTS = {"labkit.layers.writing": "write the whitelist yourself, from the README",
                   **{f"labkit.layers.writing.{n}": "write the whitelist yourself, from the README"
                      for n in ("FLOW_WHITELIST", "FLOWS", "flow_layer")}}

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


def reference_lifecycle(calls: list[list[Any]]) -> str:
    phase, flow, running, aborted = "INIT", "IDLE", False, False
    for name, *args in calls:
        if name == "start":
            running, aborted = True, False
        elif name == "abort":
            aborted = True
        elif name == "stop":
            running = False
        elif name == "move_phase":
            phase = args[0]
        elif name == "move_flow":
            flow = args[0]
    if aborted or (phase == "COMPLETE" and flow != "IDLE"):
        return "paused"
    if phase == "COMPLETE":
        return "completed"
    return "running" if running else "idle"


def _hidden_calls(rng: random.Random) -> list[list[Any]]:
    calls: list[list[Any]] = [["start"]]
    phase, flow = "INIT", "IDLE"
    for _ in range(rng.randint(3, 10)):
        kind = rng.random()
        if kind < 0.45:
            flow = rng.choice(sorted(FLOW_WHITELIST[flow]))
            calls.append(["move_flow", flow])
        elif kind < 0.7 and phase != "COMPLETE":
            phase = rng.choice(PHASES[PHASES.index(phase) + 1:])
            calls.append(["move_phase", phase])
        else:
            calls.append([rng.choice(["start", "abort", "stop"])])
    return calls


def cases(rng: random.Random) -> dict[str, Any]:
    hidden = [_hidden_calls(rng) for _ in range(6)]
    restores = [list(r) for r, _ in RESTORES] + [[rng.choice(PHASES), rng.choice(FLOWS)] for _ in range(3)]
    return {"scenarios": [[list(c) for c in calls] for _, calls, _ in SCENARIOS] + hidden, "restores": restores}


def static(tree: ast.Module, name: str) -> list[str]:
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, ast.AnnAssign) else []
        if any(isinstance(t, ast.Name) and t.id == "FLOW_WHITELIST" for t in targets):
            value = node.value
            if not isinstance(value, ast.Dict) or not all(
                    isinstance(v, ast.Set | ast.List | ast.Tuple) and all(isinstance(e, ast.Constant) for e in v.elts)
                    for v in value.values):
                return [f"{name} line {node.lineno}: write FLOW_WHITELIST out as a dict of sets of state names "
                        "(the README's moves), not computed or imported"]
    return []


def _lifecycle_feedback(results: dict[str, Any], cases: dict[str, Any]) -> list[str]:
    feedback: list[str] = []
    if results["assignable"] is True:
        feedback.append("BookStatus().lifecycle = 'completed' was accepted: the lifecycle can be set directly; "
                        "make it a read-only property computed from phase, flow, running and aborted")
    hidden_wrong = 0
    for index, (got, calls) in enumerate(zip(results["scenarios"], cases["scenarios"], strict=True)):
        expected = reference_lifecycle(calls)
        if got.get("ok") == expected:
            continue
        steps = ", ".join(f"{n}({', '.join(repr(a) for a in args)})" for n, *args in calls) or "nothing"
        shown = f"raised {got['raised']}" if "raised" in got else f"{got['ok']!r}"
        title = SCENARIOS[index][0] if index < len(SCENARIOS) else None
        if title is not None:
            feedback.append(f"lifecycle, {title} (after {steps}): {shown}, which the layers do not give")
        else:
            hidden_wrong += 1
            if hidden_wrong == 1:
                feedback.append(f"lifecycle, a hidden scenario (after {steps}): {shown}, which the layers do not give")
    hidden_restores_wrong = 0
    for index, (got, (phase, flow)) in enumerate(zip(results["restores"], cases["restores"], strict=True)):
        expected = reference_lifecycle([["move_phase", phase], ["move_flow", flow]])
        if got.get("ok") == expected:
            continue
        shown = f"raised {got['raised']}" if "raised" in got else f"{got['ok']!r}"
        # The drawn restores are named as hidden, like the drawn scenarios: the pinned ones stay the same at
        # every check, so a learner's feedback (and a test of it) does not change with the draw.
        where = "" if index < len(RESTORES) else "a hidden restore, "
        if where and (hidden_restores_wrong := hidden_restores_wrong + 1) > 1:
            continue
        feedback.append(f"lifecycle after {where}BookStatus.restore({phase!r}, {flow!r}): {shown}, which the layers "
                        "do not give (it must be recomputed from the restored layers)")
    return list(dict.fromkeys(feedback))


def judge(results: dict[str, Any], cases: dict[str, Any], source: str) -> list[str]:
    whitelist = results["whitelist"]
    feedback = (_whitelist_feedback(whitelist) if isinstance(whitelist, dict)
                else [f"FLOW_WHITELIST must be a dict of sets, not {whitelist}"])
    if results.get("no_class"):
        return [*feedback, "student.py defines no class BookStatus"]
    if not feedback:  # the scenarios move the flow, so they need a complete whitelist
        feedback += _lifecycle_feedback(results, cases)
    return feedback

