import pytest

from units import convert


def test_metric():
    assert convert(2.5, "km", "m") == 2500.0


def test_miles():
    assert convert(1, "mi", "m") == pytest.approx(1609.344)
    assert convert(10, "km", "mi") == pytest.approx(6.2137, rel=1e-4)


def test_unknown_unit():
    with pytest.raises(KeyError):
        convert(1, "parsec", "m")
