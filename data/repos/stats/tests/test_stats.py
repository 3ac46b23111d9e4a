import pytest

from stats import mean, spread
from summary import summary


def test_mean():
    assert mean([1, 2, 3, 4]) == 2.5


def test_mean_of_nothing_is_a_clear_error():
    with pytest.raises(ValueError, match="empty"):
        mean([])


def test_spread():
    assert spread([3, 9, 4]) == 6


def test_summary():
    assert summary([1, 3]) == "n=2 mean=2.00 spread=2.00"
