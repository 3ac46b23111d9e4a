"""A tiny stock list."""


class Inventory:
    """Quantities of items by name."""

    def __init__(self) -> None:
        self._items: dict[str, int] = {}

    def add(self, name: str, qty: int = 1) -> None:
        self._items[name] = self._items.get(name, 0) + qty

    def get_qty(self, name: str) -> int:
        """How many of ``name`` are in stock (0 if none)."""
        return self._items.get(name, 0)

    def names(self) -> list[str]:
        return sorted(self._items)
