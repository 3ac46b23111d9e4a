"""A printable stock report."""

from inventory import Inventory


def report(inv: Inventory) -> str:
    """One line per item: name and quantity."""
    return "\n".join(f"{name}: {inv.get_qty(name)}" for name in inv.names())
