"""The adherence measure a do-nothing bot cannot pass: five parts per conversation, each reported.

A conversation adheres only if all hold: ``end_step`` (it stands in the step the user script expects);
``values`` (each expected variable's normalised value, casefold with whitespace collapsed and trailing
punctuation stripped, equals a declared phrasing; a list item by item, none missing or extra); ``no_invented``
(no variable set that the user file's ``values`` do not list); ``moves`` (every move, from ``Transitioned`` or
the prompt-only bot's claimed steps, is one the script allows from where it stood, its ``needs`` known then);
``asks`` (after every turn leaving a step that still needs something, the reply holds one of the step's
``ask_keywords``, whole words, case-insensitive). Also: a *false completion* (a final step the user did not
reach) and a *cancel* (a ``cancel`` signal's target). All is read from the event log, so no model is needed.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from labkit.compare.stats import PairedTest, paired_test, wilson_interval
from labkit.core.events import Event, RunStarted, Transitioned
from labkit.dialog.events import BotSaid, UserSaid, VariableChanged
from labkit.dialog.scenario import Scenario, ScenarioError, Step, unknown
from labkit.dialog.users import ExpectedValue, UserScript

PARTS = ("end_step", "values", "no_invented", "moves", "asks")
_TRAILING = ".,;:!?\"'”’)]( "


# --------------------------------------------------------------------------- value matching
def normalise(text: Any) -> str:
    """The form two values are compared in: casefolded, whitespace collapsed, trailing punctuation gone.

    Why not a substring: "me" is contained in "my team", and "June" in "not June but July".
    """
    folded = unicodedata.normalize("NFKC", str(text)).casefold()
    return " ".join(folded.split()).strip(_TRAILING).strip()


def value_misses(expected: ExpectedValue, value: Any) -> str:
    """Why ``value`` is not the expected one ('' when it is right)."""
    if unknown(value):
        return "not set"
    if not expected.is_list:
        if isinstance(value, list):
            return f"{value!r} is a list, expected one value"
        accepted = {normalise(p) for p in expected.items[0]}
        return "" if normalise(value) in accepted else f"{value!r} is none of {list(expected.items[0])}"
    given = [normalise(v) for v in (value if isinstance(value, list) else [value])]
    unmatched = list(range(len(expected.items)))
    extra: list[str] = []
    for item in given:
        hit = next((i for i in unmatched if item in {normalise(p) for p in expected.items[i]}), None)
        if hit is None:
            extra.append(item)
        else:
            unmatched.remove(hit)
    parts = []
    if unmatched:
        parts.append("lacks " + "; ".join(expected.items[i][0] for i in unmatched))
    if extra:
        parts.append("has unexpected " + "; ".join(repr(e) for e in extra))
    return ", ".join(parts)


def asks_for(text: str, keywords: Iterable[str]) -> bool:
    """Whether ``text`` contains one of ``keywords`` as a whole word or phrase (case-insensitive)."""
    folded = normalise(text)
    return any(re.search(rf"(?<!\w){re.escape(normalise(k))}(?!\w)", folded) for k in keywords)


# --------------------------------------------------------------------------- reading a conversation
@dataclass(frozen=True)
class Turn:
    """One user message and what followed: the bot's replies, where the dialog stood, what it knew."""

    turn: int
    step_before: str
    step_after: str
    replies: tuple[str, ...]
    variables: dict[str, Any]


@dataclass(frozen=True)
class Trace:
    """A conversation read from its events, the same way for both arms."""

    mode: str
    turns: tuple[Turn, ...]
    end_step: str
    variables: dict[str, Any]
    forbidden_moves: tuple[str, ...]


def _move_problem(scenario: Scenario, source: str, dest: str, signal: str | None, known: dict[str, Any]) -> str:
    """Why moving ``source -> dest`` is not allowed by the script ('' when it is)."""
    step = scenario.steps.get(source)
    if step is None or step.final:
        return f"{source} -> {dest}: no move leaves {source!r}"
    candidates = [s for s in step.signals if s.to == dest and (signal is None or s.name == signal)]
    if not candidates:
        return f"{source} -> {dest}: not a move of the script"
    for sig in candidates:
        missing = [n for n in sig.needs if unknown(known.get(n))]
        if not missing:
            return ""
    return f"{source} -> {dest} ({candidates[0].name}) while {', '.join(missing)} unknown"


