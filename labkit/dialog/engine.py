"""The dialog engine: a scenario's machine owns the script, the model answers one step at a time.

One user message is one turn: a small prompt (the step's instructions, the variables, past steps' summaries,
the last few turns; never the whole script), a call under the step's grammar, the four-field contract checked
with ONE corrective re-ask. A kept contract moves variables, records the reply and fires the signal through
:class:`~labkit.core.machine.LabMachine`; a second violation is :class:`~labkit.dialog.events.ContractFailed`
and the step stays. :class:`PromptOnlyBot` is the comparison, under the same contract and re-ask.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from labkit.core.errors import LabkitError
from labkit.core.events import Event, RunStarted
from labkit.core.machine import LabMachine
from labkit.core.store import EventLog
from labkit.dialog.contract import (
    RESULTS_FIRST,
    Answer,
    Checked,
    Violation,
    answer_schema,
    check_answer,
    differing_reask_prompt,
    grammar_schema,
    in_order,
    reask_prompt,
)
from labkit.dialog.events import (
    BotSaid,
    CacheRead,
    CancelAnswered,
    CancelRequested,
    ContractFailed,
    DialogState,
    ModelCalled,
    UserSaid,
    ValuesCut,
    ValuesDropped,
    VariableChanged,
    reduce_dialog,
)
from labkit.dialog.features import PARTS, checked_parts
from labkit.dialog.features import checked as checked_features
from labkit.dialog.grounding import ungrounded, unsaid_words
from labkit.dialog.scenario import Example, ResultField, Scenario, Signal, Step, unknown
from labkit.dialog.splitting import cued, cut_parts, foreign_parts, mixed_detail
from labkit.llm.backend import Backend

FALLBACK_REPLY = "Sorry, I could not process that. Could you say it again in other words?"
NOT_UNDERSTOOD = "Sorry, I did not understand that."  # grounded_values kept the step: it asks nothing itself
MAX_TOKENS = 160
CANCEL_QUESTION = "Do you really want to stop here? Say yes to close this, or tell me more to go on."


def sentences(text: str) -> list[str]:
    """``text`` cut after each ".", "!" or "?" that a space follows: what ``step_question`` and ``carry_over`` keep or
    drop one at a time."""
    return [s for s in re.split(r"(?<=[.!?])\s+", text.strip()) if s]


@dataclass(frozen=True)
class TurnOutcome:
    """What one user message led to."""

    reply: str
    step_before: str
    step_after: str
    calls: int
    outcome: str  # "ok" | "reasked" | "carried" (read again by the next step) | "contract_failed" | "finished"


def _fmt(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


class _Bot:
    """The turn loop both bots share: call, check, re-ask once, record."""

    def __init__(self, scenario: Scenario, backend: Backend, *, log: EventLog | None,
                 clock: Callable[[], float], max_tokens: int, on_event: Callable[[Event], None] | None,
                 mode: str, extra_params: dict[str, Any] | None = None) -> None:
        self.scenario = scenario
        self.backend = backend
        self.max_tokens = max_tokens
        self.on_event = on_event
        self._attempt = 1  # the attempt of the turn being checked (1: first call, 2: the re-ask)
        self._calls_this_turn = 0  # model calls for the current user message (a carried message adds some)
        params = {"scenario": scenario.name, "mode": mode, "model": backend.model_id(), "max_tokens": max_tokens}
        self.machine = LabMachine(scenario.table, reduce=reduce_dialog, empty=DialogState(), log=log, clock=clock,
                                  params={**params, **(extra_params or {})})
        params = {**params, **(extra_params or {})}
        start = next((e for e in self.machine.events if isinstance(e, RunStarted)), None)
        if start is not None:  # a resumed log must have been written under the same contract
            differs = [k for k in ("mode", "arm", "features", "checked", "without")
                       if start.params.get(k) != params.get(k)]
            if differs:
                was = ", ".join(f"{k}={start.params.get(k)!r}" for k in differs)
                now = ", ".join(f"{k}={params.get(k)!r}" for k in differs)
                raise LabkitError(f"the log was written by another arm ({was}), not by this one ({now})",
                                  "resume a conversation with the arm that started it, or start a new log.")

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
        violation: Violation | None = None
        raw = ""
        for attempt in (1, 2):
            self._attempt = attempt
            schema = self._schema(step)  # after a refusal, a bot may narrow what the re-ask can answer
            asked = prompt if attempt == 1 else self._reask(prompt, raw, violation, step)  # type: ignore[arg-type]
            out = self.backend.complete(asked, max_tokens=self.max_tokens, schema=schema, temperature=0.0, seed=0)
            raw = out.text
            checked = self._check(raw, step)
            violation = checked.violation
            self._record(ModelCalled(turn=turn, step=step.name, attempt=attempt, prompt=asked, raw=raw,
                                     prompt_tokens=out.prompt_tokens, completion_tokens=out.completion_tokens,
                                     seconds=round(out.seconds, 3), violation=violation.code if violation else "",
                                     detail=violation.detail if violation else ""))
            if out.cached_tokens:
                self._record(CacheRead(turn=turn, attempt=attempt, tokens=out.cached_tokens))
            if checked.answer is not None:
                return checked.answer, None, attempt
        return None, violation, 2

    # the contract, overridable per bot (the defaults are the contract as first recorded)
    def _schema(self, step: Step) -> dict[str, Any]:
        return answer_schema(step)

    def _check(self, raw: str, step: Step) -> Checked:
        return check_answer(raw, step, self.state.variables)

    def _reask(self, prompt: str, raw: str, violation: Violation, step: Step) -> str:
        return reask_prompt(prompt, raw, violation, step)

    def _who(self, name: str, answer: Answer, step: str) -> str:
        return "model"

    def _apply_results(self, answer: Answer, step: str, turn: int) -> None:
        for name, value in answer.results.items():
            old = self.state.variables.get(name)
            if old != value:
                who = self._who(name, answer, step)
                if who == "model":
                    self._record(VariableChanged(turn=turn, step=step, name=name, old=old, new=value))
                else:
                    self._record(VariableChanged(turn=turn, step=step, name=name, old=old, new=value, who=who))

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
        return self._answer_turn(step, turn)

    def _answer_turn(self, step: Step, turn: int) -> TurnOutcome:
        """The model's answer to the turn's message in ``step``, checked, recorded and acted on."""
        self._calls_this_turn = 0
        prompt = self.prompt(step)
        contract_step = self.contract_step(step)
        answer, violation, calls = self._ask(prompt, contract_step, turn)
        if answer is None:
            assert violation is not None
            self._record(ContractFailed(turn=turn, step=step.name, violation=violation.code, detail=violation.detail))
            self._record(BotSaid(turn=turn, step=step.name, text=FALLBACK_REPLY))
            return TurnOutcome(FALLBACK_REPLY, step.name, self.state.status, calls, "contract_failed")
        self._apply_results(answer, step.name, turn)
        self._calls_this_turn = calls
        reply = self._after_answer(answer, step, turn)
        outcome = "ok" if calls == 1 else "reasked"
        if self._calls_this_turn > calls:
            calls, outcome = self._calls_this_turn, "carried"
        return TurnOutcome(reply, step.name, self.state.status, calls, outcome)

    def declared_prefixes(self) -> tuple[str, ...]:
        """The head of every step's prompts: the prefixes a backend may keep the KV state of.

        Declared by the bot that writes the prompts, never guessed from the calls before
        (:mod:`labkit.llm.prefix_cache` says why): every prompt this bot sends, a re-ask included,
        starts with the head of the step it is asked in.
        """
        return tuple(dict.fromkeys(self.head(step) for step in self.scenario.steps.values()))

    # hooks the two bots fill in
    def prompt(self, step: Step) -> str:
        raise NotImplementedError

    def head(self, step: Step) -> str:
        raise NotImplementedError

    def contract_step(self, step: Step) -> Step:
        raise NotImplementedError

    def _after_answer(self, answer: Answer, step: Step, turn: int) -> str:
        raise NotImplementedError

    def _variables_text(self, hidden: tuple[str, ...] = ()) -> str:
        known = {k: v for k, v in self.state.variables.items() if v not in (None, "", []) and k not in hidden}
        shown = "; ".join(f"{k}={_fmt(v)}" for k, v in known.items()) or "nothing yet"
        return shown + "".join(f"; {k}=(being corrected: the new value from the user's latest message)"
                               for k in hidden)

    def _turns_text(self, last: int | None) -> str:
        turns = self.state.turns if last is None else self.state.turns[-last:]
        return "\n".join(f"{'User' if who == 'user' else 'Assistant'}: {said}" for who, said in turns)


class DialogBot(_Bot):
    """The scenario's machine runs the dialog; the model sees only the current step.

    ``recent_turns``: past messages (user and bot) the prompt carries; an existing ``log`` (e.g. a
    :class:`~labkit.core.store.JsonlLog`) resumes a conversation; ``features``: names from
    :mod:`labkit.dialog.features` (none: the bare machine, whose prompts the recorded cassettes hold).
    """

    def __init__(self, scenario: Scenario, backend: Backend, *, log: EventLog | None = None,
                 clock: Callable[[], float] = time.time, recent_turns: int = 4, max_tokens: int = MAX_TOKENS,
                 on_event: Callable[[Event], None] | None = None, features: frozenset[str] | set[str] = frozenset(),
                 arm: str = "", without: frozenset[str] | set[str] = frozenset()) -> None:
        self.recent_turns = recent_turns
        self.features = checked_features(features)
        self.without = checked_parts(without)  # parts of features that are on, switched off (an ablation)
        self._dropped: ValuesDropped | None = None
        self._cut: ValuesCut | None = None  # split_cut: the parts the kept answer had cut out
        self._split_kept: tuple[Answer, ValuesCut] | None = None  # split_cut: the cut answer awaiting named values
        self._refused: frozenset[str] = frozenset()  # grounded_values: the move the re-ask may not take
        self._carrying = False  # carry_over: the step moved to is reading the turn's message again
        self._split_first: tuple[str, ...] = ()  # split_required: the fields the re-ask must write first
        if self.has("corrections") and scenario.corrections is None:
            raise LabkitError(f"scenario '{scenario.name}' declares no corrections, which the feature "
                              "'corrections' needs",
                              "add corrections: {signal: correct, when: ...} to the scenario, or leave the feature "
                              "out.")
        extra = {"arm": arm, "features": sorted(self.features)} if self.features or arm else None
        if self.without:  # recorded only when a part is off, so the recordings made before parts still replay
            extra = {**(extra or {}), "without": sorted(self.without)}
        super().__init__(scenario, backend, log=log, clock=clock, max_tokens=max_tokens, on_event=on_event,
                         mode="machine", extra_params=extra)

    def has(self, feature: str) -> bool:
        """Whether ``feature`` is on; a name that is no declared feature is an error, never "off"."""
        checked_features([feature])
        return feature in self.features

    def has_part(self, part: str) -> bool:
        """A part is on with its feature, unless the arm switched it off (an unknown part is an error)."""
        checked_parts([part])
        (of,) = [p.of for p in PARTS if p.name == part]
        return self.has(of) and part not in self.without

    # ------------------------------------------------------------- the contract per step
    def contract_step(self, step: Step) -> Step:
        """The step the model answers under: the step itself, widened by the features that are on.

        ``vars_memory`` and ``corrections`` let ``results`` hold other steps' variables (given early, corrected late);
        ``corrections`` also adds the correction signal (it records values and never moves) once an earlier step
        holds a value it could correct.
        """
        if not (self.has("vars_memory") or self.has("corrections")):
            return step
        own = {f.name for f in step.results}
        others = tuple(f for f in self.scenario.variables if f.name not in own)
        signals = step.signals
        corrections = self.scenario.corrections
        if (self.has("corrections") and corrections is not None and step.signal(corrections.signal) is None
                and self._correctable(step)):
            signals = (*signals, Signal(corrections.signal, step.name, (), corrections.when))
        return Step(step.name, step.instructions, step.instructions_file, (*step.results, *others), signals,
                    step.final, step.message, step.ask_keywords, step.example)

    def _correctable(self, step: Step) -> set[str]:
        """The values the correction signal corrects in ``step``: known values of the other steps.

        The signal is offered only where one exists. It may also carry the step's own value, which
        is then the step's answer (see :meth:`_check`), never a correction that keeps the step.
        """
        corrections = self.scenario.corrections
        if corrections is None:
            return set()
        own = {f.name for f in self.scenario.step(step.name).results}
        known = {n for n, v in self.state.variables.items() if not unknown(v)}
        return (set(corrections.fields) or {f.name for f in self.scenario.variables}) & known - own

    def _schema(self, step: Step) -> dict[str, Any]:
        schema = self._signal_schema(step)
        return in_order(schema) if self.has("results_first") else schema

    def _signal_schema(self, step: Step) -> dict[str, Any]:
        if not self.has("results_grammar"):
            return answer_schema(step)
        corrections = self.scenario.corrections
        only = ({corrections.signal: self._correctable(step) | {f.name for f in self.scenario.step(step.name).results}}
                if self.has("corrections") and corrections is not None else None)
        refused = set(self._refused) if self._attempt == 2 and self.has_part("refused_move_barred") else set()
        first = self._split_first if self._attempt == 2 and self.has("split_required") else ()
        barred = refused | (self._uncued_moves() if self.has("move_cues") else set())
        corrected = self._cued_correction(step) if self.has("correction_cues") and self._attempt == 1 else ()
        if corrected:
            assert corrections is not None
            barred |= {s.name for s in step.signals if s.name != corrections.signal}
            first = corrected
        if all(s.name in barred for s in step.signals):  # never bar every move (the grammar needs one)
            barred = refused
        return grammar_schema(step, self.state.variables, only, barred,
                              stay_keeps_needs=self.has_part("stay_keeps_needs"),
                              needs_decide=self.has("results_first") and self.has_part("stay_keeps_needs"),
                              first=first)

    def _latest_message(self) -> str:
        """The user's latest message: the one this turn answers (``carry_over`` reads it again in the next step)."""
        return next((text for who, text in reversed(self.state.turns) if who == "user"), "")

    def _uncued_moves(self) -> set[str]:
        """``move_cues``: the signals with declared cues none of which the latest message holds ("Hmm, wait, not
        yet." holds no cue of ``back``, so the grammar does not offer it)."""
        cues = self.scenario.move_cues
        return set(cues) - set(cued(self._latest_message(), cues))

    def _cued_correction(self, step: Step) -> tuple[str, ...]:
        """``correction_cues``: the one earlier value the latest message corrects, when the message holds a cue of
        the correction ("sorry, not", "actually") and the cue of exactly one value the correction may change
        (the scenario's ``cues``); else nothing, and the model chooses as before."""
        corrections = self.scenario.corrections
        if corrections is None or not corrections.cues or step.signal(corrections.signal) is None:
            return ()
        text = self._latest_message()
        if not cued(text, {corrections.signal: corrections.cues}):
            return ()
        named = [n for n in cued(text, self.scenario.cues) if n in self._correctable(step)]
        return tuple(named) if len(named) == 1 else ()

    def _grounded(self, checked: Checked, step: Step) -> Checked:
        """``grounded_values``: free-text values holding words the user never said are taken out.

        A dropped value the move does not need is left out (the log says so). A move that needed it is refused once;
        the re-ask shows no example and, under ``results_grammar``, cannot take that move again. If the re-ask is
        ungrounded too, its grounded values are kept, the step stays and the reply says the bot did not understand
        (a question of the machine's own here would let a bot that copies the examples pass).
        """
        answer = checked.answer
        assert answer is not None
        said = [text for who, text in self.state.turns if who == "user"]
        own = {f.name for f in self.scenario.step(self.state.status).results}
        later = [f.name for f in step.results if f.type == "enum" and f.name not in own]
        unsaid = ungrounded(answer.results, step.results, said, enums=later)
        if not unsaid:
            return checked
        results = {k: v for k, v in answer.results.items() if k not in unsaid}
        signal = step.signal(answer.signal)
        known = {**self.state.variables, **results}
        update: dict[str, Any] = {"results": results}
        if signal is not None and any(unknown(known.get(n)) for n in signal.needs):
            corrections = self.scenario.corrections
            stay = next((s for s in step.signals if s.to == step.name and not s.needs
                         and (corrections is None or s.name != corrections.signal)), None)
            if self._attempt == 1 or stay is None:
                self._refused = frozenset({answer.signal})
                named = "; ".join(f"{name} has {', '.join(map(repr, words))}" for name, words in unsaid.items())
                return Checked(None, Violation("ungrounded_results", f"the user never said these words: {named}. "
                                               "Use only the user's own words; if the user has not said it, stay "
                                               "and ask for it"))
            update |= {"signal": stay.name, "message": NOT_UNDERSTOOD}
        self._dropped = ValuesDropped(turn=0, step=step.name, dropped={k: answer.results[k] for k in unsaid},
                                      unsaid=unsaid, signal=answer.signal, kept_signal=update.get("signal",
                                                                                                 answer.signal))
        return Checked(answer.model_copy(update=update), None)

    def _check(self, raw: str, step: Step) -> Checked:
        self._dropped = None
        self._cut = None
        if self._attempt == 1:
            self._refused = frozenset()
            self._split_first = ()
            self._split_kept = None
        checked = check_answer(raw, step, self.state.variables)
        corrections = self.scenario.corrections
        if self._split_kept is not None:  # split_cut's second call: only the named values are read
            if checked.answer is not None and self.has("grounded_values"):
                checked = self._grounded(checked, step)
            return self._merge_split(checked)
        if checked.answer is None:
            return checked
        if self.has("grounded_values"):
            checked = self._grounded(checked, step)
            if checked.answer is None:
                return checked
        if self.has("split_values"):
            checked = self._split(checked)
            if checked.answer is None:
                return checked
        if not self.has("corrections") or corrections is None or checked.answer.signal != corrections.signal:
            return checked
        own = {f.name for f in self.scenario.step(self.state.status).results}
        allowed = self._correctable(step)
        changed = {k: v for k, v in checked.answer.results.items() if self.state.variables.get(k) != v}
        if not changed:
            return Checked(None, Violation("missing_results", f"signal '{corrections.signal}' needs the corrected "
                                           "value in results, but the results change nothing"))
        refused = sorted(set(changed) - allowed - own)
        if refused:
            hint = (f"it may change {', '.join(sorted(allowed))}" if allowed else "nothing is known yet to correct")
            return Checked(None, Violation("invalid_results", f"signal '{corrections.signal}' may not change "
                                           f"{', '.join(refused)}: {hint}"))
        if set(changed) <= own:
            # The step's own value is its answer, not a correction: it moves on as its answer would.
            forward = step.signal("next")
            known = {**self.state.variables, **checked.answer.results}
            ready = forward is not None and not any(unknown(known.get(n)) for n in forward.needs)
            stay = next((s for s in step.signals if s.to == step.name and not s.needs
                         and s.name != corrections.signal), None)
            kept = forward if ready else stay
            if kept is not None:
                return Checked(checked.answer.model_copy(update={"signal": kept.name}), None)
        return checked

    def _split(self, checked: Checked) -> Checked:
        """``split_values``: a free-text value holding another variable's part is refused once, naming it
        (:mod:`labkit.dialog.splitting`); ``split_required`` makes the re-ask write the named variables first.

        ``split_cut`` keeps the answer instead: code cuts the parts out (``ValuesCut``) and, only while a named variable
        is still unknown, asks again for those values alone, merged into the cut answer with its move unchanged.
        A correction is refused as without it (the correction rules judge the whole answer).
        """
        answer = checked.answer
        assert answer is not None
        fresh = {k: v for k, v in answer.results.items() if self.state.variables.get(k) != v}
        mixed = foreign_parts(fresh, self.scenario.cues)
        if not mixed:
            return checked
        named = tuple(dict.fromkeys(other for found in mixed.values() for _, other in found))
        corrections = self.scenario.corrections
        correcting = corrections is not None and answer.signal == corrections.signal
        if not self.has("split_cut") or correcting:
            if self._attempt == 1:
                self._split_first = tuple(n for n in named if unknown(self.state.variables.get(n)))
                return Checked(None, Violation("mixed_values", mixed_detail(mixed)))
            return checked
        cut = {name: [part for part, _ in found] for name, found in mixed.items()}
        results = {**answer.results, **{name: cut_parts(answer.results[name], set(cut[name])) for name in cut}}
        kept = answer.model_copy(update={"results": results})
        event = ValuesCut(turn=0, step=self.state.status, cut=cut, written={k: answer.results[k] for k in cut})
        missing = tuple(n for n in named if unknown({**self.state.variables, **results}.get(n)))
        if self._attempt == 1 and missing:
            self._split_first, self._split_kept = missing, (kept, event)
            return Checked(None, Violation("mixed_values", mixed_detail(mixed)))
        self._cut = event
        return Checked(kept, None)

    def _merge_split(self, checked: Checked) -> Checked:
        """``split_cut``'s second call: the values it gives for the variables named are merged into the answer
        cut at the first call, which is kept whatever the second call did (its own move and message are not)."""
        assert self._split_kept is not None
        (kept, event), self._split_kept = self._split_kept, None
        given = checked.answer.results if checked.answer is not None else {}
        extra = {n: given[n] for n in self._split_first if not unknown(given.get(n))}
        self._cut = event
        return Checked(kept.model_copy(update={"results": {**kept.results, **extra}}), None)

    def _reask(self, prompt: str, raw: str, violation: Violation, step: Step) -> str:
        if violation.code == "ungrounded_results" and self.has("step_example"):  # the example was copied
            prompt = self._feature_prompt(self.scenario.step(self.state.status), example=False)
        if self.has("differing_reask"):
            return differing_reask_prompt(prompt, raw, violation, step, self.state.variables)
        return reask_prompt(prompt, raw, violation, step)

    def _apply_results(self, answer: Answer, step: str, turn: int) -> None:
        """As recorded, except: another step's value that is already known changes only through a correction.

        Under ``vars_memory`` the results may hold every variable; a model that repeats a known value
        in other words must not overwrite it (only the declared correction signal may).
        """
        if self._dropped is not None:  # the check of the kept answer dropped values: the log says which
            self._record(self._dropped.model_copy(update={"turn": turn}))
            self._dropped = None
        if self._cut is not None:  # ... or cut parts out of them
            self._record(self._cut.model_copy(update={"turn": turn}))
            self._cut = None
        if self.has("vars_memory") or self.has("corrections"):
            own = {f.name for f in self.scenario.step(step).results}
            corrections = self.scenario.corrections
            correcting = corrections is not None and answer.signal == corrections.signal
            kept = {k: v for k, v in answer.results.items()
                    if k in own or correcting or unknown(self.state.variables.get(k))}
            answer = answer.model_copy(update={"results": kept})
        super()._apply_results(answer, step, turn)

    def _who(self, name: str, answer: Answer, step: str) -> str:
        corrections = self.scenario.corrections
        if self.has("corrections") and corrections is not None and answer.signal == corrections.signal:
            return "correction"
        if self.has("vars_memory") and all(f.name != name for f in self.scenario.step(step).results):
            return "memory"
        return "model"

    # ------------------------------------------------------------- the prompt
    def prompt(self, step: Step) -> str:
        """The small prompt of the current step (see the module docstring)."""
        if self.features:
            return self._feature_prompt(step)
        past = "; ".join(f"{k}: {v}" for k, v in self.state.summaries.items() if k != step.name) or "none"
        return (f"{self.head(step)}{self._variables_text()}\nEarlier steps: {past}\n\n"
                f"Conversation (latest last):\n{self._turns_text(self.recent_turns)}\n\n"
                "Reply with one JSON object: message (to the user), signal, results, summary (one line).\nJSON: ")

    def head(self, step: Step) -> str:
        """The text every prompt of ``step`` starts with, whatever was said (a declared prompt prefix).

        Without features: the step's instructions, fields and signals, up to "Known so far: ". With
        features, the signals may widen with the state (corrections, a pending cancel), so the head
        ends after the step's own fields.
        """
        fields = "\n".join(f"- {f.name} ({_type_text(f)}): {f.description}" for f in step.results) or "- none"
        head = f"{self.scenario.title}. Current step: {step.name}.\n{step.instructions.strip()}\n\n" \
               f"Results to fill in this step:\n{fields}"
        if self.features:
            return head
        signals = "\n".join(f"- {s.name}: {s.when or 'go to ' + s.to}"
                            + (f" (needs {', '.join(s.needs)})" if s.needs else "") for s in step.signals)
        return f"{head}\nSignals:\n{signals}\n\nKnown so far: "

    def _feature_prompt(self, step: Step, *, example: bool = True) -> str:
        """The step prompt with the features that are on (a new text: the first recording never sent it)."""
        contract = self.contract_step(step)
        own = {f.name for f in step.results}
        signals = "\n".join(f"- {s.name}: {s.when or 'go to ' + s.to}"
                            + (f" (needs {', '.join(s.needs)})" if s.needs else "") for s in contract.signals)
        parts = [self.head(step)]
        later = [f for f in contract.results if f.name not in own and unknown(self.state.variables.get(f.name))]
        if later and self.has("vars_memory"):
            parts.append("Other values: fill one in only if the user says it now (never ask for a value that is "
                         "known):\n" + "\n".join(f"- {f.name} ({_type_text(f)}): {f.description}" for f in later))
        parts.append(f"Signals:\n{signals}")
        if self.state.pending_cancel:
            parts.append("You asked the user whether to stop. Emit cancel only if the user confirms it; if the user "
                         "goes on, continue this step.")
        if self.has("step_example") and example:
            parts.append(example_text(step, results_first=self.has("results_first")))
        shown = [e for e in step.more_examples if contract.signal(e.signal) is not None]  # a correction needs a value
        if self.has("more_examples") and example and shown:
            parts.append(more_examples_text(shown, results_first=self.has("results_first")))
        hidden = self._cued_correction(contract) if self.has("correction_unseen") else ()
        owners = {s.name for s in self.scenario.steps.values() if any(f.name in hidden for f in s.results)}
        past = "; ".join(f"{k}: {v}" for k, v in self.state.summaries.items()
                         if k != step.name and k not in owners) or "none"
        reply = ("results (only values the user's messages give, in their words; {} when they give none), "
                 "signal, message (to the user), summary (one line)" if self.has("results_first") else
                 "message (to the user), signal, results, summary (one line)")
        parts += ["", f"Known so far: {self._variables_text(hidden)}\nEarlier steps: {past}", "",
                  f"Conversation (latest last):\n{self._turns_text(self.recent_turns)}", "",
                  f"Reply with one JSON object: {reply}.\nJSON: "]
        return "\n".join(parts)

    # ------------------------------------------------------------- after a kept contract
    def _after_answer(self, answer: Answer, step: Step, turn: int) -> str:
        corrections = self.scenario.corrections
        if self.has("corrections") and corrections is not None and answer.signal == corrections.signal:
            # an accepted correction always changed a value (_check refuses one that changes nothing)
            text = self._asking(answer.message, step, moved=self.has("correction_question"))
            self._record(BotSaid(turn=turn, step=step.name, text=text, summary=answer.summary, signal=answer.signal))
            return text  # the values changed through VariableChanged(who="correction"); no move
        if self.has("cancel_confirm"):
            if self.state.pending_cancel:
                self._record(CancelAnswered(turn=turn, step=step.name, confirmed=answer.signal == "cancel"))
            elif answer.signal == "cancel":
                question = self.scenario.cancel_question or CANCEL_QUESTION
                self._record(CancelRequested(turn=turn, step=step.name, question=question))
                self._record(BotSaid(turn=turn, step=step.name, text=question, summary=answer.summary))
                return question
        target = self.scenario.step(self.machine.table.rows_for(step.name, answer.signal)[0].dest)
        skipping = (self.has("vars_memory") and answer.signal != "back" and target.name != step.name
                    and not target.stops_moving_on(self.state.variables))
        carrying = not (target.final or skipping) and self._late(answer, step, target)
        if carrying:  # the next step answers the message: this step's words end without a question
            message = " ".join(s for s in sentences(answer.message) if not self._asks(s))
        else:
            message = (answer.message if target.final or skipping
                       else self._asking(answer.message, target, moved=target.name != step.name))
        self._record(BotSaid(turn=turn, step=step.name, text=message, summary=answer.summary, signal=answer.signal))
        if target.final and target.message:  # a final step is absorbing: its message is recorded before entering it
            self._record(BotSaid(turn=turn, step=target.name, text=target.message))
        self._fire(answer.signal, turn)
        if target.final and target.message:
            return f"{message}\n{target.message}"
        if carrying:
            calls, self._carrying = self._calls_this_turn, True
            try:
                carried = self._answer_turn(target, turn)
            finally:
                self._carrying = False
            self._calls_this_turn = calls + carried.calls
            return f"{message}\n{carried.reply}" if message else carried.reply
        if skipping:
            skipped = self._skip_known(turn)
            if skipped:
                return f"{message}\n{skipped}"
        return message

    def _late(self, answer: Answer, step: Step, target: Step) -> bool:
        """``carry_over``: whether the move recorded earlier words, leaving the latest message unread.

        True when every value the move recorded for this step holds a word of earlier user messages that the latest
        does not: the latest message then belongs to the step moved to, which reads it in the same turn (once: a
        carried call is never carried again).
        """
        if not self.has("carry_over") or self._carrying or answer.signal == "back" or target.name == step.name:
            return False
        own = {f.name for f in step.results}
        recorded = [v for k, v in answer.results.items() if k in own and not unknown(v)]
        said = [text for who, text in self.state.turns if who == "user"]
        if not recorded or len(said) < 2:
            return False
        return all(unsaid_words(v, said[-1:]) and not unsaid_words(v, said) for v in recorded)

    def _asking(self, message: str, step: Step, *, moved: bool = False) -> str:
        """``step_question``: the model's questions replaced by the step's declared one.

        Where the model asked nothing the message stays, except after a move into a step that still needs something
        (``moved``): the machine changed the step, so it asks; ``correction_question`` does the same after a correction
        that changed a value. The machine never adds a question in a step the model did not leave, or a bot that does
        nothing would pass the users who should be asked again (the floor bots).
        """
        question = self.scenario.questions.get(step.name)
        if not self.has("step_question") or not question or not step.still_needs(self.state.variables):
            return message
        said = sentences(message)
        kept = [s for s in said if not self._asks(s)]
        if len(kept) == len(said) and not moved:
            return message
        return " ".join([*kept, self._question(step)])

    def _asks(self, sentence: str) -> bool:
        """Whether a sentence of the model's message is a question: it ends with "?", or, with ``request_question``,
        it opens with one of the scenario's declared ``request_openers`` ("Please provide ..."), as a whole word. A
        message that requests nothing (a do-nothing bot's "OK.") is still kept as it is (the floors).
        """
        if sentence.endswith("?"):
            return True
        openers = self.scenario.request_openers if self.has("request_question") else ()
        return any(re.match(rf"{re.escape(w)}\b", sentence, re.IGNORECASE) for w in openers)

    def _question(self, step: Step) -> str:
        """The step's declared question, ``{known}`` read back in plain words (no JSON quoting)."""
        known = {k: v for k, v in self.state.variables.items() if not unknown(v)}
        plain = "; ".join(f"{k}: {', '.join(map(str, v)) if isinstance(v, list) else v}" for k, v in known.items())
        return self.scenario.questions[step.name].replace("{known}", plain or "nothing yet")

    def _skip_known(self, turn: int) -> str:
        """``vars_memory``: while the step entered has its ``next`` needs known, move on; say what comes next."""
        moved = False
        while True:
            here = self.scenario.step(self.state.status)
            if here.final or here.stops_moving_on(self.state.variables):
                break
            sealed = self.machine.fire("next", turn=turn, reason="vars_memory: needs already known")
            if self.on_event is not None:
                self.on_event(sealed)
            moved = True
        if not moved:
            return ""
        here = self.scenario.step(self.state.status)
        if here.final:
            text = here.message
        elif self.has("step_question") and here.name in self.scenario.questions:
            text = self._question(here)
        elif here.results:
            text = "Noted. Now please tell me " + "; ".join(f.description or f.name for f in here.results) + "."
        else:
            text = f"Here is what I have: {self._variables_text()}. Is that right?"
        self._record(BotSaid(turn=turn, step=here.name, text=text))
        return text


