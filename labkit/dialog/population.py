"""Generated users: many scripted users per scenario, composed from persona traits.

A scenario's ``population.yaml`` declares what users say: values for each variable and phrasings for
each kind of message, in a ``dev`` pool and a ``test`` pool that share no entry (:func:`load_population`
refuses a shared one). :func:`generate_users` composes each user from a style (terse or verbose), one
event trait (several values in one message, a correction early or late, a move back, off-topic turns, a
refusal, a cancel confirmed or taken back, everything in the first message) and, sometimes, typos or a
second language around the values. Every message carries its :class:`Intent` (what it gives, corrects or
asks for), so :class:`IdealBackend` can follow the script exactly; :func:`checked_users` keeps only users
whose ideal conversation adheres on the measure (:mod:`labkit.dialog.measure`).
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from labkit.core.yaml_input import parse_yaml, read_input
from labkit.dialog.scenario import Scenario, ScenarioError, Step, unknown
from labkit.dialog.users import SPLITS, ExpectedValue, UserScript
from labkit.llm.backend import Backend, Completion, Request

STYLES = ("terse", "verbose")
EVENTS = ("plain", "several_values", "everything_first", "correction_early", "correction_late", "go_back",
          "offtopic_opener", "offtopic_middle", "refusal", "cancel_confirmed", "cancel_taken_back")
MODIFIERS = ("typos", "mixed_language")
TRAITS = (*STYLES, *EVENTS, *MODIFIERS)
"""Every trait a generated user can have: one style, one event, any modifiers."""
KINDS = ("terse", "verbose", "mixed", "join", "offtopic", "correction", "back", "refuse", "cancel",
         "cancel_confirm", "cancel_take_back", "confirm")
"""The message kinds a population declares phrasings for (each with ``{value}``, ``{name}`` or ``{old}``)."""
CONTRACT = frozenset({"vars_memory", "corrections", "cancel_confirm"})
"""The machine features that make a scenario's script followable by the ideal bot: values given early are
kept, an earlier value can be corrected, a cancel is confirmed first."""


@dataclass(frozen=True)
class Value:
    """One value a user can give: the words said, the value recorded, the phrasings the measure accepts."""

    say: str
    record: str | list[str]
    accept: tuple[tuple[str, ...], ...]

    @property
    def is_list(self) -> bool:
        return isinstance(self.record, list)


@dataclass(frozen=True)
class Pool:
    """One split's values (per variable) and phrasings (per message kind)."""

    values: dict[str, tuple[Value, ...]]
    phrasings: dict[str, tuple[str, ...]]


@dataclass(frozen=True)
class Population:
    """A scenario's declared pools and the names users call its variables by."""

    scenario: str
    names: dict[str, str]
    pools: dict[str, Pool]


@dataclass(frozen=True)
class Intent:
    """What one message means, as the ideal bot reads it: values given, values corrected, and an act
    (``""``, ``offtopic``, ``back``, ``refuse``, ``cancel``, ``confirm``)."""

    gives: dict[str, Any] = field(default_factory=dict)
    corrects: dict[str, Any] = field(default_factory=dict)
    act: str = ""


@dataclass(frozen=True)
class GeneratedUser:
    """A user script with its traits and the intent of each of its messages."""

    script: UserScript
    traits: tuple[str, ...]
    intents: tuple[Intent, ...]


def _without_article(text: str) -> str:
    return re.sub(r"^(a|an|the|my|our)\s+", "", text, flags=re.I)


def _value(raw: Any, where: str) -> Value:
    """A value entry: text (a string value), a list of texts (a list value), or ``{say, value}`` (an enum)."""
    if isinstance(raw, str):
        return Value(raw, raw, ((raw, _without_article(raw)),))
    if isinstance(raw, list) and raw and all(isinstance(i, str) for i in raw):
        items = [str(i) for i in raw]
        say = items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]
        return Value(say, items, tuple((i, _without_article(i)) for i in items))
    if isinstance(raw, Mapping) and set(raw) == {"say", "value"}:
        return Value(str(raw["say"]), str(raw["value"]), ((str(raw["value"]),),))
    raise ScenarioError(f"{where}: YAML read {raw!r} ({type(raw).__name__}); a value is a text, a list of texts, "
                        "or {say: ..., value: ...}",
                        "quote a value YAML reads as a number, a date or a boolean (\"11:45\"); e.g. - a website "
                        "for my band, - [ticket sales, a calendar], - {say: in the app, value: app}.")


