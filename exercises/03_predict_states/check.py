"""Checker for exercise 03: predicted states against the states a replay of the real run gives.

The runs are made by ``scenarios.py`` beside this file with the real runtime, and the true states
come from replaying their logs with the runtime's reducer, so the answer never comes from the
file under test. That file may hold only the two dicts of predictions, written as literals: an
import or a call there could compute the answers instead of predicting them. Feedback says where
a prediction first goes wrong ("wrong at transition k") and which table rows decide that
transition, never the true state, so copying feedback does not solve the exercise.
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path
from types import ModuleType

from labkit import Transitioned, replay
from labkit.runtime import STATES, empty_run_state, planner_executor_table, reduce_run

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


def _only_predictions(path: Path) -> str | None:
    """Why the file is more than literal predictions, or None when it is just them."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
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
        return (f"{path.name} must hold only your predictions (the dicts PREDICTIONS and OUTCOMES written out as "
                f"literals); line {node.lineno}: {_what(node)}. See the runs with "
                "`python exercises/03_predict_states/scenarios.py` and write down what you predict.")
    return None


def _rows(source: str, trigger: str) -> str:
    return ", ".join(str(r) for r in planner_executor_table().rows_for(source, trigger))


def _check_scenario(runs: ModuleType, name: str, predicted: object, outcome: object) -> list[str]:
    events = runs.run_scenario(name)
    result = replay(events, reduce_run, empty_run_state())  # the truth: a replay of the real log
    start, stop = runs.window_bounds(events)
    moves = [(i, e) for i, e in enumerate(events[start:stop], start) if isinstance(e, Transitioned)]
    truth = [result.states[i].status for i, _ in moves]
    feedback = []
    if not isinstance(predicted, list) or not all(isinstance(p, str) for p in predicted):
        feedback.append(f"{name}: PREDICTIONS['{name}'] must be a list of state names")
    else:
        unknown = [p for p in predicted if p not in STATES]
        for k, (guess, actual) in enumerate(zip(predicted, truth, strict=False)):
            if guess != actual:
                i, event = moves[k]
                before = result.states[i - 1].status
                feedback.append(
                    f"{name}: wrong at transition {k + 1} of {len(truth)} (#{event.seq} '{event.trigger}' arriving "
                    f"in {before}); the rows that decide it: {_rows(before, event.trigger)}")
                break
        else:
            if len(predicted) != len(truth):
                feedback.append(f"{name}: you predicted {len(predicted)} state(s), but the window has "
                                f"{len(truth)} transition(s)")
        if unknown:
            feedback.append(f"{name}: {', '.join(map(repr, unknown))} is not a state of the table "
                            f"({', '.join(STATES)})")
    if outcome not in OUTCOME_WORDS:  # no guess yet: say what a guess looks like, not what the answer is
        feedback.append(f"{name}: OUTCOMES['{name}'] is {outcome!r}; predict one of {', '.join(OUTCOME_WORDS)}")
    elif outcome != result.state.outcome:
        feedback.append(f"{name}: the outcome is wrong; follow the window to the end of the run (which terminal "
                        "state, and what the runtime calls a run that ends there)")
    return feedback


def check(module: ModuleType) -> list[str]:
    path = Path(getattr(module, "__file__", "") or "")
    if path.is_file() and (why := _only_predictions(path)):
        return [why]
    predictions = getattr(module, "PREDICTIONS", None)
    outcomes = getattr(module, "OUTCOMES", None)
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

