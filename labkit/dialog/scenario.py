"""A dialog scenario written in YAML, compiled into a checked transition table.

The script is domain knowledge, not code: one YAML file declares the steps, each step's signals and their
targets, and the results a step must produce; each step's instructions are a Markdown file. Compiling into
:class:`~labkit.core.table.TransitionTable` applies the table's checks (unknown targets, unreachable steps,
dead ends) before a model is called; a mistake in the file is a :class:`ScenarioError` at ``file:line:column``
saying what to do. Format (see ``data/dialog/analyst/scenario.yaml``)::

    name: analyst
    title: Project scoping
    initial: goal
    steps:
      goal:
        instructions: steps/goal.md
        results:
          goal: {type: string, description: what the project should achieve}
        signals:
          next: {to: users, needs: [goal], when: the user named the goal}
          stay: {to: goal, when: the goal is still unclear}
      done:
        final: true

Result field types: ``string``, ``integer``, ``number``, ``boolean``, ``list`` (of strings), or ``enum`` with
``values``. Every result is optional in one answer; a signal's ``needs`` must be known (given now or earlier)
before it may be emitted. ``ask_keywords`` (non-final steps): words one of which a reply asking for what the
step still needs contains (:mod:`labkit.dialog.measure` judges questions by them).

Optional top-level keys that only the machine's features read (:mod:`labkit.dialog.features`, in brackets):

- ``examples`` (by step): one worked answer per non-final step, on a conversation that is no user's, checked
  against its step: its signal, its schema, what the signal ``needs`` (``step_example``)::

      examples:
        goal: {user: I want an app that reminds my family to water the plants., signal: next,
               message: Noted. Who will use it?, results: {goal: remind my family to water the plants}}

- ``more_examples`` (by step): a list of further answers giving later steps' values or a correction, checked
  against the step as the features widen it (``more_examples``);
- ``corrections``: the correction signal, ``{signal, when, fields, cues}``: ``fields`` the variables it may
  change (default: all), ``cues`` words that mark a message as a correction (``corrections``, ``correction_cues``);
- ``cancel_question``: what the bot asks before a ``cancel`` ends the conversation (``cancel_confirm``);
- ``questions`` (by step): the question asked while a step still needs something (``step_question``);
- ``cues`` (by variable): phrases marking a part of a message as that variable's, e.g.
  ``{users: [for me, will use it]}`` (``split_values``, ``correction_cues``);
- ``move_cues`` (by signal): phrases one of which the user's message must hold for the model to be offered
  that signal, e.g. ``{back: [go back, change, wrong]}`` (``move_cues``);
- ``request_openers``: words or phrases that open a sentence asking without a question mark, e.g.
  ``[please, could you, tell me]`` (``request_question``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

from labkit.core.errors import LabkitError, TableError
from labkit.core.table import Row, TransitionTable
from labkit.core.yaml_input import (
    Located,
    LocatedList,
    Where,
    check_keys,
    parse_yaml,
    read_input,
    refuse_scalar,
    value_text,
)

__all__ = ["Where"]  # re-exported: callers place their own errors with it


class ScenarioError(LabkitError):
    """A scenario file is malformed; the message names the file, line and column."""


_TYPES: dict[str, Any] = {"string": str, "integer": int, "number": float, "boolean": bool, "list": list[str]}
_STRING_MAX = 120  # keeps answers short: small models write 10-15 tokens/s on a laptop CPU


@dataclass(frozen=True)
class ResultField:
    """One structured result a step produces."""

    name: str
    type: str
    description: str = ""
    values: tuple[str, ...] = ()

    def annotation(self) -> Any:
        if self.type == "enum":
            return Literal[self.values]  # type: ignore[valid-type]
        if self.type == "string":
            return str
        return _TYPES[self.type]

    def field_info(self) -> Any:
        if self.type == "string":
            return Field(default=None, description=self.description or None, max_length=_STRING_MAX)
        if self.type == "list":
            return Field(default=None, description=self.description or None, max_length=6)
        return Field(default=None, description=self.description or None)


@dataclass(frozen=True)
class Signal:
    """A signal a step may emit: where it leads and which results must be known first."""

    name: str
    to: str
    needs: tuple[str, ...] = ()
    when: str = ""


@dataclass(frozen=True)
class Example:
    """A worked example answer of one step, on a conversation that is no user's."""

    user: str
    message: str
    signal: str
    results: dict[str, Any] = field(default_factory=dict)
    summary: str = ""