def trace(events: Sequence[Event], scenario: Scenario) -> Trace:
    """Read a conversation (machine or prompt-only, told apart by the run's ``mode``) from its events."""
    start = next((e for e in events if isinstance(e, RunStarted)), None)
    mode = str(start.params.get("mode", "machine")) if start is not None else "machine"
    step = scenario.initial
    variables: dict[str, Any] = {}
    turns: list[Turn] = []
    forbidden: list[str] = []
    current: dict[str, Any] | None = None

    def close() -> None:
        if current is not None:
            turns.append(Turn(current["turn"], current["before"], step, tuple(current["replies"]),
                              dict(variables)))

    for event in events:
        if isinstance(event, UserSaid):
            close()
            current = {"turn": event.turn, "before": step, "replies": []}
        elif isinstance(event, VariableChanged):
            variables[event.name] = event.new
        elif isinstance(event, BotSaid):
            if current is not None and not scenario.steps.get(event.step, Step(event.step)).final:
                current["replies"].append(event.text)
            if mode == "prompt_only" and event.signal and event.signal != step:
                problem = _move_problem(scenario, step, event.signal, None, variables)
                if problem or event.signal not in scenario.steps:
                    forbidden.append(f"turn {event.turn}: {problem or step + ' -> ' + event.signal}")
                if event.signal in scenario.steps:
                    step = event.signal
        elif isinstance(event, Transitioned) and mode != "prompt_only":
            problem = _move_problem(scenario, event.source, event.dest, event.trigger, variables)
            if problem:
                forbidden.append(f"turn {event.payload.get('turn', '?')}: {problem}")
            step = event.dest
    close()
    return Trace(mode, tuple(turns), step, dict(variables), tuple(forbidden))


# --------------------------------------------------------------------------- scoring
@dataclass(frozen=True)
class Score:
    """One conversation on the measure: each part, and why a part failed."""

    user: str
    scenario: str
    arm: str
    split: str | None
    expect_step: str | None
    end_step: str
    parts: dict[str, bool]
    values: dict[str, str] = field(default_factory=dict)  # variable -> '' (right) or why it is wrong
    invented: tuple[str, ...] = ()
    forbidden_moves: tuple[str, ...] = ()
    unasked: tuple[str, ...] = ()
    false_completion: bool = False
    cancelled: bool = False

    @property
    def adhered(self) -> bool:
        return all(self.parts.values())

    @property
    def misses(self) -> list[str]:
        """Every reason the conversation did not adhere, one line each."""
        out = [] if self.parts["end_step"] else [f"ended in step '{self.end_step}', expected '{self.expect_step}'"]
        out += [f"{name}: {why}" for name, why in self.values.items() if why]
        out += [f"invented {name}" for name in self.invented]
        out += [f"forbidden move {m}" for m in self.forbidden_moves]
        out += [f"did not ask: {u}" for u in self.unasked]
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"user": self.user, "scenario": self.scenario, "arm": self.arm, "split": self.split,
                "expect_step": self.expect_step, "end_step": self.end_step, "parts": dict(self.parts),
                "adhered": self.adhered, "false_completion": self.false_completion, "cancelled": self.cancelled,
                "misses": self.misses}


def cancel_steps(scenario: Scenario) -> set[str]:
    """The steps a ``cancel`` signal leads to."""
    return {s.to for step in scenario.steps.values() for s in step.signals if s.name == "cancel"}


def score(events: Sequence[Event], scenario: Scenario, user: UserScript, arm: str) -> Score:
    """Score one conversation's events against ``user``'s expectation (see the module docstring)."""
    if user.expect_values is None:
        raise ScenarioError(f"{user.path or user.name}: the user script declares no expect.values",
                            "add expect: values: with the accepted phrasing of every value the user gives "
                            "(values: {} when the user gives none).")
    t = trace(events, scenario)
    values = {name: value_misses(expected, t.variables.get(name)) for name, expected in user.expect_values.items()}
    invented = tuple(sorted(n for n, v in t.variables.items() if not unknown(v) and n not in user.expect_values))
    unasked = []
    for turn in t.turns:
        step = scenario.steps[turn.step_after]
        if not step.still_needs(turn.variables):
            continue
        if not step.ask_keywords:
            raise ScenarioError(f"{scenario.path or scenario.name}: step '{step.name}' declares no ask_keywords",
                                "add ask_keywords: [word, ...] to the step: words a reply asking for its value "
                                "contains.")
        said = " ".join(turn.replies)
        if not asks_for(said, step.ask_keywords):
            unasked.append(f"turn {turn.turn} in {step.name}: {said[:80]!r}")
    end_ok = user.expect_step is None or t.end_step == user.expect_step
    parts = {"end_step": end_ok, "values": not any(values.values()), "no_invented": not invented,
             "moves": not t.forbidden_moves, "asks": not unasked}
    final = scenario.steps[t.end_step].final
    return Score(user.name, scenario.name, arm, user.split, user.expect_step, t.end_step, parts, values, invented,
                 t.forbidden_moves, tuple(unasked), final and t.end_step != user.expect_step,
                 t.end_step in cancel_steps(scenario))