def example_text(step: Step, *, results_first: bool = False) -> str:
    """The ``step_example`` block: the step's declared example, else one built from its schema (its fields in
    the answer's order: ``results_first`` puts the results first)."""
    import json as _json

    ex = step.example
    if ex is not None:
        answer = {"message": ex.message, "signal": ex.signal, "results": ex.results, "summary": ex.summary}
        user = ex.user
    else:
        forward = step.signal("next") or (step.signals[0] if step.signals else None)
        results = {f.name: _placeholder(f) for f in step.results if forward and f.name in forward.needs}
        answer = {"message": "Thanks. " + (f"Next: {forward.when}." if forward and forward.when else "Go on."),
                  "signal": forward.name if forward else "", "results": results, "summary": "what was agreed"}
        user = "(a message that gives what this step needs)"
    if results_first:
        answer = {k: answer[k] for k in RESULTS_FIRST}
    return (f"Example of a correct answer (another conversation; take the values from this user's words, never "
            f"from the example):\nUser: {user}\nJSON: {_json.dumps(answer, ensure_ascii=False)}")


def more_examples_text(examples: Sequence[Example], *, results_first: bool = False) -> str:
    """The ``more_examples`` block: a step's further worked answers, in the answer's field order."""
    import json as _json

    order = RESULTS_FIRST if results_first else ("message", "signal", "results", "summary")
    lines = ["More examples (other conversations again; when a user gives several values at once, each goes into "
             "its own field):"]
    for ex in examples:
        answer = {"message": ex.message, "signal": ex.signal, "results": ex.results, "summary": ex.summary}
        lines += [f"User: {ex.user}", f"JSON: {_json.dumps({k: answer[k] for k in order}, ensure_ascii=False)}"]
    return "\n".join(lines)