@dataclass(frozen=True)
class Corrections:
    """The declared correction signal: its name, when the model emits it, which variables it may change."""

    signal: str = "correct"
    when: str = "the user corrects a value given earlier"
    fields: tuple[str, ...] = ()  # empty: every variable
    cues: tuple[str, ...] = ()  # words that mark a message as a correction (correction_cues)


def unknown(value: Any) -> bool:
    """A variable not given yet: never set, or set to nothing (``None``, ``""``, ``[]``)."""
    return value is None or value == "" or value == []


@dataclass(frozen=True)
class Step:
    """One state of the dialog."""

    name: str
    instructions: str = ""
    instructions_file: str = ""
    results: tuple[ResultField, ...] = ()
    signals: tuple[Signal, ...] = ()
    final: bool = False
    message: str = ""  # what a final step says (no model call there)
    ask_keywords: tuple[str, ...] = ()  # words a reply that asks for this step's value contains (the measure's)
    example: Example | None = None  # a worked example answer (the step_example feature shows it)
    more_examples: tuple[Example, ...] = ()  # answers giving more than the step asks, or correcting (more_examples)

    def signal(self, name: str) -> Signal | None:
        return next((s for s in self.signals if s.name == name), None)

    def still_needs(self, known: Mapping[str, Any]) -> bool:
        """Whether this step still needs something from the user: a needed value not ``known``, or (a step
        that records nothing or needs nothing to move) a confirmation. The machine's rule (when to ask) and
        the measure's (whether the bot had to ask) are this one."""
        if self.final:
            return False
        needed = {n for s in self.signals for n in s.needs}
        return not self.results or not needed or any(unknown(known.get(n)) for n in needed)

    def stops_moving_on(self, known: Mapping[str, Any]) -> bool:
        """Whether ``vars_memory`` stops here on its way forward (a final step needs nothing more, so it does
        not): no ``next`` that needs recorded values, or one of them not ``known`` yet."""
        if self.final:
            return False
        forward = self.signal("next")
        if forward is None or not forward.needs or not self.results:
            return True
        return any(unknown(known.get(n)) for n in forward.needs)

    @property
    def signal_names(self) -> list[str]:
        return [s.name for s in self.signals]

    def results_model(self) -> type[BaseModel]:
        """The pydantic model of this step's results (every field optional, extra keys refused)."""
        fields = {f.name: (f.annotation() | None, f.field_info()) for f in self.results}
        return create_model(f"{self.name.title().replace('_', '')}Results",
                            __config__=ConfigDict(extra="forbid"), **fields)  # type: ignore[call-overload]


@dataclass(frozen=True)
class Scenario:
    """A loaded, checked scenario."""

    name: str
    title: str
    initial: str
    steps: dict[str, Step]
    path: str = ""
    description: str = ""
    corrections: Corrections | None = None
    cancel_question: str = ""
    questions: dict[str, str] = field(default_factory=dict)  # step name -> the question asked there
    cues: dict[str, tuple[str, ...]] = field(default_factory=dict)  # variable -> words marking its part of a message
    move_cues: dict[str, tuple[str, ...]] = field(default_factory=dict)  # signal -> words the message must hold
    request_openers: tuple[str, ...] = ()  # words that open a sentence asking without a question mark
    table: TransitionTable = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "table", compile_table(self))

    def step(self, name: str) -> Step:
        return self.steps[name]

    @property
    def variables(self) -> list[ResultField]:
        """Every result field of every step, first declaration wins (variables are scenario-wide)."""
        seen: dict[str, ResultField] = {}
        for step in self.steps.values():
            for f in step.results:
                seen.setdefault(f.name, f)
        return list(seen.values())

    def full_script(self) -> str:
        """The whole script as one text: what a prompt-only chatbot receives in its system prompt."""
        parts = [f"# {self.title}", self.description.strip()]
        for step in self.steps.values():
            if step.final:
                parts.append(f"## Step {step.name} (final)\n{step.message}")
                continue
            signals = "; ".join(f"when {s.when or s.name} -> go to step {s.to}" for s in step.signals)
            fields = ", ".join(f.name for f in step.results) or "none"
            parts.append(f"## Step {step.name}\n{step.instructions.strip()}\nCollect: {fields}. Moves: {signals}.")
        return "\n\n".join(p for p in parts if p)


