from inventory import Inventory
from report import report


def make():
    inv = Inventory()
    inv.add("apple", 3)
    inv.add("pear")
    return inv


def test_quantity_of():
    inv = make()
    assert inv.quantity_of("apple") == 3
    assert inv.quantity_of("plum") == 0


def test_old_name_is_gone():
    assert not hasattr(Inventory, "get_qty")


def test_report():
    assert report(make()) == "apple: 3\npear: 1"
