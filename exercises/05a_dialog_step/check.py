"""Checker for exercise 05a: compile the student's scenario, then run it against scripted users with an
eager stand-in model (it always tries `next`, or a signal of its own where the step offers one),
through the real dialog engine.

The learner's file is imported only in the sandboxed child, which hands back the scenario's text;
the dialogs run here. Every signal of `date` that ends the dialog must need `date`, and hidden
guests (fresh names and dates at every check) keep a scenario from being fitted to the visible ones.
"""

from __future__ import annotations

import json
import random
import re
from typing import Any

from labkit.core.errors import LabkitError
from labkit.dialog import DialogBot, parse_scenario
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
    extra = [s for s in signals if s not in ("next", "stay", "back")]
    if extra and step == "date":  # a shortcut the step offers is taken, date or not
        return json.dumps({"message": "Done.", "signal": extra[0], "results": {}, "summary": "shortcut"})
    results = {}
    if step == "name":
        results = {"name": text}
    elif step == "date" and any(ch.isdigit() for ch in text):
        results = {"date": text}
    return json.dumps({"message": "Thanks.", "signal": "next", "results": results, "summary": step})


def cases(rng: random.Random) -> dict[str, Any]:
    name = rng.choice(["Mira", "Tomas", "Ines", "Kofi", "Lea"]) + str(rng.randint(2, 99))
    day = f"the {rng.randint(1, 28)}th of {rng.choice(['March', 'July', 'October'])}"
    return {"users": [*[list(u) for u in USERS],
                      ["a hidden guest", [name, day], "done", {"name": name, "date": day}],
                      ["a hidden guest who stalls", [name, "not sure", "ask me later", "hmm"], "date",
                       {"name": name}]]}


def judge(results: dict[str, Any], cases: dict[str, Any], source: str) -> list[str]:
    text = results.get("scenario")
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
            feedback.append(f"step 'date': signal '{name}' is missing")
        elif signal.to != target:
            feedback.append(f"step 'date': signal '{name}' leads to '{signal.to}', which is not where the README "
                            "sends it")
    for signal in step.signals:
        final = scenario.steps.get(signal.to)
        if final is not None and final.final and "date" not in (signal.needs or ()):
            feedback.append(f"step 'date': signal '{signal.name}' ends the dialog without needing 'date'")
        elif signal.name not in expected:
            feedback.append(f"step 'date': signal '{signal.name}' is not one the README asks for")
    for who, turns, end, variables in cases["users"]:
        bot = DialogBot(scenario, ScriptedBackend(eager_model), clock=lambda: 0.0)
        for said in turns:
            if bot.finished:
                break
            bot.respond(said)
        got = bot.state.status
        if got != end:
            feedback.append(f"{who} ({' / '.join(turns)}): the dialog ended in '{got}', which is not where this "
                            "conversation must be")
        for name, value in variables.items():
            if bot.state.variables.get(name) != value:
                feedback.append(f"{who}: variable {name} is {bot.state.variables.get(name)!r}, which is not what "
                                "the guest said")
    return feedback
