import pytest

from cart import Cart


def filled():
    cart = Cart()
    cart.add("tea", 450, 2)
    cart.add("cake", 300)
    return cart


def test_total():
    assert filled().total() == 1200


def test_bad_quantity():
    with pytest.raises(ValueError):
        Cart().add("tea", 450, 0)


def test_discounted_total():
    assert filled().total_after_discount(25) == 900
    assert filled().total_after_discount(0) == 1200


def test_discount_rounds_down_to_whole_cents():
    cart = Cart()
    cart.add("gum", 99)
    assert cart.total_after_discount(10) == 89


def test_discount_out_of_range():
    with pytest.raises(ValueError):
        filled().total_after_discount(101)
