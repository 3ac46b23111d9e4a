from invoice import invoice
from money import format_money, parse_money


def test_whole_and_cents():
    assert format_money(123456) == "$1,234.56"
    assert format_money(5) == "$0.05"
    assert format_money(0) == "$0.00"


def test_other_symbol():
    assert format_money(250, symbol="€") == "€2.50"


def test_negative_amount():
    assert format_money(-550) == "-$5.50"
    assert format_money(-5) == "-$0.05"
    assert format_money(-123456) == "-$1,234.56"


def test_parse_is_the_inverse():
    for cents in (0, 5, 99, 100, 123456, -5, -550, -123456):
        assert parse_money(format_money(cents)) == cents


def test_invoice():
    text = invoice([("tea", 350), ("cake", 425)])
    assert text.splitlines() == ["tea           $3.50", "cake          $4.25", "TOTAL         $7.75"]


def test_invoice_with_refund():
    text = invoice([("tea", 350), ("refund", -500)])
    assert text.splitlines()[-2:] == ["refund        -$5.00", "TOTAL         -$1.50"]
