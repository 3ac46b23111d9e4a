"""Who makes the machine's decisions (``queue``, ``form``, ``message``, ``next``): the model, the dev rule,
a seeded random pick or the oracle. :class:`ModelChooser` asks one short prompt per decision under a
grammar, checks the answer and re-asks once naming the violation, recording each call."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from pydantic import BaseModel

from labkit.core.events import Event
from labkit.llm.backend import Backend
from labkit.reading import prompts, rules
from labkit.reading.answers import (
    FormAnswer,
    MessageAnswer,
    NextAnswer,
    QueueAnswer,
    answer_schema,
    read_answer,
)
from labkit.reading.events import ModelAsked
from labkit.reading.taskfile import FORM_FIELDS, CompareTask, ExtractionTask, ReadingTask, SelectionTask, TriageTask
from labkit.runtime.events import Usage
from labkit.runtime.planner import PlannerError
from labkit.runtime.redact import scrub_text

Kind = Literal["queue", "form", "message", "next"]


@dataclass(frozen=True)
class Decision:
    """One decision the machine asks for, with exactly what the decision maker may look at."""

    kind: Kind
    step: int
    description: str
    options: tuple[str, ...] = ()
    text: str = ""  # the message (queue) or note (form)
    messages: tuple[Mapping[str, Any], ...] = ()  # message decisions: the messages read, in shown order
    read: tuple[str, ...] = ()  # next decisions: the records read so far
    position: int = 1  # message decisions: the first or the second customer
    first: str | None = None  # message decisions at position 2: the message picked first

    @property
    def label(self) -> str:
        return f"message-{self.position}" if self.kind == "message" else self.kind


@dataclass(frozen=True)
class Choice:
    """A decision's answer (a str, or the form's values) and what asking for it cost."""

    value: Any
    usage: Usage = field(default_factory=Usage)


class Chooser(Protocol):
    name: str

    def choose(self, decision: Decision) -> Choice: ...


@dataclass(frozen=True)
class Decoding:
    """Decoding of the model arms: greedy by default (seeds vary orders, see prompts); recorded in provenance."""

    temperature: float = 0.0
    max_tokens_action: int = 220
    max_tokens_decision: int = 60
    max_reasks: int = 1

    def call_seed(self, seed: int, step: int, attempt: int = 1) -> int:
        return seed * 1000 + step * 10 + attempt


DEFAULT_DECODING = Decoding()


def evidence_problem(values: Mapping[str, str], note: str) -> str:
    """The corrective message for form values missing from the note ("" when every value is there)."""
    absent = [f for f in FORM_FIELDS if str(values.get(f, "")) not in note]
    if not absent:
        return ""
    shown = ", ".join(f"{f} {values.get(f, '')!r}" for f in absent)
    return f"not in the note: {shown}. Copy each value exactly as the note writes it."


@dataclass(frozen=True)
class DecisionKind:
    """How the model is asked one kind of decision: the family whose dev example it shows, the answer
    model, the field restricted to the options (if any), the prompt and the cue a re-ask ends with."""

    family: str
    answer: type[BaseModel]
    enum_field: str | None
    prompt: Callable[[Any, Decision], str]
    cue: Callable[[Decision], str]


DECISION_KINDS: dict[str, DecisionKind] = {
    "queue": DecisionKind("triage", QueueAnswer, "queue",
                          lambda ex, d: prompts.queue_prompt(ex, d.text, d.options), lambda d: prompts.QUEUE_CUE),
    "form": DecisionKind("extraction", FormAnswer, None,
                         lambda ex, d: prompts.form_prompt(ex, d.text), lambda d: prompts.FORM_CUE),
    "message": DecisionKind("selection", MessageAnswer, "message",
                            lambda ex, d: prompts.message_prompt(ex, d.description, d.messages, d.position, d.first),
                            lambda d: prompts.message_cue(d.position)),
    "next": DecisionKind("compare", NextAnswer, "next",
                         lambda ex, d: prompts.next_prompt(ex, d.description, d.read, d.options),
                         lambda d: prompts.NEXT_CUE),
}


class ModelChooser:
    """The model decides, one short prompt per decision, with a corrective re-ask naming the violation."""

    name = "model"

    def __init__(self, backend: Backend, examples: Mapping[str, ReadingTask], *, seed: int,
                 decoding: Decoding = DEFAULT_DECODING, record: Callable[[Event], Any] | None = None) -> None:
        self.backend = backend
        self.examples = examples
        self.seed = seed
        self.decoding = decoding
        self.record = record or (lambda e: None)

    def _prompt(self, d: Decision) -> tuple[str, type[BaseModel], dict[str, Any], str]:
        kind = DECISION_KINDS[d.kind]
        schema = answer_schema(kind.answer, {kind.enum_field: d.options} if kind.enum_field else None)
        return kind.prompt(self.examples[kind.family], d), kind.answer, schema, kind.cue(d)

    @staticmethod
    def _check(d: Decision, answer: BaseModel) -> tuple[Any, str]:
        if d.kind == "form":
            values = answer.model_dump()
            return values, evidence_problem(values, d.text)
        value = str(next(iter(answer.model_dump().values())))
        if value not in d.options:
            return value, f"{value!r} is not one of the options: {', '.join(d.options)}."
        return value, ""

    def choose(self, d: Decision) -> Choice:
        prompt, model, schema, cue = self._prompt(d)
        tokens = [0, 0]
        problem = ""
        for attempt in range(1, self.decoding.max_reasks + 2):
            out = self.backend.complete(prompt, max_tokens=self.decoding.max_tokens_decision, schema=schema,
                                        temperature=self.decoding.temperature,
                                        seed=self.decoding.call_seed(self.seed, d.step, attempt))
            tokens[0] += out.prompt_tokens
            tokens[1] += out.completion_tokens
            answer, problem = read_answer(out.text, model)
            value = None
            if answer is not None:
                value, problem = self._check(d, answer)
            self.record(ModelAsked(decision=d.label, step=d.step, attempt=attempt,
                                   prompt_sha256=hashlib.sha256(prompt.encode("utf-8")).hexdigest(),
                                   prompt_tokens=out.prompt_tokens, completion_tokens=out.completion_tokens,
                                   answer=scrub_text(out.text.strip())[:300], problem=problem[:300],
                                   grammar=out.grammar_used, http_retries=out.retries))
            usage = Usage(prompt_tokens=tokens[0], completion_tokens=tokens[1])
            if not problem:
                return Choice(value, usage)
            prompt = prompts.reask(prompt, out.text, problem, cue)
        raise PlannerError(f"the {d.label} answer was not usable after {self.decoding.max_reasks} re-ask(s): {problem}",
                           "the machine records it and plans again (a retry in PLANNING).", usage=usage)


class RuleChooser:
    """The strongest dev rule (:mod:`~labkit.reading.rules`) decides; no model."""

    name = "rule"

    def choose(self, d: Decision) -> Choice:
        if d.kind == "queue":
            return Choice(rules.route(d.text, d.options))
        if d.kind == "form":
            return Choice(rules.extract(d.text))
        if d.kind == "message":
            exclude = [d.first] if d.first else []
            return Choice(rules.pick_message(d.description, d.messages, d.position, exclude))
        return Choice(rules.next_record(d.description, d.options))


class RandomChooser:
    """A seeded uniform pick among the options (for a form: among the note's values of each shape)."""

    name = "random"

    def __init__(self, seed: int) -> None:
        self.seed = seed

    def choose(self, d: Decision) -> Choice:
        rng = random.Random(f"random:{self.seed}:{d.step}:{d.label}")
        if d.kind == "form":
            return Choice({f: (rng.choice(c) if (c := rules.candidates(d.text, f)) else "") for f in FORM_FIELDS})
        return Choice(rng.choice(list(d.options)))


class OracleChooser:
    """The task's answer decides (the upper bound: what the machine achieves with a perfect decision maker)."""

    name = "oracle"

    def __init__(self, task: ReadingTask) -> None:
        self.task = task

    def choose(self, d: Decision) -> Choice:
        t = self.task
        if isinstance(t, TriageTask):
            return Choice(t.answer)
        if isinstance(t, ExtractionTask):
            return Choice(t.answer.model_dump())
        if isinstance(t, SelectionTask):
            wanted = t.answer[d.position - 1]
            return Choice(next(str(m["id"]) for m in d.messages if m.get("sender") == wanted))
        assert isinstance(t, CompareTask)
        return Choice(next((r for r in t.answer if r in d.options), "save"))


def shuffled(items: Sequence[Any], seed: int, *where: object) -> list[Any]:
    """``items`` in the order the run's ``seed`` gives them at ``where`` (what a seed varies under greedy)."""
    out = list(items)
    random.Random(":".join(map(str, ("order", seed, *where)))).shuffle(out)
    return out
