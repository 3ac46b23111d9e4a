"""Floor bots: backends that answer without understanding, run over the real machine.

A measure is only as good as the worst bot it rejects, so both must score 0 adherence on every scripted user:
:class:`NeverMoves` keeps the contract, emits ``stay``, records nothing and asks nothing; :class:`CopiesExamples`
emits ``next`` (else the first signal), fills each result with the step's example (its worked example, else a
quoted phrase of its instructions, the first enum value or the field's description) and says the instructions'
first sentence. :func:`floor_bot` runs one under any arm (under a prompt-only arm, its signal becomes the step
it leads to); :func:`floor_runs` runs one over every user.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from labkit.dialog.engine import DialogBot, PromptOnlyBot, current_step
from labkit.dialog.scenario import ResultField, Scenario, Step
from labkit.llm.backend import Backend, Completion, Request

if TYPE_CHECKING:
    from labkit.dialog.measure import Score
    from labkit.dialog.simulate import ConversationResult
    from labkit.dialog.users import UserScript

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
        step = self.scenario.step(self.where())
        data = self.answer(step)
        allowed = allowed_signals(request.schema)
        if allowed and data["signal"] not in allowed:  # a prompt-only arm: claim the step the signal leads to
            signal = step.signal(data["signal"])
            data["signal"] = signal.to if signal is not None else step.name
        text = json.dumps(data)
        return Completion(text=text, prompt_tokens=len(request.prompt.split()), completion_tokens=len(text.split()),
                          seconds=0.0, grammar_used=False, finish_reason="stop")


def allowed_signals(schema: dict[str, Any] | None) -> set[str]:
    """The signals a contract schema allows (the plain schema's enum, or the grammar's consts)."""
    if not schema:
        return set()
    found: set[str] = set()
    for alt in schema.get("oneOf", [schema]):
        sig = alt.get("properties", {}).get("signal", {})
        found |= set(sig.get("enum", [])) | ({sig["const"]} if "const" in sig else set())
    return found


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
        if step.example is not None:
            return {"message": step.example.message, "signal": step.example.signal,
                    "results": dict(step.example.results), "summary": step.example.summary}
        signal = "next" if step.signal("next") else step.signal_names[0]
        first = re.split(r"(?<=[.!?])\s", step.instructions.strip(), maxsplit=1)[0][:200] or ACKNOWLEDGEMENT
        return {"message": first, "signal": signal,
                "results": {f.name: example_value(f, step) for f in step.results}, "summary": ""}


def floor_bot(kind: type[_Floor], scenario: Scenario, arm: str = "bare_machine") -> DialogBot | PromptOnlyBot:
    """The bot of the declared ``arm`` on ``scenario``, answered by the floor backend ``kind``."""
    from labkit.dialog.arms import arm as declared_arm

    holder: dict[str, DialogBot | PromptOnlyBot] = {}
    def where() -> str:
        bot = holder["bot"]
        return bot.claimed if isinstance(bot, PromptOnlyBot) else current_step(bot)

    backend = kind(scenario, where)
    holder["bot"] = declared_arm(arm).make(scenario, backend, clock=lambda: 0.0)
    return holder["bot"]


def floor_runs(kind: type[_Floor], scenarios: Mapping[str, Scenario], users: Iterable[UserScript],
               arm: str = "bare_machine") -> list[tuple[Score, ConversationResult]]:
    """Every user talked to by the floor ``kind`` under ``arm``: each conversation's score on the measure,
    with its result under the first recording's legacy check (which a floor could pass)."""
    from labkit.dialog.measure import score
    from labkit.dialog.simulate import run_user

    out = []
    for user in users:
        scenario = scenarios[user.scenario]
        bot = floor_bot(kind, scenario, arm)
        result = run_user(bot, user, arm)
        out.append((score(bot.events, scenario, user, arm), result))
    return out