def compile_table(scenario: Scenario) -> TransitionTable:
    """The scenario's transition table: one row per (step, signal -> target)."""
    rows = [Row(step.name, s.name, s.to) for step in scenario.steps.values() for s in step.signals]
    terminal = [s.name for s in scenario.steps.values() if s.final]
    return TransitionTable.build(scenario.name, list(scenario.steps), rows, scenario.initial, terminal)


# --------------------------------------------------------------------------- loading
def _fail(where: Where, message: str, hint: str) -> ScenarioError:
    return ScenarioError(f"{where}: {message}", hint)


def _require(data: Located, key: str, kind: type | tuple[type, ...], what: str) -> Any:
    if key not in data:
        raise _fail(data.where, f"{what} lacks the key '{key}'", f"add '{key}:' to {what}.")
    if kind is str:
        return value_text(data, key, f"'{key}' of {what}", ScenarioError)
    value = data[key]
    refuse_scalar(value, data.value_where[key], data.source[key], f"'{key}' of {what}", ScenarioError,
                  f"{key}: {{}}")
    if not isinstance(value, kind):
        names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise _fail(data.key_where[key], f"'{key}' must be a {names}, got {type(value).__name__}",
                    f"write '{key}' as a YAML {names}.")
    return value


def _check_keys(data: Located, allowed: set[str], what: str) -> None:
    check_keys(data, allowed, what, ScenarioError)


def _text(data: Located, key: str, what: str, default: str = "") -> str:
    """The optional text ``data[key]`` (``default`` without it); a boolean, number or null there is refused."""
    return value_text(data, key, f"'{key}' of {what}", ScenarioError) if key in data else default


def _item_texts(value: Any, what: str) -> None:
    """Refuse a boolean, number or null among the items of a list of words, at the item's place."""
    if isinstance(value, LocatedList):
        for i, item in enumerate(value):
            refuse_scalar(item, value.item_where[i], value.source[i], f"item {i + 1} of {what}", ScenarioError)


def _result(name: str, spec: Any, where: Where) -> ResultField:
    if isinstance(spec, str):
        spec_type, description, values = spec, "", ()
    elif isinstance(spec, Located):
        _check_keys(spec, {"type", "description", "values"}, f"result '{name}'")
        spec_type = _require(spec, "type", str, f"result '{name}'")
        description = _text(spec, "description", f"result '{name}'")
        raw_values = spec.get("values", [])
        _item_texts(raw_values, f"the values of result '{name}'")
        if not isinstance(raw_values, list) or not all(isinstance(v, str) for v in raw_values):
            raise _fail(spec.where, f"result '{name}': 'values' must be a list of strings", "e.g. values: [low, high].")
        values = tuple(raw_values)
        where = spec.key_where.get("type", spec.where)
    else:
        raise _fail(where, f"result '{name}' must be a type name or a mapping", "e.g. goal: {type: string}.")
    if spec_type not in (*_TYPES, "enum"):
        raise _fail(where, f"result '{name}' has unknown type '{spec_type}'",
                    f"use one of: {', '.join([*_TYPES, 'enum'])}.")
    if spec_type == "enum" and not values:
        raise _fail(where, f"result '{name}' is an enum without 'values'", "add values: [a, b, ...].")
    return ResultField(name, spec_type, description, values)


