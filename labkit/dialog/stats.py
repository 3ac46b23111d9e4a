"""The Wilson score interval: an honest interval for a rate measured on few conversations.

Why Wilson and not "p ± 1.96·sqrt(p(1-p)/n)": with 11 conversations and 11 successes the normal
approximation gives the interval [1, 1] — certainty from eleven tries. Wilson's interval stays
inside [0, 1] and keeps a sensible width at 0 and n successes.
"""

from __future__ import annotations

import math


def wilson_interval(successes: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """The Wilson score interval for ``successes`` out of ``n`` (95% by default); (0, 1) when n is 0."""
    if n < 0 or successes < 0 or successes > n:
        raise ValueError(f"need 0 <= successes <= n, got {successes} of {n}")
    if n == 0:
        return (0.0, 1.0)
    p = successes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return (round(max(0.0, centre - half), 4), round(min(1.0, centre + half), 4))