def _placeholder(f: ResultField) -> Any:
    if f.type == "enum":
        return f.values[0]
    if f.type == "list":
        return ["<item in the user's words>"]
    if f.type in ("integer", "number"):
        return 1
    if f.type == "boolean":
        return True
    return "<in the user's words>"


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
                 on_event: Callable[[Event], None] | None = None, checked: bool = False, arm: str = "") -> None:
        self.script = scenario.full_script()
        self.checked = checked
        self._step = Step(name="whole_script", instructions=self.script, results=tuple(scenario.variables),
                          signals=tuple(Signal(name, "whole_script") for name in scenario.steps))
        extra = {"arm": arm, "checked": checked} if checked or arm else None
        self.full = scenario
        super().__init__(_single_step(scenario, self._step), backend, log=log, clock=clock, max_tokens=max_tokens,
                         on_event=on_event, mode="prompt_only", extra_params=extra)

    def _moves(self) -> Step:
        """The script's moves from the claimed step, as a step whose signals are target steps with their needs."""
        here = self.full.steps[self.claimed]
        moves = [Signal(here.name, here.name)]
        for s in here.signals:
            if s.to != here.name and all(m.name != s.to for m in moves):
                moves.append(Signal(s.to, s.to, s.needs, s.when))
        return Step(self._step.name, self._step.instructions, results=self._step.results, signals=tuple(moves))

    def _check(self, raw: str, step: Step) -> Checked:
        """The same contract; ``checked``: the claimed move must also be the script's, with its needs known.

        The signal is the step the bot claims to be in after the reply; checked, it must be a move the script has
        from the claimed step with the move's ``needs`` known (now or earlier), else the same violation codes and
        the same one re-ask.
        """
        result = check_answer(raw, step, self.state.variables)
        if not self.checked or result.answer is None:
            return result
        return check_answer(raw, self._moves(), self.state.variables)

    def _reask(self, prompt: str, raw: str, violation: Violation, step: Step) -> str:
        return reask_prompt(prompt, raw, violation, self._moves() if self.checked else step)

    @property
    def claimed(self) -> str:
        """The script step the bot stands in by its own claims (the scenario's first before any claim)."""
        return self.state.claimed_step if self.state.claimed_step in self.full.steps else self.full.initial

    @property
    def finished(self) -> bool:
        claimed = self.full.steps.get(self.state.claimed_step)
        return bool(claimed and claimed.final)

    def contract_step(self, step: Step) -> Step:
        return self._step

    def prompt(self, step: Step) -> str:
        return (f"{self.head(step)}{self._turns_text(None)}\n\n"
                "Reply with one JSON object: message (to the user), signal (the step you are in after this "
                "reply), results (everything learned so far), summary (one line).\nJSON: ")

    def head(self, step: Step) -> str:
        """The text every prompt starts with: the whole script, up to the conversation (a declared prefix)."""
        return (f"{self.script}\n\nYou are the assistant following this script. Known so far: see the "
                "conversation.\n\nConversation (latest last):\n")

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
