from csvline import split_line
from table import column


def test_default_separator_is_a_comma():
    assert split_line("a, b,c\n") == ["a", "b", "c"]


def test_other_separator():
    assert split_line("a;b", sep=";") == ["a", "b"]


def test_column():
    assert column(["x,1.5", "y,2"], 1) == [1.5, 2.0]
