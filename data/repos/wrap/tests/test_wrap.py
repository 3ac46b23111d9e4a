from wrap import wrap


def test_fits():
    assert wrap("a b c", 10) == ["a b c"]


def test_never_longer_than_width():
    lines = wrap("abcde fghij k lmnop qrstu", 10)
    assert all(len(line) <= 10 for line in lines)
    assert lines == ["abcde", "fghij k", "lmnop", "qrstu"]


def test_one_over_the_width_breaks():
    assert wrap("abcd efgh", 8) == ["abcd", "efgh"]


def test_exact_width_fits():
    assert wrap("abcd efgh", 9) == ["abcd efgh"]