def parse_population(text: str, file: str, scenario: Scenario) -> Population:
    """Read a ``population.yaml``; unknown variables and kinds, a missing split and an entry shared by the
    dev and the test pool are errors that name the file."""
    data = parse_yaml(text, file, "population", ScenarioError)
    if not isinstance(data, Mapping) or set(data) - {"names", "values", "phrasings"}:
        raise ScenarioError(f"{file}: a population is a mapping of names, values and phrasings",
                            "see data/dialog/booking/population.yaml.")
    variables = {f.name for f in scenario.variables}
    names = {str(k): str(v) for k, v in (data.get("names") or {}).items()}
    missing = sorted(variables - set(names))
    if missing:
        raise ScenarioError(f"{file}: 'names' lacks {', '.join(missing)}", "name every variable as a user says it.")
    pools: dict[str, Pool] = {}
    for split in SPLITS:
        values: dict[str, tuple[Value, ...]] = {}
        for var, by_split in (data.get("values") or {}).items():
            if var not in variables:
                raise ScenarioError(f"{file}: values for {var!r}, which is no variable of {scenario.name}",
                                    f"use one of: {', '.join(sorted(variables))}.")
            entries = (by_split or {}).get(split) or []
            if len(entries) < 2:
                raise ScenarioError(f"{file}: values.{var}.{split} needs at least two entries",
                                    "a correction replaces a value by another of the same pool.")
            values[str(var)] = tuple(_value(e, f"{file}: values.{var}.{split}") for e in entries)
        phrasings: dict[str, tuple[str, ...]] = {}
        for kind in KINDS:
            texts = ((data.get("phrasings") or {}).get(kind) or {}).get(split) or []
            if not texts:
                raise ScenarioError(f"{file}: phrasings.{kind}.{split} is missing",
                                    f"give each of {', '.join(KINDS)} a dev and a test list.")
            phrasings[kind] = tuple(str(t) for t in texts)
        unknown_kinds = sorted(set(data.get("phrasings") or {}) - set(KINDS))
        if unknown_kinds:
            raise ScenarioError(f"{file}: unknown phrasing kinds {', '.join(unknown_kinds)}",
                                f"use {', '.join(KINDS)}.")
        lacking = sorted(variables - set(values))
        if lacking:
            raise ScenarioError(f"{file}: no values for {', '.join(lacking)}", "give every variable a pool.")
        pools[split] = Pool(values, phrasings)
    for var in variables:
        shared = {v.say for v in pools["dev"].values[var]} & {v.say for v in pools["test"].values[var]}
        if shared:
            raise ScenarioError(f"{file}: values.{var} has {sorted(shared)[0]!r} in both dev and test",
                                "dev and test pools share no entry: move or rewrite it.")
    for kind in KINDS:
        shared = set(pools["dev"].phrasings[kind]) & set(pools["test"].phrasings[kind])
        if shared:
            raise ScenarioError(f"{file}: phrasings.{kind} has {sorted(shared)[0]!r} in both dev and test",
                                "dev and test pools share no entry: move or rewrite it.")
    return Population(scenario.name, names, pools)


def load_population(scenario: Scenario) -> Population:
    """The ``population.yaml`` beside the scenario's ``scenario.yaml``."""
    path = Path(scenario.path).parent / "population.yaml"
    return parse_population(read_input(path, "population", ScenarioError), str(path), scenario)


# --------------------------------------------------------------------------- composing users
def main_path(scenario: Scenario) -> list[Step]:
    """The steps a conversation that goes well passes, from the initial step to its final one."""
    path, step = [], scenario.step(scenario.initial)
    while not step.final:
        path.append(step)
        forward = step.signal("next") or step.signal("confirm")
        if forward is None:
            raise ScenarioError(f"{scenario.path}: step {step.name!r} has no next or confirm",
                                "a generated user follows next (or confirm) to a final step.")
        step = scenario.step(forward.to)
    return [*path, step]


def applicable(scenario: Scenario) -> tuple[str, ...]:
    """The event traits the scenario's script allows (a cancel needs a step with ``cancel``)."""
    steps = main_path(scenario)[:-1]
    cancels = any(s.signal("cancel") for s in steps)
    backs = any(s.signal("back") and scenario.step(s.signal("back").to).results for s in steps)
    return tuple(e for e in EVENTS if (cancels or not e.startswith("cancel")) and (backs or e != "go_back"))


