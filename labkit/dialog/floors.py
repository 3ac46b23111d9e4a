"""Floor bots: backends that answer without understanding, run over the real machine.

Why: a measure is only as good as the worst bot it rejects. A bot that never moves, and a bot
that copies each step's example phrases, must both score 0 adherence on every scripted user; if
one of them passes a user, that user (or the measure) tests nothing. Both are plain
:class:`~labkit.llm.backend.Backend` objects, so :class:`~labkit.dialog.engine.DialogBot` runs them
exactly like a model, with its contract checks and event log.

- :class:`NeverMoves` — every answer keeps the contract, emits ``stay``, records nothing and says
  an acknowledgement that asks for nothing;
- :class:`CopiesExamples` — every answer emits ``next`` where the step has one (else the first
  signal), fills each result with the step's example (a quoted phrase from its instructions, the
  first enum value, else the field's description) and says the first sentence of the instructions.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from labkit.dialog.engine import DialogBot
from labkit.dialog.scenario import ResultField, Scenario, Step
from labkit.llm.backend import Backend, Completion, Request

ACKNOWLEDGEMENT = "OK."


class _Floor(Backend):
    kind = "floor"

    def __init__(self, scenario: Scenario, where: Callable[[], str]) -> None:
        self.scenario = scenario
        self.where = where  # the machine's current step, read at each call

    def describe(self) -> dict[str, Any]:
        return {"backend": self.kind, "model": type(self).__name__, "model_sha256": None,
                "sampling": self.sampling()}

    def answer(self, step: Step) -> dict[str, Any]:
        raise NotImplementedError

    def _complete(self, request: Request) -> Completion:
        text = json.dumps(self.answer(self.scenario.step(self.where())))
        return Completion(text=text, prompt_tokens=len(request.prompt.split()), completion_tokens=len(text.split()),
                          seconds=0.0, grammar_used=False, finish_reason="stop")


class NeverMoves(_Floor):
    """Stays, records nothing, acknowledges."""

    def answer(self, step: Step) -> dict[str, Any]:
        signal = "stay" if step.signal("stay") else step.signal_names[0]
        return {"message": ACKNOWLEDGEMENT, "signal": signal, "results": {}, "summary": ""}


def example_value(field: ResultField, step: Step) -> Any:
    """What a copying bot puts into ``field``: an example from the step, never the user's words."""
    if field.type == "enum":
        return field.values[0]
    quoted = re.findall(r'"([^"]{3,80})"', step.instructions)
    text = quoted[0] if quoted else (field.description or field.name)[:100]
    if field.type == "list":
        return [text]
    if field.type in ("integer", "number"):
        return 1
    if field.type == "boolean":
        return True
    return text


class CopiesExamples(_Floor):
    """Moves on with the step's example phrases as results."""

    def answer(self, step: Step) -> dict[str, Any]:
        signal = "next" if step.signal("next") else step.signal_names[0]
        first = re.split(r"(?<=[.!?])\s", step.instructions.strip(), maxsplit=1)[0][:200] or ACKNOWLEDGEMENT
        return {"message": first, "signal": signal,
                "results": {f.name: example_value(f, step) for f in step.results}, "summary": ""}


def floor_bot(kind: type[_Floor], scenario: Scenario) -> DialogBot:
    """A :class:`DialogBot` on ``scenario`` answered by the floor backend ``kind``."""
    holder: dict[str, DialogBot] = {}
    backend = kind(scenario, lambda: holder["bot"].state.status)
    holder["bot"] = DialogBot(scenario, backend, clock=lambda: 0.0)
    return holder["bot"]
