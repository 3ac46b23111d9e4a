"""Formatting amounts of money held as whole cents."""


def format_money(cents: int, symbol: str = "$") -> str:
    """``123456`` -> ``"$1,234.56"``; a negative amount puts its sign before the symbol (``"-$5.50"``)."""
    units, rest = divmod(cents, 100)
    return f"{symbol}{units:,}.{rest:02d}"


def parse_money(text: str, symbol: str = "$") -> int:
    """The inverse of :func:`format_money`: ``"-$1,234.56"`` -> ``-123456``."""
    sign = -1 if text.startswith("-") else 1
    body = text.lstrip("-").removeprefix(symbol).replace(",", "")
    units, _, rest = body.partition(".")
    return sign * (int(units) * 100 + int(rest or 0))
