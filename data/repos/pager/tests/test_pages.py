import pytest

from pages import page, page_count


def test_exact_pages():
    assert page_count(20, 10) == 2


def test_partial_last_page():
    assert page_count(21, 10) == 3
    assert page_count(1, 10) == 1


def test_no_items():
    assert page_count(0, 10) == 0


def test_bad_per_page():
    with pytest.raises(ValueError):
        page_count(5, 0)


def test_page_slice():
    assert page(list(range(25)), 3, 10) == [20, 21, 22, 23, 24]
