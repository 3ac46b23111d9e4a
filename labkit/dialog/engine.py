"""The dialog engine: a scenario's machine owns the script, the model answers one step at a time.

One user message is one turn: record it, build a small prompt (the current step's instructions,
the variables, the summaries of past steps and the last few turns — never the whole script), call
the model under the step's grammar, check the four-field contract, and on a violation make ONE
corrective re-ask. A kept contract moves variables (each change an event), records the reply and
fires the signal through :class:`~labkit.machine.LabMachine`; a second violation is recorded as
:class:`~labkit.dialog.events.ContractFailed` and the step stays where it was.

:class:`PromptOnlyBot` is the comparison: the whole script in one prompt, the whole conversation
after it, no machine. It answers under the same contract and the same re-ask, with its "signal"
being the step it believes it is in, so both are measured by the same adherence check.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from labkit.dialog.contract import Answer, Violation, answer_schema, check_answer, reask_prompt
from labkit.dialog.events import (
    BotSaid,
    ContractFailed,
    DialogState,
    ModelCalled,
    UserSaid,
    VariableChanged,
    reduce_dialog,
)
from labkit.dialog.scenario import ResultField, Scenario, Signal, Step
from labkit.errors import LabkitError
from labkit.events import Event
from labkit.llm.backend import Backend
from labkit.machine import LabMachine
from labkit.store import EventLog

FALLBACK_REPLY = "Sorry, I could not process that. Could you say it again in other words?"
MAX_TOKENS = 160


@dataclass(frozen=True)
class TurnOutcome:
    """What one user message led to."""

    reply: str
    step_before: str
    step_after: str
    calls: int
    outcome: str  # "ok" | "reasked" | "contract_failed" | "finished"


def _fmt(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


class _Bot:
    """The turn loop both bots share: call, check, re-ask once, record."""

    def __init__(self, scenario: Scenario, backend: Backend, *, log: EventLog | None,
                 clock: Callable[[], float], max_tokens: int, on_event: Callable[[Event], None] | None,
                 mode: str) -> None:
        self.scenario = scenario
        self.backend = backend
        self.max_tokens = max_tokens
        self.on_event = on_event
        self.machine = LabMachine(scenario.table, reduce=reduce_dialog, empty=DialogState(), log=log, clock=clock,
                                  params={"scenario": scenario.name, "mode": mode, "model": backend.model_id(),
                                          "max_tokens": max_tokens})

    @property
    def state(self) -> DialogState:
        return self.machine.state  # type: ignore[no-any-return]

    @property
    def events(self) -> list[Event]:
        return list(self.machine.events)

    @property
    def finished(self) -> bool:
        return self.machine.finished

    def _record(self, event: Event) -> Event:
        sealed = self.machine.record(event)
        if self.on_event is not None:
            self.on_event(sealed)
        return sealed

    def _fire(self, signal: str, turn: int) -> None:
        sealed = self.machine.fire(signal, turn=turn)
        if self.on_event is not None:
            self.on_event(sealed)

    def _ask(self, prompt: str, step: Step, turn: int) -> tuple[Answer | None, Violation | None, int]:
        """First call, and one corrective re-ask if the contract is broken; returns (answer, last violation, calls)."""
        schema = answer_schema(step)
        violation: Violation | None = None
        raw = ""
        for attempt in (1, 2):
            asked = prompt if attempt == 1 else reask_prompt(prompt, raw, violation, step)  # type: ignore[arg-type]
            out = self.backend.complete(asked, max_tokens=self.max_tokens, schema=schema, temperature=0.0, seed=0)
            raw = out.text
            checked = check_answer(raw, step, self.state.variables)
            violation = checked.violation
            self._record(ModelCalled(turn=turn, step=step.name, attempt=attempt, prompt=asked, raw=raw,
                                     prompt_tokens=out.prompt_tokens, completion_tokens=out.completion_tokens,
                                     seconds=round(out.seconds, 3), violation=violation.code if violation else "",
                                     detail=violation.detail if violation else ""))
            if checked.answer is not None:
                return checked.answer, None, attempt
        return None, violation, 2

    def _apply_results(self, answer: Answer, step: str, turn: int) -> None:
        for name, value in answer.results.items():
            old = self.state.variables.get(name)
            if old != value:
                self._record(VariableChanged(turn=turn, step=step, name=name, old=old, new=value))

    def respond(self, text: str) -> TurnOutcome:
        """Answer one user message (see the module docstring)."""
        if self.finished:
            raise LabkitError(f"the conversation is over (step '{self.state.status}')",
                              "start a new conversation.")
        step = self.scenario.step(self.state.status)
        turn = self.state.user_messages + 1
        if not self.state.pending_user:
            self._record(UserSaid(turn=turn, step=step.name, text=text))
        else:  # resumed after a crash mid-turn: the message is already in the log
            turn -= 1
        prompt = self.prompt(step)
        contract_step = self.contract_step(step)
        answer, violation, calls = self._ask(prompt, contract_step, turn)
        if answer is None:
            assert violation is not None
            self._record(ContractFailed(turn=turn, step=step.name, violation=violation.code, detail=violation.detail))
            self._record(BotSaid(turn=turn, step=step.name, text=FALLBACK_REPLY))
            return TurnOutcome(FALLBACK_REPLY, step.name, self.state.status, calls, "contract_failed")
        self._apply_results(answer, step.name, turn)
        reply = self._after_answer(answer, step, turn)
        return TurnOutcome(reply, step.name, self.state.status, calls, "ok" if calls == 1 else "reasked")

    # hooks the two bots fill in
    def prompt(self, step: Step) -> str:
        raise NotImplementedError

    def contract_step(self, step: Step) -> Step:
        raise NotImplementedError

    def _after_answer(self, answer: Answer, step: Step, turn: int) -> str:
        raise NotImplementedError

    def _variables_text(self) -> str:
        known = {k: v for k, v in self.state.variables.items() if v not in (None, "", [])}
        return "; ".join(f"{k}={_fmt(v)}" for k, v in known.items()) or "nothing yet"

    def _turns_text(self, last: int | None) -> str:
        turns = self.state.turns if last is None else self.state.turns[-last:]
        return "\n".join(f"{'User' if who == 'user' else 'Assistant'}: {said}" for who, said in turns)


class DialogBot(_Bot):
    """The scenario's machine runs the dialog; the model sees only the current step.

    ``recent_turns``: how many past messages (user and bot) the prompt carries.
    Pass an existing ``log`` (e.g. a :class:`~labkit.store.JsonlLog`) to resume a conversation.
    """

    def __init__(self, scenario: Scenario, backend: Backend, *, log: EventLog | None = None,
                 clock: Callable[[], float] = time.time, recent_turns: int = 4, max_tokens: int = MAX_TOKENS,
                 on_event: Callable[[Event], None] | None = None) -> None:
        self.recent_turns = recent_turns
        super().__init__(scenario, backend, log=log, clock=clock, max_tokens=max_tokens, on_event=on_event,
                         mode="machine")

    def contract_step(self, step: Step) -> Step:
        return step

    def prompt(self, step: Step) -> str:
        """The small prompt of the current step (see the module docstring)."""
        signals = "\n".join(f"- {s.name}: {s.when or 'go to ' + s.to}"
                            + (f" (needs {', '.join(s.needs)})" if s.needs else "") for s in step.signals)
        fields = "\n".join(f"- {f.name} ({_type_text(f)}): {f.description}" for f in step.results) or "- none"
        past = "; ".join(f"{k}: {v}" for k, v in self.state.summaries.items() if k != step.name) or "none"
        return (f"{self.scenario.title}. Current step: {step.name}.\n{step.instructions.strip()}\n\n"
                f"Results to fill in this step:\n{fields}\nSignals:\n{signals}\n\n"
                f"Known so far: {self._variables_text()}\nEarlier steps: {past}\n\n"
                f"Conversation (latest last):\n{self._turns_text(self.recent_turns)}\n\n"
                "Reply with one JSON object: message (to the user), signal, results, summary (one line).\nJSON: ")

    def _after_answer(self, answer: Answer, step: Step, turn: int) -> str:
        self._record(BotSaid(turn=turn, step=step.name, text=answer.message, summary=answer.summary,
                             signal=answer.signal))
        target = self.scenario.step(self.machine.table.rows_for(step.name, answer.signal)[0].dest)
        if target.final and target.message:  # a final step is absorbing: its message is recorded before entering it
            self._record(BotSaid(turn=turn, step=target.name, text=target.message))
        self._fire(answer.signal, turn)
        return f"{answer.message}\n{target.message}" if target.final and target.message else answer.message


def _type_text(f: ResultField) -> str:
    return f"one of {', '.join(f.values)}" if f.type == "enum" else f.type


class PromptOnlyBot(_Bot):
    """The comparison bot: the whole script in one prompt, the whole conversation, no machine.

    Its contract step is synthetic: the signals are the scenario's step names (the step it says it
    is in after this turn) and the results are every variable of the scenario. Its machine is a
    one-state table that only records events; adherence is read from its claimed step.
    """

    def __init__(self, scenario: Scenario, backend: Backend, *, log: EventLog | None = None,
                 clock: Callable[[], float] = time.time, max_tokens: int = MAX_TOKENS,
                 on_event: Callable[[Event], None] | None = None) -> None:
        self.script = scenario.full_script()
        self._step = Step(name="whole_script", instructions=self.script, results=tuple(scenario.variables),
                          signals=tuple(Signal(name, "whole_script") for name in scenario.steps))
        super().__init__(_single_step(scenario, self._step), backend, log=log, clock=clock, max_tokens=max_tokens,
                         on_event=on_event, mode="prompt_only")
        self.full = scenario

    @property
    def finished(self) -> bool:
        claimed = self.full.steps.get(self.state.claimed_step)
        return bool(claimed and claimed.final)

    def contract_step(self, step: Step) -> Step:
        return self._step

    def prompt(self, step: Step) -> str:
        return (f"{self.script}\n\nYou are the assistant following this script. Known so far: see the "
                f"conversation.\n\nConversation (latest last):\n{self._turns_text(None)}\n\n"
                "Reply with one JSON object: message (to the user), signal (the step you are in after this "
                "reply), results (everything learned so far), summary (one line).\nJSON: ")

    def _after_answer(self, answer: Answer, step: Step, turn: int) -> str:
        self._record(BotSaid(turn=turn, step=step.name, text=answer.message, summary=answer.summary,
                             signal=answer.signal))
        return answer.message


def _single_step(scenario: Scenario, step: Step) -> Scenario:
    """A scenario holding one looping step: the prompt-only bot's table (it records, never moves)."""
    loop = Step(name=step.name, instructions=step.instructions, results=step.results,
                signals=(Signal("reply", step.name),))
    return Scenario(name=f"{scenario.name}-prompt-only", title=scenario.title, initial=step.name,
                    steps={step.name: loop}, path=scenario.path, description=scenario.description)


def current_step(bot: _Bot) -> str:
    """The step a bot is in: the machine's state, or the prompt-only bot's own claim."""
    return bot.state.claimed_step if isinstance(bot, PromptOnlyBot) else bot.state.status
