"""Scripted users: a YAML file per simulated user, read with every mistake placed at ``file:line:column``.

A user script names the scenario it talks to, its split (``dev`` users are for designing a machine,
``test`` users for reporting it), the user's messages in order, and what a bot that follows the
script ends with::

    scenario: support
    split: test
    persona: corrects the email address
    turns:
      - The invoice PDF I downloaded is empty.
      - ...
    expect:
      step: filed                      # the step the conversation stands in after the last message
      variables: {email: [lena@]}      # legacy: words each value contains (the recorded runs' check)
      values:                          # the measure's: the accepted phrasings of each value
        issue: [the invoice PDF I downloaded is empty, downloaded invoice PDF is empty]
        product: [billing]
        must_haves: [[import PDF invoices, PDF import], [export a CSV file, CSV export]]   # a list: one entry per item

``variables`` keeps replays of the recorded runs (``data/dialog/runs``) giving their verdicts; the measure
(:mod:`labkit.dialog.measure`) reads ``values`` only: a string value is a list of phrasings (any one matches,
after normalising), a list value a list of items, each a phrasing or a list of them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from labkit.core.yaml_input import (
    Located,
    LocatedList,
    Where,
    check_keys,
    item_text,
    parse_yaml,
    read_input,
    refuse_scalar,
    value_text,
)
from labkit.dialog.scenario import ScenarioError

SPLITS = ("dev", "test")


@dataclass(frozen=True)
class ExpectedValue:
    """The accepted phrasings of one variable: one tuple for a string, one tuple per item for a list."""

    items: tuple[tuple[str, ...], ...]
    is_list: bool
    where: str = ""


@dataclass(frozen=True)
class UserScript:
    """One simulated user."""

    name: str
    scenario: str
    turns: tuple[str, ...]
    expect_step: str | None = None
    expect_variables: dict[str, tuple[str, ...]] = field(default_factory=dict)
    persona: str = ""
    split: str | None = None
    expect_values: dict[str, ExpectedValue] | None = None  # None: the file declares no ``values``
    path: str = ""
    scenario_where: str = ""
    step_where: str = ""  # file:line:column of expect.step, for an error that names a step the scenario lacks


def _fail(where: Where, message: str, hint: str) -> ScenarioError:
    return ScenarioError(f"{where}: {message}", hint)


def _check_keys(data: Located, allowed: set[str], what: str) -> None:
    check_keys(data, allowed, what, ScenarioError)


def _string_list(value: Any, where: Where, what: str, example: str) -> tuple[str, ...]:
    items = value if isinstance(value, list) else [value]
    if isinstance(value, LocatedList):
        for i, item in enumerate(value):
            if isinstance(item, bool) or item is None:  # a number is a phrasing as written (3 reads as "3")
                refuse_scalar(item, value.item_where[i], value.source[i], f"phrasing {i + 1} of {what}",
                              ScenarioError)
    if not items or not all(isinstance(v, str | int | float) and not isinstance(v, bool) and str(v).strip()
                            for v in items):
        raise _fail(where, f"{what} must be a non-empty list of words or phrases", f"e.g. {example}.")
    return tuple(str(v) for v in items)


def _expected_value(name: str, value: Any, where: Where) -> ExpectedValue:
    example = f"{name}: [a phrasing, another phrasing] or, for a list, {name}: [[item one], [item two, synonym]]"
    if not isinstance(value, list) or not value:
        raise _fail(where, f"value '{name}' must be a non-empty list of phrasings", f"write {example}.")
    if all(isinstance(v, list) for v in value):
        items = tuple(_string_list(v, where, f"each item of '{name}'", example) for v in value)
        return ExpectedValue(items, True, str(where))
    if any(isinstance(v, list) for v in value):
        raise _fail(where, f"value '{name}' mixes phrasings and item lists",
                    "a string value is [phrasing, ...]; a list value is [[item phrasing, ...], ...].")
    return ExpectedValue((_string_list(value, where, f"value '{name}'", example),), False, str(where))


def parse_user_script(text: str, file: str = "<user>", name: str | None = None) -> UserScript:
    """Parse a user script's text; every problem is a :class:`ScenarioError` at ``file:line:column``."""
    data = parse_yaml(text, file, "user script", ScenarioError)
    if not isinstance(data, Located):
        raise _fail(Where(file, 1, 1), "a user script is a YAML mapping with 'turns' (and scenario, split, expect)",
                    "see the format in labkit/dialog/users.py.")
    _check_keys(data, {"scenario", "persona", "split", "turns", "expect"}, "the user script")
    turns = _turns(data)
    for key in ("scenario", "persona"):
        if key in data:
            value_text(data, key, f"'{key}'", ScenarioError)
    split = data.get("split")
    if split is not None and split not in SPLITS:
        raise _fail(data.key_where["split"], f"'split' must be dev or test, got {split!r}",
                    "dev users are for designing the machine, test users for reporting it; pick one.")
    expect = data.get("expect")
    if expect is None:
        expect = Located.empty(data.where)
    if not isinstance(expect, Located):
        raise _fail(data.key_where["expect"], "'expect' must be a mapping", "e.g. expect: {step: brief, values: {}}.")
    _check_keys(expect, {"step", "variables", "values"}, "'expect'")
    step = expect.get("step")
    if step is not None and not isinstance(step, str):
        refuse_scalar(step, expect.value_where["step"], expect.source["step"], "'expect.step'", ScenarioError,
                      "step: {}")
        raise _fail(expect.key_where["step"], "'expect.step' must be a step name", "e.g. step: brief.")
    words = _mapping(expect, "variables")
    variables = {str(k): _string_list(v, words.key_where[str(k)], f"variable '{k}'", f"{k}: [word]")
                 for k, v in words.items()}
    values: dict[str, ExpectedValue] | None = None
    if "values" in expect:
        raw_values = _mapping(expect, "values")
        values = {str(k): _expected_value(str(k), v, raw_values.key_where[str(k)]) for k, v in raw_values.items()}
    return UserScript(name=name or Path(file).stem, scenario=str(data.get("scenario", "")), turns=turns,
                      expect_step=step, expect_variables=variables, persona=str(data.get("persona", "")),
                      split=split, expect_values=values, path=file,
                      scenario_where=str(data.key_where.get("scenario", data.where)),
                      step_where=str(expect.key_where.get("step", expect.where)))