def _signal(name: str, spec: Any, where: Where, results: set[str]) -> Signal:
    if isinstance(spec, str):
        return Signal(name, spec)
    if spec is not None and not isinstance(spec, Located | list):
        refuse_scalar(spec, where, str(spec), f"the target of signal '{name}'", ScenarioError, f"{name}: {{}}")
    if not isinstance(spec, Located):
        raise _fail(where, f"signal '{name}' has no target step",
                    f"write '{name}: TARGET' or '{name}: {{to: TARGET}}'; a signal nobody handles cannot fire.")
    _check_keys(spec, {"to", "needs", "when"}, f"signal '{name}'")
    to = _require(spec, "to", str, f"signal '{name}'")
    needs = spec.get("needs", [])
    _item_texts(needs, f"the needs of signal '{name}'")
    if not isinstance(needs, list) or not all(isinstance(n, str) for n in needs):
        raise _fail(spec.where, f"signal '{name}': 'needs' must be a list of result names", "e.g. needs: [goal].")
    for need in needs:
        if need not in results:
            raise _fail(spec.key_where.get("needs", spec.where), f"signal '{name}' needs '{need}', which no step "
                        "produces", f"declare '{need}' under some step's results, or fix the name.")
    return Signal(name, to, tuple(needs), _text(spec, "when", f"signal '{name}'"))


def _ask_keywords(raw: Located, step_name: str, final: bool) -> tuple[str, ...]:
    """A step's ``ask_keywords``: how the measure tells that a reply asks for what the step still needs."""
    if "ask_keywords" not in raw:
        return ()
    where = raw.key_where["ask_keywords"]
    value = raw["ask_keywords"]
    if final:
        raise _fail(where, f"final step '{step_name}' has ask_keywords",
                    "a final step asks nothing; remove its ask_keywords.")
    _item_texts(value, f"the ask_keywords of step '{step_name}'")
    if not isinstance(value, list) or not value or not all(isinstance(k, str) and k.strip() for k in value):
        raise _fail(where, f"step '{step_name}': 'ask_keywords' must be a non-empty list of words",
                    "e.g. ask_keywords: [deadline, when, date].")
    return tuple(k.strip() for k in value)


def _by_step(data: Located, key: str, steps: dict[str, Step], what: str,
             example: str) -> Iterator[tuple[Step, Any, Where]]:
    """Each (step, value, where) of the top-level mapping ``key``, which names steps: the one walk that
    ``examples``, ``more_examples`` and ``questions`` share, so each refuses a non-mapping or an unknown step alike."""
    if key not in data:
        return
    raw = data[key]
    if not isinstance(raw, Located):
        raise _fail(data.key_where[key], f"'{key}' must be a mapping of step names to {what}",
                    f"e.g. {key}: {example}.")
    for name, spec in raw.items():
        where = raw.key_where[str(name)]
        step = steps.get(str(name))
        if step is None:
            raise _fail(where, f"'{key}' names unknown step '{name}'", f"use one of: {', '.join(steps)}.")
        yield step, spec, where


def _examples(data: Located, steps: dict[str, Step]) -> dict[str, Step]:
    """``steps`` with the top-level ``examples`` attached, each checked against its step."""
    out = dict(steps)
    for step, spec, where in _by_step(data, "examples", steps, "examples",
                                      "{goal: {user: ..., message: ..., signal: next, results: {...}}}"):
        example = _example(spec, where, step.name, step.final, step.results, step.signals)
        out[step.name] = dataclasses.replace(step, example=example)
    return out


def _more_examples(data: Located, steps: dict[str, Step], corrections: Corrections | None) -> dict[str, Step]:
    """``steps`` with the top-level ``more_examples`` attached, each checked against its step widened as the
    features widen it (every scenario variable may be in results; the correction signal may be emitted)."""
    variables = tuple({f.name: f for st in steps.values() for f in st.results}.values())
    out = dict(steps)
    for step, specs, where in _by_step(data, "more_examples", steps, "lists",
                                       "{goal: [{user: ..., message: ..., signal: next, results: {...}}]}"):
        if not isinstance(specs, list) or not specs:
            raise _fail(where, f"'more_examples' of step '{step.name}' must be a non-empty list of examples",
                        f"e.g. {step.name}: [{{user: ..., message: ..., signal: next, results: {{...}}}}].")
        signals = step.signals + ((Signal(corrections.signal, step.name),) if corrections is not None else ())
        examples = tuple(_example(spec, spec.where if isinstance(spec, Located) else where, step.name, step.final,
                                  variables, signals) for spec in specs)
        out[step.name] = dataclasses.replace(step, more_examples=examples)
    return out


