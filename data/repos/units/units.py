"""Converting lengths between units."""

# metres per unit
FACTORS = {
    "m": 1.0,
    "km": 1000.0,
    "cm": 0.01,
}


def convert(value: float, src: str, dst: str) -> float:
    """``value`` in unit ``src`` expressed in unit ``dst``."""
    for unit in (src, dst):
        if unit not in FACTORS:
            raise KeyError(f"unknown unit {unit!r}")
    return value * FACTORS[src] / FACTORS[dst]
