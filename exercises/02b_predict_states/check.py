"""Checker for exercise 02b: predicted states against the states a replay of the real run gives.

The runs are made by ``scenarios.py`` beside this file with the real runtime, and the true states
come from replaying their logs with the runtime's reducer, so the answer never comes from the
file under test. That file may hold only the two dicts of predictions, written as literals: an
import or a call there could compute the answers instead of predicting them. The rule and the
predictions are both read from the file's source here, in the judging process (the learner's file
is only imported in the sandboxed child, to prove that it imports). Feedback says, per scenario,
only whether its predictions (the states and the outcome together) are right: a position, or the
rows of the wrong step, would let a script find the answer from the feedback in a few runs.
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path
from types import ModuleType

from labkit import Transitioned, replay
from labkit.runtime import STATES, empty_run_state, reduce_run

OUTCOME_WORDS = ("succeeded", "failed", "incomplete", "needs_review")
ANSWERS = ("PREDICTIONS", "OUTCOMES")


def _scenarios() -> ModuleType:
    path = Path(__file__).with_name("scenarios.py")
    spec = importlib.util.spec_from_file_location("labkit_exercise_03_scenarios", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _what(node: ast.AST) -> str:
    if isinstance(node, ast.Import | ast.ImportFrom):
        return "an import"
    if any(isinstance(n, ast.Call) for n in ast.walk(node)):
        return "a call"
    return f"a {type(node).__name__} statement"


def _only_predictions(tree: ast.Module, name: str) -> str | None:
    """Why the file is more than literal predictions, or None when it is just them."""
    for index, node in enumerate(tree.body):
        if index == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue  # the docstring
        targets = (node.targets if isinstance(node, ast.Assign)
                   else [node.target] if isinstance(node, ast.AnnAssign) else [])
        literal_only = not any(isinstance(n, ast.Call) for n in ast.walk(node))  # an annotation runs too
        if targets and all(isinstance(t, ast.Name) and t.id in ANSWERS for t in targets) and node.value \
                and literal_only:
            try:
                ast.literal_eval(node.value)
                continue
            except ValueError:
                pass
        return (f"{name} must hold only your predictions (the dicts PREDICTIONS and OUTCOMES written out as "
                f"literals); line {node.lineno}: {_what(node)}. See the runs with "
                "`python exercises/02b_predict_states/scenarios.py` and write down what you predict.")
    return None


def _check_scenario(runs: ModuleType, name: str, predicted: object, outcome: object) -> list[str]:
    events = runs.run_scenario(name)
    result = replay(events, reduce_run, empty_run_state())  # the truth: a replay of the real log
    start, stop = runs.window_bounds(events)
    moves = [i for i, e in enumerate(events[start:stop], start) if isinstance(e, Transitioned)]
    truth = [result.states[i].status for i in moves]
    if not isinstance(predicted, list) or not all(isinstance(p, str) for p in predicted):
        return [f"{name}: PREDICTIONS['{name}'] must be a list of state names"]
    unknown = [p for p in predicted if p not in STATES]
    if unknown:
        return [f"{name}: {', '.join(map(repr, unknown))} is not a state of the table ({', '.join(STATES)})"]
    if len(predicted) != len(truth):  # the length is public: scenarios.py prints every transition
        return [f"{name}: you predicted {len(predicted)} state(s), but the window has {len(truth)} transition(s)"]
    if outcome not in OUTCOME_WORDS:  # no guess yet: say what a guess looks like, not what the answer is
        return [f"{name}: OUTCOMES['{name}'] is {outcome!r}; predict one of {', '.join(OUTCOME_WORDS)}"]
    if predicted != truth or outcome != result.state.outcome:
        return [f"{name}: not right yet: a predicted state or the outcome is wrong (follow each trigger through the "
                "table from the state it arrives in, then the run to its end: which terminal state, and what the "
                "runtime calls a run that ends there)"]
    return []


def static(tree: ast.Module, name: str) -> list[str]:
    why = _only_predictions(tree, name)
    return [why] if why else []


def cases(rng: object) -> None:
    return None


def judge(results: dict[str, object], cases: object, source: str) -> list[str]:
    values: dict[str, object] = {}
    for node in ast.parse(source).body:  # static() let through only literal assignments to these two names
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, ast.AnnAssign) else []
        for target in targets:
            if isinstance(target, ast.Name) and node.value is not None:
                values[target.id] = ast.literal_eval(node.value)
    predictions, outcomes = values.get("PREDICTIONS"), values.get("OUTCOMES")
    if not isinstance(predictions, dict) or not isinstance(outcomes, dict):
        return ["the file must define the dicts PREDICTIONS and OUTCOMES"]
    runs = _scenarios()
    feedback = []
    for name in runs.SCENARIOS:
        if name not in predictions or name not in outcomes:
            feedback.append(f"{name}: missing from PREDICTIONS or OUTCOMES")
            continue
        feedback += _check_scenario(runs, name, predictions[name], outcomes[name])
    return feedback