def _turns(data: Located) -> tuple[str, ...]:
    """The user's messages: a non-empty list of text; a turn YAML read as a boolean, number or null is named."""
    turns = data.get("turns")
    where = data.key_where.get("turns", data.where)
    hint = "write turns: followed by one '- message' line per user message."
    if not isinstance(turns, LocatedList) or not turns:
        read = f" (YAML read {data.source['turns'].strip()!r} there)" if data.source.get("turns", "").strip() else ""
        raise _fail(where, f"a user script needs 'turns', a non-empty list of messages{read}", hint)
    out = tuple(item_text(turns, i, f"turn {i + 1}", ScenarioError) for i in range(len(turns)))
    for i, turn in enumerate(out):
        if not turn.strip():
            raise _fail(turns.item_where[i], f"turn {i + 1} is empty", f"{hint} (a turn has some text)")
    return out


def _mapping(parent: Located, key: str) -> Located:
    value = parent.get(key)
    if value is None:
        return Located.empty(parent.where)
    if not isinstance(value, Located):
        raise _fail(parent.key_where[key], f"'{key}' must be a mapping of variable names",
                    f"e.g. {key}: {{goal: [...]}}.")
    return value


def load_user_script(path: str | Path) -> UserScript:
    """Read a user script; ``turns`` is required, the rest optional (``chat --script`` needs only turns)."""
    p = Path(path)
    text = read_input(p, "user script", ScenarioError)
    return parse_user_script(text, str(p), p.stem)


def load_user_scripts(folder: str | Path, split: str | None = None) -> list[UserScript]:
    """Every ``*.yaml`` user script in ``folder`` by name; ``split`` keeps only dev or test users."""
    users = [load_user_script(p) for p in sorted(Path(folder).glob("*.yaml"))]
    return users if split is None else [u for u in users if u.split == split]


def check_user(user: UserScript, scenario: Any) -> None:
    """Check ``user`` against its scenario: the step, the variable names, list or not, enum values.

    Why separately from parsing: ``chat --script`` reads a file of turns without a scenario at hand;
    the measure needs every expectation to be one the scenario can produce.
    """
    where = user.path or user.name
    if user.expect_step is not None and user.expect_step not in scenario.steps:
        raise ScenarioError(f"{user.step_where or where}: expect.step '{user.expect_step}' is not a step of "
                            f"'{scenario.name}'",
                            f"use one of: {', '.join(scenario.steps)}.")
    fields = {f.name: f for f in scenario.variables}
    for name, expected in (user.expect_values or {}).items():
        f = fields.get(name)
        if f is None:
            raise ScenarioError(f"{expected.where}: '{name}' is no variable of '{scenario.name}'",
                                f"use one of: {', '.join(fields)}.")
        if expected.is_list != (f.type == "list"):
            shape = "[[item phrasing, ...], ...]" if f.type == "list" else "[phrasing, ...]"
            raise ScenarioError(f"{expected.where}: '{name}' is a {f.type} in the scenario",
                                f"write its accepted values as {shape}.")
        if f.type == "enum":
            bad = [v for v in expected.items[0] if v not in f.values]
            if bad:
                raise ScenarioError(f"{expected.where}: {bad} not among the values of '{name}'",
                                    f"use one of: {', '.join(f.values)}.")


def check_users(users: list[UserScript], scenarios: dict[str, Any]) -> None:
    """:func:`check_user` for each user, after checking that its scenario exists."""
    for user in users:
        if user.scenario not in scenarios:
            raise ScenarioError(f"{user.scenario_where or user.path}: unknown scenario {user.scenario!r}",
                                f"write scenario: one of {', '.join(scenarios)}.")
        check_user(user, scenarios[user.scenario])
