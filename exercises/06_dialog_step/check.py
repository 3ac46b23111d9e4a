"""Checker for exercise 06: compile the student's scenario, then run it against scripted users with an
eager stand-in model (it always tries `next`), through the real dialog engine."""

from __future__ import annotations

import json
import re
from types import ModuleType

from labkit.dialog import DialogBot, parse_scenario
from labkit.errors import LabkitError
from labkit.llm.backend import Request
from labkit.llm.fake import ScriptedBackend

# (who, the user's messages, expected end step, expected variables)
USERS: list[tuple[str, list[str], str, dict[str, str]]] = [
    ("a guest who answers", ["Anna", "the 5th of May"], "done", {"name": "Anna", "date": "the 5th of May"}),
    ("a guest who does not know the date yet", ["Anna", "no idea yet", "maybe later"], "date", {"name": "Anna"}),
    ("a guest who goes back to change the name", ["Anna", "go back", "Bob", "June 3"], "done",
     {"name": "Bob", "date": "June 3"}),
]


def _current_step(prompt: str) -> str:
    match = re.search(r"Current step: (\w+)\.", prompt)
    return match.group(1) if match else ""


def _last_user(prompt: str) -> str:
    said = re.findall(r"^User: (.*)$", prompt, flags=re.MULTILINE)
    return said[-1] if said else ""


def eager_model(request: Request) -> str:
    """Always moves on; fills a result only from what the user said in the current step."""
    step, text = _current_step(request.prompt), _last_user(request.prompt)
    signals = request.schema["properties"]["signal"]["enum"] if request.schema else []
    if "go back" in text.lower() and "back" in signals:
        return json.dumps({"message": "Sure.", "signal": "back", "results": {}, "summary": "going back"})
    results = {}
    if step == "name":
        results = {"name": text}
    elif step == "date" and any(ch.isdigit() for ch in text):
        results = {"date": text}
    return json.dumps({"message": "Thanks.", "signal": "next", "results": results, "summary": step})


def check(module: ModuleType) -> list[str]:
    text = getattr(module, "SCENARIO", None)
    if not isinstance(text, str):
        return ["define SCENARIO, the scenario's YAML text"]
    try:
        scenario = parse_scenario(text, "SCENARIO")
    except LabkitError as exc:
        return [f"the scenario does not compile: {exc.message}"]
    feedback: list[str] = []
    step = scenario.steps.get("date")
    if step is None:
        return ["the scenario has no step 'date'"]
    if not step.instructions or "TODO" in step.instructions:
        feedback.append("step 'date': write its instructions (replace the TODO)")
    fields = {f.name: f.type for f in step.results}
    if fields.get("date") != "string":
        feedback.append(f"step 'date': results must hold 'date' of type string, got {fields or 'none'}")
    expected = {"next": "done", "stay": "date", "back": "name"}
    for name, target in expected.items():
        signal = step.signal(name)
        if signal is None:
            feedback.append(f"step 'date': signal '{name}' is missing (it should lead to '{target}')")
        elif signal.to != target:
            feedback.append(f"step 'date': signal '{name}' leads to '{signal.to}', expected '{target}'")
    for who, turns, end, variables in USERS:
        bot = DialogBot(scenario, ScriptedBackend(eager_model), clock=lambda: 0.0)
        for said in turns:
            if bot.finished:
                break
            bot.respond(said)
        got = bot.state.status
        if got != end:
            feedback.append(f"{who} ({' / '.join(turns)}): the dialog ended in '{got}', expected '{end}'")
        for name, value in variables.items():
            if bot.state.variables.get(name) != value:
                feedback.append(f"{who}: variable {name} is {bot.state.variables.get(name)!r}, expected {value!r}")
    return feedback
