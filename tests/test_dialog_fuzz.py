"""Malformed scenario and user files: a fuzzer mutates the shipped YAMLs; every failure is a placed message.

The promise: a broken file gives ``file:line:column: what is wrong`` and what to do, never a
traceback. Mutations: drop a line (a key disappears), give a key a value of the wrong type, shift
a line's indentation, or put a tab in it.
"""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from labkit.dialog.scenario import ScenarioError, parse_scenario
from labkit.dialog.simulate import load_scenarios
from labkit.dialog.users import check_users, parse_user_script

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data" / "dialog"
SCENARIO_FILES = sorted(DATA.glob("*/scenario.yaml"))
USER_FILES = sorted((DATA / "users").glob("*.yaml"))[::5]  # a spread of users keeps each example fast
SCENARIOS = load_scenarios(DATA)
PLACED = re.compile(r"^\S+:\d+:\d+: .+\n  what to do: .+", re.S)
WRONG = ["[1, 2]", "{a: 1}", "42", "true", "''", "[[x]]", "null"]


@st.composite
def mutated(draw: st.DrawFn, files: list[Path]) -> tuple[Path, str]:
    path = draw(st.sampled_from(files))
    lines = path.read_text(encoding="utf-8").splitlines()
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.integers(0, len(lines) - 1))
        kind = draw(st.sampled_from(["drop", "wrong_type", "indent", "dedent", "tab"]))
        line = lines[i]
        if kind == "drop":
            del lines[i]
        elif kind == "wrong_type" and ":" in line:
            key = line.split(":", 1)[0]
            lines[i] = f"{key}: {draw(st.sampled_from(WRONG))}"
        elif kind == "indent":
            lines[i] = " " * draw(st.integers(1, 3)) + line
        elif kind == "dedent":
            lines[i] = line.lstrip()
        elif kind == "tab":
            lines[i] = "\t" + line
        if not lines:
            lines = [""]
    return path, "\n".join(lines) + "\n"


def _placed(err: ScenarioError, file: str) -> None:
    text = str(err)
    assert PLACED.match(text), text
    assert text.startswith(file + ":"), text


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated(SCENARIO_FILES))
def test_mutated_scenarios_fail_with_a_place_or_load(case: tuple[Path, str]) -> None:
    path, text = case
    try:
        parse_scenario(text, str(path), base=path.parent)
    except ScenarioError as err:
        _placed(err, str(path))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated(USER_FILES))
def test_mutated_users_fail_with_a_place_or_load(case: tuple[Path, str]) -> None:
    path, text = case
    try:
        user = parse_user_script(text, str(path))
        check_users([user], SCENARIOS)
    except ScenarioError as err:
        _placed(err, str(path))


def test_the_fuzzer_does_find_errors() -> None:
    path = DATA / "users" / "a01_happy.yaml"
    text = path.read_text(encoding="utf-8").replace("split: dev", "split: [dev]")
    try:
        parse_user_script(text, str(path))
    except ScenarioError as err:
        _placed(err, str(path))
        assert f"{path}:3:1: 'split' must be dev or test" in str(err)
    else:
        raise AssertionError("a list as split was accepted")
    bad = (DATA / "support" / "scenario.yaml").read_text(encoding="utf-8").replace(
        "ask_keywords: [email,", "ask_keywords: 7\n    #[email,")
    try:
        parse_scenario(bad, "support.yaml", base=DATA / "support")
    except ScenarioError as err:
        _placed(err, "support.yaml")
        assert "'ask_keywords' must be a non-empty list" in str(err)
    else:
        raise AssertionError("a number as ask_keywords was accepted")
