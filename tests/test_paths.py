"""`labkit paths`: generated sequences cover every row of every shipped table, and a real
LabMachine driven along them takes every transition and refuses every pair it must refuse."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from labkit.cli import main
from labkit.core import catalog
from labkit.core.errors import IllegalTransition, LabkitError
from labkit.core.events import RunStarted
from labkit.core.machine import LabMachine
from labkit.core.paths import build_suite, drive, shortest_routes, tables_of
from labkit.core.table import Row, TransitionTable
from labkit.course.exercises import _import_file

ROOT = Path(__file__).resolve().parents[1]


def _exercise_tables() -> list[TransitionTable]:
    ex1 = _import_file(ROOT / "exercises/01a_transition_table/solution.py", "ex01_solution")
    ex4 = _import_file(ROOT / "exercises/03a_replay_and_compare/solution.py", "ex04_solution")
    return [ex1.build_table(), ex4.review_table()]


def _shipped_tables() -> list[TransitionTable]:
    return [t for name in catalog.names() for t in tables_of(catalog.lookup(name).table())] + _exercise_tables()


@pytest.mark.parametrize("table", _shipped_tables(), ids=lambda t: t.name)
def test_every_shipped_table_is_covered_and_the_machine_follows_and_refuses(table: TransitionTable) -> None:
    suite = build_suite(table, "pairs")
    assert suite.covered == set(table.rows)
    assert all(path[0].source == table.initial for path in suite.paths)
    for path in suite.paths:  # each sequence is connected: every row starts where the last one ended
        assert all(a.dest == b.source for a, b in itertools.pairwise(path))
    assert len(suite.paths) >= suite.lower_bound
    # every pair the table does not handle, and every event in a terminal state, must be refused
    expected = {(s, e) for s in table.terminal for e in table.events} | set(table.impossible) | set(table.unhandled())
    assert expected <= {(f.state, f.event) for f in suite.refusals}
    assert drive(suite) == []


def test_the_cover_is_as_small_as_the_terminal_bound_on_the_shipped_tables() -> None:
    """On the flat tables. A layered machine's forward-only layer and graph cannot go back for a row they
    skipped, so each skipped row costs a sequence of its own and the terminal bound is not reached there."""
    flat = [entry.table() for entry in map(catalog.lookup, catalog.names())]
    for table in [t for t in flat if isinstance(t, TransitionTable)] + _exercise_tables():
        suite = build_suite(table)
        minimum = KNOWN_MINIMUM.get(table.name, suite.lower_bound)
        assert len(suite.paths) == minimum, (table.name, len(suite.paths), minimum)


# Flat tables whose minimum number of sequences is above the terminal bound, with the reason.
KNOWN_MINIMUM = {
    # Four rows enter ROLLBACK_OR_FIX; to_checkpoint leads back to EDIT_FILE, so one sequence may pass it more
    # than once, but each to_checkpoint needs a fix round, and the guards (no edit retries left on two entries)
    # keep the search from joining every entry into one sequence: five, one above the terminal bound.
    "repoedit": 5,
}


def test_a_guarded_pair_without_its_complement_must_be_refused_when_the_guard_fails() -> None:
    table = TransitionTable.build("g", ["A", "B", "C"], [Row("A", "go", "B", "ready"), Row("B", "end", "C")],
                                  initial="A", terminal=["C"])
    suite = build_suite(table, "pairs")
    guarded = [f for f in suite.refusals if f.reason == "guard"]
    assert [(f.state, f.event, f.blocked) for f in guarded] == [("A", "go", ("ready",))]
    assert drive(suite) == []


def test_the_driver_catches_a_machine_that_accepts_an_impossible_pair() -> None:
    """Drive the ticket suite on a machine whose table quietly handles one more pair: caught."""
    table = catalog.lookup("ticket").table()
    leaky = TransitionTable.build("ticket", table.states, (*table.rows, Row("NEW", "start", "IN_PROGRESS")),
                                  initial=table.initial, terminal=table.terminal)
    problems = drive(build_suite(table, "pairs"), lambda t, g: LabMachine(leaky, guards=g, clock=lambda: 0.0))
    assert problems == ["refusal NEW + start (unhandled): the machine took it (NEW -> IN_PROGRESS)"]


def test_the_driver_catches_a_machine_that_goes_elsewhere_or_refuses_a_row() -> None:
    table = catalog.lookup("ticket").table()
    rows = [Row("TRIAGED", "start", "WAITING_CUSTOMER") if (r.source, r.event) == ("TRIAGED", "start") else r
            for r in table.rows]
    moved = TransitionTable.build("ticket", table.states, rows, initial="NEW", terminal=table.terminal)
    problems = drive(build_suite(table), lambda t, g: LabMachine(moved, guards=g, clock=lambda: 0.0))
    assert len(problems) == 2 and all("went TRIAGED -> WAITING_CUSTOMER" in p for p in problems)
    problems = drive(build_suite(table), lambda t, g: LabMachine(t, guards={**g, "has_fix_note": lambda s, p: False},
                                                                 clock=lambda: 0.0))
    assert len(problems) == 2
    assert all("RESOLVED [has_fix_note]): went IN_PROGRESS -> IN_PROGRESS" in p for p in problems)


def test_a_refusal_that_records_something_is_reported() -> None:
    table = catalog.lookup("ticket").table()

    class Recording(LabMachine):
        """Refuses like a LabMachine, but writes an event before it does."""

        def fire(self, trigger: str, **payload: object):  # type: ignore[no-untyped-def]
            try:
                return super().fire(trigger, **payload)
            except IllegalTransition:
                self._append(RunStarted(table="ticket", initial="NEW"))
                raise

    problems = drive(build_suite(table, "pairs"), lambda t, g: Recording(t, guards=g, clock=lambda: 0.0))
    assert problems and all("refused, but the log or state changed" in p for p in problems)


def test_shortest_routes_are_shortest() -> None:
    table = catalog.lookup("planner_executor").table()
    routes = shortest_routes(table, table.initial)
    assert set(routes) == set(table.states)
    assert [r.event for r in routes["UNKNOWN"]] == ["start", "proposed", "allowed", "timeout"]


def test_cli_paths_text_and_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["paths", "ticket"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("table ticket: 11 of 11 rows covered by 4 event sequence(s)")
    assert "resolve [not has_fix_note] -> IN_PROGRESS" in out
    assert main(["paths", "planner_executor", "--cover", "pairs", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["covered"] == data["rows"] == 28 and len(data["paths"]) == data["lower_bound"]
    assert {"state": "SUCCEEDED", "event": "approved", "reason": "terminal"}.items() <= next(
        f for f in data["refusals"] if f["state"] == "SUCCEEDED" and f["event"] == "approved").items()
    guarded = [step for path in data["paths"] for step in path if step["guard"]]
    assert {s["guard"] for s in guarded} >= {"goal_met", "not goal_met", "escalate", "not escalate"}


def test_cli_paths_refuses_an_unknown_cover_and_table(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["paths", "ticket", "--cover", "states"])
    assert main(["paths", "no_such_table"]) == 2
    assert "unknown table 'no_such_table'" in capsys.readouterr().err
    with pytest.raises(LabkitError, match="unknown cover"):
        build_suite(catalog.lookup("ticket").table(), "states")