# --------------------------------------------------------------------------- reporting
def summarize_scores(scores: Sequence[Score]) -> dict[str, Any]:
    """Counts and 95% Wilson intervals of each part, adherence, false completions and cancels."""
    n = len(scores)

    def rate(count: int) -> dict[str, Any]:
        return {"count": count, "of": n, "ci95": list(wilson_interval(count, n))}

    row: dict[str, Any] = {"conversations": n}
    for part in PARTS:
        row[part] = rate(sum(s.parts[part] for s in scores))
    row["adhered"] = rate(sum(s.adhered for s in scores))
    row["false_completions"] = rate(sum(s.false_completion for s in scores))
    row["cancels"] = rate(sum(s.cancelled for s in scores))
    row["unwanted_cancels"] = sum(s.cancelled and s.end_step != s.expect_step for s in scores)
    return row


def false_completions(scores: Sequence[Score]) -> int:
    """Conversations standing in a final step the user did not reach (the job declared done wrongly)."""
    return sum(s.false_completion for s in scores)


def compare_arms(a: Sequence[Score], b: Sequence[Score]) -> dict[str, PairedTest]:
    """Paired exact sign tests by user, one per part and one for adherence (arm a vs arm b)."""
    names = (a[0].arm if a else "a", b[0].arm if b else "b")
    out = {}
    for part in (*PARTS, "adhered"):
        def get(s: Score, part: str = part) -> int:
            return int(s.adhered if part == "adhered" else s.parts[part])
        out[part] = paired_test({s.user: (get(s), 1) for s in a}, {s.user: (get(s), 1) for s in b}, names=names)
    return out


def table(summaries: dict[tuple[str, str], dict[str, Any]]) -> str:
    """A Markdown table: one row per (model, arm), each part as count/n and its Wilson interval."""
    heads = [*PARTS, "adhered", "false_completions", "cancels"]
    lines = ["| model | arm | n | " + " | ".join(heads) + " |", "|---|---|---|" + "---|" * len(heads)]
    for (model, arm), row in summaries.items():
        cells = [f"{row[h]['count']} [{row[h]['ci95'][0]:.2f}, {row[h]['ci95'][1]:.2f}]" for h in heads]
        lines.append(f"| {model} | {arm} | {row['conversations']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def by_trait(scores: Sequence[Score], traits: Mapping[str, Sequence[str]]) -> dict[tuple[str, str], dict[str, Any]]:
    """Adherence per (trait, arm) with its Wilson interval: every score counts once under each trait of its
    user (``traits``: user name -> traits, as :func:`labkit.dialog.population.traits_of` reads them)."""
    groups: dict[tuple[str, str], list[Score]] = {}
    for s in scores:
        for trait in traits.get(s.user, ()):
            groups.setdefault((trait, s.arm), []).append(s)
    out = {}
    for key in sorted(groups):
        group = groups[key]
        k = sum(s.adhered for s in group)
        out[key] = {"adhered": k, "of": len(group), "ci95": list(wilson_interval(k, len(group)))}
    return out


def trait_table(table: Mapping[tuple[str, str], Mapping[str, Any]]) -> str:
    """:func:`by_trait` as a Markdown table: one line per trait, one column per arm, each cell ``k/n`` and its
    Wilson interval."""
    traits = sorted({t for t, _ in table})
    arms = list(dict.fromkeys(a for _, a in table))
    lines = ["| trait | " + " | ".join(arms) + " |", "|---" * (len(arms) + 1) + "|"]
    for trait in traits:
        cells = []
        for arm in arms:
            cell = table.get((trait, arm))
            cells.append("—" if cell is None else f"{cell['adhered']}/{cell['of']} "
                         f"({cell['ci95'][0]:.0%}–{cell['ci95'][1]:.0%})")
        lines.append(f"| {trait} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def trait_plot(table: Mapping[tuple[str, str], Mapping[str, Any]]) -> Any:
    """:func:`by_trait` as a figure: adherence per trait (rows) and arm (one marker each), with the Wilson
    interval as a bar, so a trait an arm fails on stands out."""
    import matplotlib.pyplot as plt

    traits = sorted({t for t, _ in table})
    arms = list(dict.fromkeys(a for _, a in table))
    fig, ax = plt.subplots(figsize=(7.5, 0.38 * len(traits) * max(1, len(arms)) ** 0.5 + 1.2))
    step = 0.7 / max(1, len(arms))
    for j, arm in enumerate(arms):
        ys, xs, lo, hi = [], [], [], []
        for i, trait in enumerate(traits):
            cell = table.get((trait, arm))
            if cell is None or not cell["of"]:
                continue
            x = cell["adhered"] / cell["of"]
            ys.append(len(traits) - 1 - i + 0.35 - (j + 0.5) * step)
            xs.append(x)
            lo.append(x - cell["ci95"][0])
            hi.append(cell["ci95"][1] - x)
        ax.errorbar(xs, ys, xerr=[lo, hi], fmt="o", capsize=2, label=arm)
    ax.set_yticks(range(len(traits)), list(reversed(traits)))
    ax.set_xlim(0, 1)
    ax.set_xlabel("adhered (Wilson 95% interval)")
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    return fig