def _questions(data: Located, steps: dict[str, Step]) -> dict[str, str]:
    """The top-level ``questions``: one non-empty question per named non-final step."""
    questions: dict[str, str] = {}
    for step, text, where in _by_step(data, "questions", steps, "questions",
                                      "{goal: What should the project achieve?}"):
        if step.final:
            raise _fail(where, f"final step '{step.name}' has a question", "a final step asks nothing; remove it.")
        refuse_scalar(text, data["questions"].value_where[step.name], data["questions"].source[step.name],
                      f"the question of step '{step.name}'", ScenarioError, f"{step.name}: {{}}")
        if not isinstance(text, str) or not text.strip():
            raise _fail(where, f"the question of step '{step.name}' must be a non-empty string",
                        "e.g. goal: What should the project achieve?")
        questions[step.name] = text.strip()
    return questions


def _cues(data: Located, variables: set[str], key: str = "cues", what: str = "variable",
          example: str = "deadline: [Friday, next week]") -> dict[str, tuple[str, ...]]:
    """The top-level ``cues`` (or ``move_cues``): for each named variable (signal), a non-empty list of
    non-empty words or phrases."""
    if key not in data:
        return {}
    raw = data[key]
    if not isinstance(raw, Located):
        raise _fail(data.key_where[key], f"'{key}' must be a mapping of {what} names to lists of words",
                    f"e.g. {key}: {{{example}}}.")
    cues: dict[str, tuple[str, ...]] = {}
    for name, words in raw.items():
        where = raw.key_where[str(name)]
        if str(name) not in variables:
            raise _fail(where, f"'{key}' names unknown {what} '{name}'",
                        f"use one of: {', '.join(sorted(variables))}.")
        cues[str(name)] = _words(words, where, f"the {key} of '{name}'")
    return cues


def _words(words: Any, where: Where, what: str) -> tuple[str, ...]:
    """A declared non-empty list of non-empty words or phrases, stripped."""
    _item_texts(words, what)
    if not isinstance(words, list) or not words or not all(isinstance(w, str) and w.strip() for w in words):
        raise _fail(where, f"{what} must be a non-empty list of words or phrases", "e.g. [for me, will use it].")
    return tuple(w.strip() for w in words)


def _example(spec: Any, where: Where, step_name: str, final: bool, results: tuple[ResultField, ...],
             signals: tuple[Signal, ...]) -> Example:
    """One step's example: checked against the step's signals, results schema and needs."""
    if final:
        raise _fail(where, f"final step '{step_name}' has an example", "a final step answers nothing; remove it.")
    if not isinstance(spec, Located):
        raise _fail(where, f"the example of step '{step_name}' must be a mapping",
                    "e.g. example: {user: ..., message: ..., signal: next, results: {...}}.")
    what = f"the example of step '{step_name}'"
    _check_keys(spec, {"user", "message", "signal", "results", "summary"}, what)
    user = _require(spec, "user", str, what)
    message = _require(spec, "message", str, what)
    signal_name = _require(spec, "signal", str, what)
    summary = _text(spec, "summary", what)
    signal = next((s for s in signals if s.name == signal_name), None)
    if signal is None:
        raise _fail(spec.key_where["signal"], f"{what} emits '{signal_name}', not a signal of the step",
                    f"use one of: {', '.join(s.name for s in signals)}.")
    given = spec.get("results", {})
    if given is None:
        given = {}
    if not isinstance(given, dict):
        raise _fail(spec.key_where.get("results", spec.where), f"{what}: 'results' must be a mapping",
                    "e.g. results: {goal: remind my family to water the plants}.")
    from pydantic import ValidationError

    model = Step(step_name, results=results, signals=signals).results_model()
    try:
        checked = model.model_validate(dict(given)).model_dump()
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(p) for p in first["loc"]) or "results"
        raise _fail(spec.key_where.get("results", spec.where), f"{what}: results.{loc}: {first['msg']}",
                    "give values of the step's own result fields, of their declared types.") from None
    kept = {k: v for k, v in checked.items() if v not in (None, "", [])}
    missing = [n for n in signal.needs if n not in kept]
    if missing:
        raise _fail(spec.key_where["signal"], f"{what} emits '{signal_name}' without {', '.join(missing)}",
                    "an example must keep the contract: give the needed results.")
    return Example(user, message, signal_name, kept, summary)