class _Writer:
    """Renders one user's messages from a pool with the user's style and modifiers."""

    def __init__(self, pool: Pool, names: Mapping[str, str], rng: random.Random, style: str,
                 modifiers: Sequence[str]) -> None:
        self.pool, self.names, self.rng, self.style, self.modifiers = pool, names, rng, style, modifiers

    def phrase(self, kind: str, **slots: str) -> str:
        if kind in ("terse", "verbose") and "mixed_language" in self.modifiers and self.rng.random() < 0.6:
            kind = "mixed"
        template = self.rng.choice(self.pool.phrasings[kind])
        text = template.format(**slots) if slots else template
        if "typos" in self.modifiers:
            text = _typo(text, self.rng, keep=list(slots.values()))
        return text

    def answer(self, values: Sequence[Value]) -> str:
        parts = [v.say for v in values]
        said = parts[0]
        for more in parts[1:]:
            said = self.rng.choice(self.pool.phrasings["join"]).format(a=said, b=more)
        return self.phrase(self.style, value=said)


def _typo(text: str, rng: random.Random, keep: Sequence[str]) -> str:
    """``text`` with two neighbouring letters swapped in one word of four or more letters that no kept
    value contains (the values stay as said, so the measure's accepted phrasings still hold)."""
    guarded = " ".join(keep).casefold()
    words = [m for m in re.finditer(r"[A-Za-z]{4,}", text) if m.group().casefold() not in guarded]
    if not words:
        return text
    m = rng.choice(words)
    i = rng.randrange(len(m.group()) - 1)
    w = m.group()
    return text[:m.start()] + w[:i] + w[i + 1] + w[i] + w[i + 2:] + text[m.end():]


def _compose(scenario: Scenario, population: Population, split: str, event: str, rng: random.Random,
             writer: _Writer) -> tuple[list[tuple[str, Intent]], dict[str, Value], str]:
    """The messages (with intents) of one user, the values it ends with, and the step it ends in."""
    pool = population.pools[split]
    path = main_path(scenario)
    data_steps = [s for s in path if s.results]
    final = path[-1].name
    chosen = {f.name: rng.choice(pool.values[f.name]) for f in scenario.variables}
    msgs: list[tuple[str, Intent]] = []
    ends: dict[str, Value] = {}

    def other(var: str) -> Value:
        """Another value of the pool, one a bot records differently (a correction must change something)."""
        return rng.choice([v for v in pool.values[var] if v.record != chosen[var].record])

    def give(steps: Sequence[Step]) -> None:
        values = [chosen[f.name] for s in steps for f in s.results]
        msgs.append((writer.answer(values), Intent(gives={f.name: chosen[f.name].record
                                                          for s in steps for f in s.results})))
        ends.update({f.name: chosen[f.name] for s in steps for f in s.results})

    def offtopic() -> None:
        msgs.append((writer.phrase("offtopic"), Intent(act="offtopic")))

    if event == "offtopic_opener":
        offtopic()
    if event == "everything_first":
        give(data_steps)
    else:
        pair = rng.randrange(len(data_steps) - 1) if event == "several_values" else -1
        middle = rng.randrange(1, len(data_steps)) if event == "offtopic_middle" else -1
        refusing = next((s for s in data_steps if s.signal("refuse")), None) or rng.choice(data_steps)
        early = rng.randrange(len(data_steps) - 1) if event == "correction_early" else -1
        back_at = rng.choice([i for i, s in enumerate(data_steps) if i > 0 and s.signal("back")
                              and scenario.step(s.signal("back").to).results] or [-1]) if event == "go_back" else -1
        cancel_at = rng.choice([i for i, s in enumerate(data_steps) if s.signal("cancel")] or [-1]) \
            if event.startswith("cancel") else -1
        skip = False
        for i, step in enumerate(data_steps):
            if skip:
                skip = False
                continue
            if i == middle:
                offtopic()
            if i == cancel_at:
                msgs.append((writer.phrase("cancel"), Intent(act="cancel")))
                if event == "cancel_confirmed":
                    msgs.append((writer.phrase("cancel_confirm"), Intent(act="cancel")))
                    return msgs, ends, "cancelled" if "cancelled" in scenario.steps else final
                var = step.results[0].name
                msgs.append((writer.phrase("cancel_take_back", value=chosen[var].say),
                             Intent(gives={var: chosen[var].record})))
                ends[var] = chosen[var]
                continue
            if i == back_at:
                previous = scenario.step(step.signal("back").to)
                var = previous.results[0].name
                msgs.append((writer.phrase("back", name=population.names[var]), Intent(act="back")))
                chosen[var] = other(var)
                give([previous])
            if event == "refusal" and step is refusing:
                msgs.append((writer.phrase("refuse", name=population.names[step.results[0].name]),
                             Intent(act="refuse")))
                if step.signal("refuse"):
                    continue  # the script moves on without the value
            if i == pair:
                give([step, data_steps[i + 1]])
                skip = True
                continue
            if i == early:
                var = step.results[0].name
                first, chosen[var] = chosen[var], other(var)
                msgs.append((writer.answer([first]), Intent(gives={var: first.record})))
                msgs.append((writer.phrase("correction", name=population.names[var], value=chosen[var].say,
                                           old=first.say), Intent(corrects={var: chosen[var].record})))
                ends[var] = chosen[var]
                continue
            give([step])
    if event == "correction_late":
        var = rng.choice(sorted(ends))
        old, chosen[var] = chosen[var], other(var)
        msgs.append((writer.phrase("correction", name=population.names[var], value=chosen[var].say, old=old.say),
                     Intent(corrects={var: chosen[var].record})))
        ends[var] = chosen[var]
    msgs.append((writer.phrase("confirm"), Intent(act="confirm")))
    return msgs, ends, final


