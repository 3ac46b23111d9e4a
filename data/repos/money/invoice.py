"""A plain-text invoice: one line per item and a total."""

from money import format_money


def invoice(lines: list[tuple[str, int]], symbol: str = "$") -> str:
    """``lines``: (description, cents); a refund is a negative amount."""
    width = max([len(name) for name, _ in lines] + [5])
    rows = [f"{name:<{width}}  {format_money(cents, symbol):>12}" for name, cents in lines]
    total = sum(cents for _, cents in lines)
    rows.append(f"{'TOTAL':<{width}}  {format_money(total, symbol):>12}")
    return "\n".join(rows)