def _corrections(data: Located, variables: set[str]) -> Corrections | None:
    if "corrections" not in data:
        return None
    spec = data["corrections"]
    where = data.key_where["corrections"]
    if not isinstance(spec, Located):
        raise _fail(where, "'corrections' must be a mapping", "e.g. corrections: {signal: correct, when: ...}.")
    _check_keys(spec, {"signal", "when", "fields", "cues"}, "'corrections'")
    signal = _text(spec, "signal", "'corrections'", "correct")
    when = _text(spec, "when", "'corrections'", Corrections.when)
    if not isinstance(signal, str) or not signal.strip() or not isinstance(when, str):
        raise _fail(spec.where, "'corrections': 'signal' and 'when' must be strings", "e.g. signal: correct.")
    fields = spec.get("fields", [])
    _item_texts(fields, "'corrections': 'fields'")
    if not isinstance(fields, list) or not all(isinstance(f, str) for f in fields):
        raise _fail(spec.key_where.get("fields", spec.where), "'corrections': 'fields' must be a list of variables",
                    "e.g. fields: [goal, users].")
    unknown = [f for f in fields if f not in variables]
    if unknown:
        raise _fail(spec.key_where["fields"], f"'corrections' names unknown variable(s) {unknown}",
                    f"use some of: {', '.join(sorted(variables))}.")
    cues = _words(spec["cues"], spec.key_where["cues"], "'corrections': 'cues'") if "cues" in spec else ()
    return Corrections(signal.strip(), when, tuple(fields), cues)


def load_scenario(path: str | Path) -> Scenario:
    """Read, check and compile a scenario file; every problem is a :class:`ScenarioError`."""
    p = Path(path)
    text = read_input(p, "scenario", ScenarioError)
    return parse_scenario(text, str(p), base=p.parent)


