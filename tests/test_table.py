"""Build checks of transition tables: each broken table is refused with the offending rows named."""

from __future__ import annotations

import pytest

from labkit import Row, TableError, TransitionTable, table_from_dict
from labkit.core.examples import ticket_table

STATES = ["A", "B", "C"]


def build(rows, states=STATES, initial="A", terminal=("C",), impossible=()):
    return TransitionTable.build("t", states, rows, initial=initial, terminal=terminal, impossible=impossible)


def problems_of(**kwargs) -> list[str]:
    with pytest.raises(TableError) as info:
        build(**kwargs)
    return info.value.problems


def test_a_sound_table_builds_and_lists_its_unhandled_pairs():
    table = build([("A", "go", "B"), ("B", "finish", "C")])
    assert table.allowed_events("A") == ["go"]
    assert table.unhandled() == [("A", "finish"), ("B", "go")]


def test_declared_impossible_pairs_leave_the_unhandled_list():
    table = build([("A", "go", "B"), ("B", "finish", "C")], impossible=[("A", "finish"), ("B", "go")])
    assert table.unhandled() == []


def test_unknown_states_are_named_with_their_row():
    problems = problems_of(rows=[("A", "go", "B"), ("B", "finish", "D"), ("A", "x", "C")])
    assert problems == ["row (B, finish -> D): unknown dest state 'D'"]


def test_duplicate_rows_are_refused():
    problems = problems_of(rows=[("A", "go", "B"), ("A", "go", "B"), ("B", "finish", "C")])
    assert "row (A, go -> B) is listed twice" in problems


def test_two_rows_that_can_both_fire_are_refused():
    problems = problems_of(rows=[("A", "go", "B"), ("A", "go", "C"), ("B", "finish", "C")])
    assert len(problems) == 1
    assert "(A, go -> B), (A, go -> C) can both fire" in problems[0]


def test_unrelated_guards_cannot_be_proven_exclusive():
    rows = [Row("A", "go", "B", "g"), Row("A", "go", "C", "h"), ("B", "finish", "C")]
    assert "can both fire" in problems_of(rows=rows)[0]


def test_a_guard_and_its_negation_split_deterministically():
    table = build([Row("A", "go", "B", "g"), Row("A", "go", "C", "not g"), ("B", "finish", "C")])
    assert table.guard_names() == {"g"}


def test_unreachable_states_and_dead_ends_are_refused():
    problems = problems_of(rows=[("A", "go", "C")], states=["A", "B", "C"])
    assert "state 'B' is unreachable from 'A'" in problems
    assert "state 'B' has no outgoing rows but is not terminal (a dead end)" in problems


def test_terminal_states_with_exits_are_refused():
    problems = problems_of(rows=[("A", "go", "C"), ("C", "again", "A")], states=["A", "C"])
    assert problems == ["row (C, again -> A): terminal state 'C' must have no outgoing rows"]


def test_bad_initial_and_terminal_names():
    problems = problems_of(rows=[("A", "go", "C")], states=["A", "C"], initial="Z", terminal=("C", "Q"))
    assert "initial state 'Z' is not among the states" in problems
    assert "terminal state 'Q' is not among the states" in problems


def test_an_impossible_pair_that_a_row_handles_is_a_contradiction():
    problems = problems_of(rows=[("A", "go", "C")], states=["A", "C"], impossible=[("A", "go")])
    assert problems == ["impossible pair (A, go) is handled by a row; remove one of them"]


def test_every_problem_is_reported_at_once():
    problems = problems_of(rows=[("A", "go", "B"), ("A", "go", "B"), ("B", "x", "Z"), ("C", "y", "A")])
    assert problems == [
        "row (B, x -> Z): unknown dest state 'Z'",
        "row (A, go -> B) is listed twice",
        "row (C, y -> A): terminal state 'C' must have no outgoing rows",
        "state 'C' is unreachable from 'A'",
    ]


def test_dict_round_trip_and_malformed_descriptions():
    table = ticket_table()
    assert table_from_dict(table.to_dict()) == table
    with pytest.raises(TableError, match="lacks the key"):
        table_from_dict({"states": ["A"]})
    with pytest.raises(TableError, match=r"row \['A', 'B'\] must be"):
        table_from_dict({"states": ["A"], "initial": "A", "terminal": ["A"], "rows": [["A", "B"]]})


@pytest.mark.parametrize(("data", "message"), [
    ([1, 2], "a table description is a JSON object, not list"),
    ({"states": ["A"], "initial": "A", "terminal": "A", "rows": []}, "'terminal' must be a list"),
    ({"states": ["A"], "initial": "A", "terminal": ["A"], "rows": None}, "'rows' must be a list of rows"),
    ({"states": ["A", "B"], "initial": "A", "terminal": ["B"], "rows": [["A", ["go"], "B"]]},
     "must be [source, event, dest] or [source, event, dest, guard] (strings)"),
    ({"states": ["A", "B"], "initial": "A", "terminal": ["B"], "rows": [["A", "go", "B"]], "impossible": [["A"]]},
     "impossible pair ['A'] must be [state, event]"),
    ({"states": ["A", 3], "initial": "A", "terminal": ["A"], "rows": []}, "'states' must be a list of non-empty"),
])
def test_malformed_descriptions_name_the_key(data, message):
    with pytest.raises(TableError) as info:
        table_from_dict(data)
    assert any(message in p for p in info.value.problems), info.value.problems