def generate_users(scenario: Scenario, population: Population, split: str, n: int,
                   seed: int = 2026) -> list[GeneratedUser]:
    """``n`` users of ``split`` for ``scenario``, the event traits spread evenly, from ``seed`` alone."""
    if split not in SPLITS:
        raise ScenarioError(f"split {split!r}", f"use one of: {', '.join(SPLITS)}.")
    events = applicable(scenario)
    out = []
    for i in range(n):
        rng = random.Random(f"{seed}:{scenario.name}:{split}:{i}")
        style, event = STYLES[i % 2], events[(i // 2) % len(events)]
        modifiers = tuple(m for m in MODIFIERS if rng.random() < 0.3)
        writer = _Writer(population.pools[split], population.names, rng, style, modifiers)
        msgs, ends, end = _compose(scenario, population, split, event, rng, writer)
        name = f"{scenario.name}-{split}-{i:03d}"
        expect = {var: ExpectedValue(v.accept, v.is_list) for var, v in ends.items()}
        traits = (style, event, *modifiers)
        script = UserScript(name=name, scenario=scenario.name, turns=tuple(t for t, _ in msgs), expect_step=end,
                            persona=", ".join(traits), split=split, expect_values=expect)
        out.append(GeneratedUser(script, traits, tuple(intent for _, intent in msgs)))
    return out


# --------------------------------------------------------------------------- the ideal bot
class IdealBackend(Backend):
    """Answers each message as its intent says, under the scenario's contract: the bot that follows the
    script exactly. ``where`` gives the machine's current step and whether a cancel awaits its answer."""

    kind = "ideal"

    def __init__(self, scenario: Scenario, user: GeneratedUser, where: Callable[[], tuple[str, dict, int]]) -> None:
        self.scenario, self.user, self.where = scenario, user, where

    def describe(self) -> dict[str, Any]:
        return {"backend": self.kind, "model": "ideal", "model_sha256": None, "sampling": self.sampling()}

    def _complete(self, request: Request) -> Completion:
        import json

        here, known, messages = self.where()
        intent = self.user.intents[messages - 1]
        step = self.scenario.step(here)
        signal, results = self._decide(step, intent, known)
        landing = self._landing(step, signal, {**known, **results})
        text = json.dumps({"message": self._say(landing), "signal": signal, "results": results, "summary": ""})
        return Completion(text=text, prompt_tokens=0, completion_tokens=0, seconds=0.0, grammar_used=False,
                          finish_reason="stop")

    def _decide(self, step: Step, intent: Intent, known: dict) -> tuple[str, dict]:
        corrections = self.scenario.corrections
        if intent.act == "cancel" and step.signal("cancel"):
            return "cancel", {}
        if intent.act == "back" and step.signal("back"):
            return "back", {}
        if intent.act == "refuse" and step.signal("refuse"):
            return "refuse", {}
        if intent.act == "confirm" and step.signal("confirm"):
            return "confirm", {}
        if intent.corrects and corrections is not None:
            own = {f.name for f in step.results}
            if not set(intent.corrects) & own:
                return corrections.signal, dict(intent.corrects)
        results = {**intent.gives, **intent.corrects}
        forward = step.signal("next")
        merged = {**known, **results}
        if forward is not None and results and not any(unknown(merged.get(n)) for n in forward.needs):
            return "next", results
        return "stay", results

    def _landing(self, step: Step, signal: str, known: dict) -> Step:
        corrections = self.scenario.corrections
        if signal in ("stay",) or (corrections is not None and signal == corrections.signal):
            return step
        target = self.scenario.step(step.signal(signal).to)
        while signal != "back" and not target.final and not target.stops_moving_on(known):
            target = self.scenario.step(target.signal("next").to)
        return target

    def _say(self, step: Step) -> str:
        if step.final:
            return "Thank you."
        question = self.scenario.questions.get(step.name) or f"What is the {step.ask_keywords[0]}?"
        return f"Thanks. {question.replace('{known}', 'what you told me')}"


def ideal_run(scenario: Scenario, user: GeneratedUser) -> Any:
    """The ideal bot's conversation with ``user`` under :data:`CONTRACT`, scored on the measure."""
    from labkit.dialog.engine import DialogBot, current_step
    from labkit.dialog.measure import score
    from labkit.dialog.simulate import run_user

    holder: dict[str, DialogBot] = {}

    def where() -> tuple[str, dict, int]:
        bot = holder["bot"]
        return current_step(bot), dict(bot.state.variables), bot.state.user_messages

    bot = DialogBot(scenario, IdealBackend(scenario, user, where), features=CONTRACT, arm="ideal",
                    clock=lambda: 0.0)
    holder["bot"] = bot
    run_user(bot, user.script, "ideal")
    return score(bot.events, scenario, user.script, "ideal")


def checked_users(scenario: Scenario, users: Sequence[GeneratedUser]) -> list[GeneratedUser]:
    """The users whose ideal conversation adheres; a user it cannot follow is a generator bug, so any
    other is refused with the first such user's misses."""
    for user in users:
        result = ideal_run(scenario, user)
        if not result.adhered:
            raise ScenarioError(f"generated user {user.script.name} ({', '.join(user.traits)}): the ideal bot "
                                f"does not adhere: {'; '.join(result.misses)}",
                                f"turns: {list(user.script.turns)}")
    return list(users)


# --------------------------------------------------------------------------- files
def user_yaml(user: GeneratedUser) -> str:
    """The user as a user-script file (:mod:`labkit.dialog.users`), its traits as the persona."""
    import yaml

    script = user.script
    values = {name: [list(item) for item in v.items] if v.is_list else list(v.items[0])
              for name, v in (script.expect_values or {}).items()}
    data = {"scenario": script.scenario, "persona": script.persona, "split": script.split,
            "turns": list(script.turns), "expect": {"step": script.expect_step, "values": values}}
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=120)


def write_users(scenarios: Mapping[str, Scenario], folder: Path, counts: Mapping[str, int],
                seed: int = 2026) -> list[GeneratedUser]:
    """Generate, check and write every scenario's users of each split (``counts``: split -> number) into
    ``folder``, one file per user, as the dialog comparison reads them (``--tasks FOLDER``)."""
    from labkit.core.store import write_atomic

    folder.mkdir(parents=True, exist_ok=True)
    out: list[GeneratedUser] = []
    for scenario in scenarios.values():
        population = load_population(scenario)
        for split, n in counts.items():
            users = checked_users(scenario, generate_users(scenario, population, split, n, seed))
            for user in users:
                write_atomic(folder / f"{user.script.name}.yaml", user_yaml(user))
            out += users
    return out


def traits_of(user: UserScript) -> tuple[str, ...]:
    """A generated user's traits, read back from its file's persona ("verbose, go_back, typos"); a written
    user's persona that names anything but traits gives ()."""
    named = tuple(t.strip() for t in user.persona.split(","))
    return named if named and all(t in TRAITS for t in named) else ()
