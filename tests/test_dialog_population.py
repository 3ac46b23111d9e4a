"""Generated users (labkit.dialog.population): many users per scenario from disjoint dev and test pools,
each one followed to its expected end by the ideal bot, none passed by a floor bot."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import echo

from labkit.dialog.floors import CopiesExamples, NeverMoves, floor_runs
from labkit.dialog.population import (
    EVENTS,
    applicable,
    checked_users,
    generate_users,
    ideal_run,
    load_population,
    parse_population,
    write_users,
)
from labkit.dialog.scenario import ScenarioError
from labkit.dialog.simulate import load_scenarios
from labkit.dialog.users import check_user, load_user_scripts

DATA = Path(__file__).resolve().parents[1] / "data" / "dialog"
SCENARIOS = load_scenarios(DATA)
COUNTS = {"dev": 200, "test": 300}


@pytest.fixture(scope="module")
def users() -> dict[tuple[str, str], list]:
    return {(name, split): generate_users(s, load_population(s), split, n)
            for name, s in SCENARIOS.items() for split, n in COUNTS.items()}


def test_every_scenario_declares_a_population_including_the_booking_scenario() -> None:
    assert set(SCENARIOS) == {"analyst", "support", "booking"}
    for scenario in SCENARIOS.values():
        load_population(scenario)  # dev and test pools share no value and no phrasing (checked on load)


def test_the_ideal_bot_follows_every_generated_user_to_its_expected_end(users: dict) -> None:
    for (name, _), generated in users.items():
        assert checked_users(SCENARIOS[name], generated) == generated
    assert sum(len(u) for u in users.values()) == 3 * (200 + 300)


def test_the_ideal_bot_fails_a_user_whose_expectation_it_cannot_meet(users: dict) -> None:
    from dataclasses import replace

    user = users["support", "dev"][0]
    wrong = replace(user, script=replace(user.script, expect_step="cancelled"))
    assert ideal_run(SCENARIOS["support"], user).adhered
    assert not ideal_run(SCENARIOS["support"], wrong).adhered
    with pytest.raises(ScenarioError, match="the ideal bot does not adhere"):
        checked_users(SCENARIOS["support"], [wrong])


@pytest.mark.parametrize("floor", [NeverMoves, CopiesExamples], ids=lambda f: f.__name__)
@pytest.mark.parametrize("arm,every", [("machine", 1), ("prompt_only_checked", 5)])
def test_no_floor_bot_passes_a_generated_user(users: dict, floor: type, arm: str, every: int) -> None:
    """Every user under the machine; every fifth under prompt-only (the measure is the same for both)."""
    for (name, _), generated in users.items():
        runs = floor_runs(floor, {name: SCENARIOS[name]}, [u.script for u in generated[::every]], arm)
        passed = [score.user for score, _ in runs if score.adhered]
        assert not passed, f"{floor.__name__} under {arm} passes {passed[:5]}"


def test_each_split_has_every_trait_the_scenario_allows_and_the_pools_stay_apart(users: dict) -> None:
    for (name, split), generated in users.items():
        events = {u.traits[1] for u in generated}
        assert events == set(applicable(SCENARIOS[name])), (name, split)
        assert {u.traits[0] for u in generated} == {"terse", "verbose"}
        assert {"typos", "mixed_language"} <= {t for u in generated for t in u.traits[2:]}
    assert "cancel_confirmed" not in applicable(SCENARIOS["analyst"])  # the analyst's script has no cancel
    assert set(applicable(SCENARIOS["booking"])) == set(EVENTS)
    for name in SCENARIOS:
        dev = {t for u in users[name, "dev"] for t in u.script.turns}
        test = {t for u in users[name, "test"] for t in u.script.turns}
        assert not dev & test, f"{name}: a message is in both splits: {sorted(dev & test)[:3]}"


def test_generation_is_reproducible_from_its_seed() -> None:
    booking = SCENARIOS["booking"]
    population = load_population(booking)
    first = generate_users(booking, population, "test", 20, seed=7)
    assert first == generate_users(booking, population, "test", 20, seed=7)
    assert first != generate_users(booking, population, "test", 20, seed=8)


def test_written_users_read_back_as_the_comparison_reads_them(tmp_path: Path) -> None:
    written = write_users({"booking": SCENARIOS["booking"]}, tmp_path, {"dev": 6, "test": 6})
    read = {u.name: u for u in load_user_scripts(tmp_path)}
    assert len(read) == 12
    for user in written:
        again = read[user.script.name]
        check_user(again, SCENARIOS["booking"])
        assert (again.turns, again.expect_step, again.split) == (user.script.turns, user.script.expect_step,
                                                                  user.script.split)
        assert ideal_run(SCENARIOS["booking"], type(user)(again, user.traits, user.intents)).adhered


def _population(text: str) -> str:
    return (DATA / "booking" / "population.yaml").read_text(encoding="utf-8").replace(*text.split(" => "))


def test_a_population_that_shares_an_entry_between_dev_and_test_is_refused() -> None:
    text = _population("test: [Priya Nair, => test: [Maria Lopez,")
    with pytest.raises(ScenarioError, match="'Maria Lopez' in both dev and test"):
        parse_population(text, "population.yaml", SCENARIOS["booking"])


def test_a_value_yaml_reads_as_a_number_is_named_with_the_fix() -> None:
    text = _population('"11:45"] => 11:45]')
    with pytest.raises(ScenarioError, match=r"YAML read 705 \(int\)") as caught:
        parse_population(text, "population.yaml", SCENARIOS["booking"])
    assert "quote" in caught.value.hint


def test_the_command_writes_the_users_and_counts_the_traits(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from labkit.cli import main

    assert main(["generate-users", "--only", "support", "--dev", "4", "--test", "4", "--out", str(tmp_path)]) == 0
    assert len(list(tmp_path.glob("support-*.yaml"))) == 8
    assert "8 users written" in capsys.readouterr().out
    assert main(["generate-users", "--only", "nosuch", "--out", str(tmp_path)]) == 2
    assert "no scenario with a population.yaml named nosuch" in capsys.readouterr().err


def test_adherence_is_counted_per_trait_from_the_written_personas(tmp_path: Path) -> None:
    from labkit.dialog.measure import by_trait
    from labkit.dialog.population import traits_of

    written = write_users({"support": SCENARIOS["support"]}, tmp_path, {"dev": 10})
    read = load_user_scripts(tmp_path)
    traits = {u.name: traits_of(u) for u in read}
    assert traits == {u.script.name: u.traits for u in written}
    scores = [ideal_run(SCENARIOS["support"], u) for u in written]
    never = [score for score, _ in floor_runs(NeverMoves, SCENARIOS, read, "machine")]
    table = by_trait([*scores, *never], traits)
    terse = sum(u.traits[0] == "terse" for u in written)
    assert table["terse", "ideal"] == {"adhered": terse, "of": terse, "ci95": table["terse", "ideal"]["ci95"]}
    assert table["terse", "machine"]["adhered"] == 0 and table["terse", "machine"]["of"] == terse
    assert traits_of(load_user_scripts(DATA / "users")[0]) == ()  # a hand-written persona is no trait list


def test_the_trait_table_and_plot_show_every_trait_and_arm() -> None:
    from labkit.dialog.measure import trait_plot, trait_table

    table = {("terse", "machine"): {"adhered": 3, "of": 4, "ci95": [0.3, 0.95]},
             ("terse", "prompt_only_checked"): {"adhered": 0, "of": 4, "ci95": [0.0, 0.49]},
             ("typos", "machine"): {"adhered": 1, "of": 2, "ci95": [0.09, 0.91]}}
    text = trait_table(table)
    assert text.splitlines()[0] == "| trait | machine | prompt_only_checked |"
    assert "| terse | 3/4 (30%–95%) | 0/4 (0%–49%) |" in text and "| typos | 1/2 (9%–91%) | — |" in text
    fig = trait_plot(table)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["typos", "terse"]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["machine", "prompt_only_checked"]


def test_the_report_of_generated_users_counts_adherence_and_each_feature_per_trait(tmp_path: Path) -> None:
    from labkit.compare.command import kinds
    from labkit.compare.runs import Answers
    from labkit.dialog.comparison import DialogConfig, record
    from labkit.llm.fake import ScriptedBackend

    written = write_users({"support": SCENARIOS["support"]}, tmp_path / "users", {"dev": 6})
    settings = DialogConfig(model="scripted", arms=("machine", "machine_without_carry_over"), split="dev",
                            scenarios=str(DATA), users_dir=str(tmp_path / "users"))
    record(settings, Answers(live=ScriptedBackend(echo)), tmp_path / "rec")
    report = kinds()["dialog"].report(tmp_path / "rec")
    per_trait, per_feature = report.split("Adhered per trait:")[1].split("What each feature buys per trait:")
    traits = sorted({t for u in written for t in u.traits})
    rows = [line for line in per_trait.splitlines() if line.startswith("| ") and not line.startswith("| trait")]
    assert [row.split(" | ")[0].removeprefix("| ") for row in rows] == traits
    for row, trait in zip(rows, traits, strict=True):  # each cell counts that trait's users, in both arms
        n = sum(trait in u.traits for u in written)
        assert row.count(f"/{n} (") == 2, row
    assert "| `carry_over` |" in per_feature
