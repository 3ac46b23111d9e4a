"""A shopping cart with prices in cents."""

from dataclasses import dataclass, field


@dataclass
class Cart:
    """Lines of (name, unit price in cents, quantity)."""

    lines: list[tuple[str, int, int]] = field(default_factory=list)

    def add(self, name: str, price_cents: int, qty: int = 1) -> None:
        if qty < 1:
            raise ValueError("quantity must be at least 1")
        self.lines.append((name, price_cents, qty))

    def total(self) -> int:
        """The sum of price times quantity, in cents."""
        return sum(price * qty for _, price, qty in self.lines)