def parse_scenario(text: str, file: str = "<scenario>", base: Path | None = None) -> Scenario:
    """Parse scenario text (``base`` resolves instruction files; None requires inline instructions)."""
    data = parse_yaml(text, file, "scenario", ScenarioError)
    if not isinstance(data, Located):
        raise ScenarioError(f"{Where(file, 1, 1)}: a scenario is a YAML mapping with name, initial and steps",
                            "see the format in labkit/dialog/scenario.py.")
    _check_keys(data, {"name", "title", "initial", "steps", "description", "corrections", "cancel_question",
                       "examples", "more_examples", "questions", "cues", "move_cues", "request_openers"},
                 "the scenario")
    name = _require(data, "name", str, "the scenario")
    initial = _require(data, "initial", str, "the scenario")
    raw_steps = _require(data, "steps", Located, "the scenario")
    all_results: set[str] = set()
    for raw in raw_steps.values():
        if isinstance(raw, Located) and isinstance(raw.get("results"), Located):
            all_results |= set(raw["results"])
    steps: dict[str, Step] = {}
    for step_name, raw in raw_steps.items():
        where = raw_steps.key_where[str(step_name)]
        if not isinstance(raw, Located):
            raise _fail(where, f"step '{step_name}' must be a mapping", "give it instructions/signals, or final: true.")
        _check_keys(raw, {"instructions", "results", "signals", "final", "message", "ask_keywords"},
                    f"step '{step_name}'")
        final = raw.get("final", False)
        if not isinstance(final, bool):
            raise _fail(raw.value_where["final"], f"step '{step_name}': 'final' must be true or false, got "
                        f"{final!r}", "write final: true on the last step, or leave it out.")
        instructions, instructions_file = "", ""
        if "instructions" in raw:
            ref = _require(raw, "instructions", str, f"step '{step_name}'")
            if ref.endswith(".md") and base is not None:
                md = base / ref
                if not md.is_file():
                    raise _fail(raw.key_where["instructions"], f"step '{step_name}': no instructions file {md}",
                                "create the Markdown file, or fix the path (relative to the scenario file).")
                instructions, instructions_file = read_input(md, "instructions file", ScenarioError), ref
            else:
                instructions = ref
        elif not final:
            raise _fail(raw.where, f"step '{step_name}' has no instructions", "add instructions: steps/NAME.md.")
        raw_results = raw.get("results", Located.empty(raw.where))
        if not isinstance(raw_results, dict):
            raise _fail(raw.key_where.get("results", raw.where), f"step '{step_name}': results must be a mapping",
                        "e.g. results: {goal: {type: string}}.")
        results = tuple(_result(str(k), v, raw_results.key_where[str(k)]) for k, v in raw_results.items())
        raw_signals = raw.get("signals", Located.empty(raw.where))
        if not isinstance(raw_signals, dict):
            raise _fail(raw.key_where.get("signals", raw.where), f"step '{step_name}': signals must be a mapping",
                        "e.g. signals: {next: {to: users}}.")
        signals = tuple(_signal(str(k), v, raw_signals.key_where[str(k)], all_results)
                        for k, v in raw_signals.items())
        if final and signals:
            raise _fail(raw.key_where["signals"], f"final step '{step_name}' has signals",
                        "a final step ends the dialog; remove its signals or 'final: true'.")
        for sig in signals:
            if sig.to not in raw_steps:
                raise _fail(raw_signals.key_where[sig.name], f"signal '{sig.name}' of step '{step_name}' leads to "
                            f"unknown step '{sig.to}'", f"use one of: {', '.join(map(str, raw_steps))}.")
        keywords = _ask_keywords(raw, str(step_name), final)
        steps[str(step_name)] = Step(str(step_name), instructions, instructions_file, results, signals, final,
                                     _text(raw, "message", f"step '{step_name}'"), keywords)
    if initial not in steps:
        raise _fail(data.key_where["initial"], f"initial step '{initial}' is not a step",
                    f"use one of: {', '.join(steps)}.")
    steps = _examples(data, steps)
    corrections = _corrections(data, all_results)
    if corrections is not None:
        taken = sorted(n for n, st in steps.items() if st.signal(corrections.signal) is not None)
        if taken:
            raise _fail(data["corrections"].key_where.get("signal", data["corrections"].where),
                        f"the correction signal '{corrections.signal}' is already a signal of step(s) {taken}",
                        "name the correction signal differently, e.g. signal: correct.")
    steps = _more_examples(data, steps, corrections)
    cancel_question = data.get("cancel_question", "")
    if "cancel_question" in data:
        refuse_scalar(cancel_question, data.value_where["cancel_question"], data.source["cancel_question"],
                      "'cancel_question'", ScenarioError, "cancel_question: {}")
    if not isinstance(cancel_question, str):
        raise _fail(data.key_where["cancel_question"], "'cancel_question' must be a string",
                    "e.g. cancel_question: Do you want me to close the request?")
    questions = _questions(data, steps)
    cues = _cues(data, all_results)
    move_cues = _cues(data, {sig.name for st in steps.values() for sig in st.signals}, "move_cues", "signal",
                      "back: [go back, change]")
    openers = (_words(data["request_openers"], data.key_where["request_openers"], "'request_openers'")
               if "request_openers" in data else ())
    try:
        return Scenario(name, _text(data, "title", "the scenario", name), initial, steps, file,
                        _text(data, "description", "the scenario"),
                        corrections, cancel_question, questions, cues, move_cues, openers)
    except TableError as exc:
        raise ScenarioError(f"{data.key_where['steps']}: the scenario's steps do not form a valid machine:\n"
                            + "\n".join(f"  - {p}" for p in exc.problems),
                            "fix the steps or signals named above (targets must be steps; every step reachable; "
                            "every non-final step needs a signal).") from None
