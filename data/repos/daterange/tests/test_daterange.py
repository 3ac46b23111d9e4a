from datetime import date

from calendar_view import labels
from daterange import days


def test_both_ends_included():
    got = days(date(2024, 2, 27), date(2024, 3, 1))
    assert got[0] == date(2024, 2, 27)
    assert got[-1] == date(2024, 3, 1)
    assert len(got) == 4


def test_single_day():
    assert days(date(2024, 1, 1), date(2024, 1, 1)) == [date(2024, 1, 1)]


def test_labels():
    assert labels(date(2024, 1, 1), date(2024, 1, 2)) == ["Mon 01", "Tue 02"]
