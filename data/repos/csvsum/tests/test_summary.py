import pytest

import summary
from report import report
from summary import column_mean
from table import read_rows

CSV = """name, price, qty
tea, 3.5, 2
cake, 4, 1

jam, , 5
"""


def test_read_rows():
    header, rows = read_rows(CSV)
    assert header == ["name", "price", "qty"]
    assert rows[2] == ["jam", "", "5"] and len(rows) == 3


def test_column_total():
    assert summary.column_total(CSV, "qty") == 8
    assert summary.column_total(CSV, "price") == 7.5


def test_old_name_is_gone():
    assert not hasattr(summary, "col_total")


def test_column_mean():
    assert column_mean(CSV, "price") == 2.5


def test_unknown_column():
    with pytest.raises(ValueError):
        column_mean(CSV, "colour")


def test_report():
    assert report(CSV, ["price", "qty"]) == "price: total 7.5, mean 2.5\nqty: total 8, mean 2.66667"
