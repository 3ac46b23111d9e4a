"""The dialog machine's targets, checked on one arm of a scored recording.

The targets judge a recording (docs/results.md, notebook 05), so they are computed here rather than in a
notebook cell that could judge another way than the text. Each is a line: what it asks, the measured
value, and whether it is met.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from labkit.compare.targets import Target
from labkit.dialog.measure import Score, compare_arms

ADHERENCE_AT_LEAST = 0.60
TIMES_THE_BASELINE = 2
P_BELOW = 0.05
CALLS_PER_MESSAGE_AT_MOST = 1.10


def check_targets(scored: Mapping[str, Sequence[Score]], counts: Mapping[str, Mapping[str, Any]], arm: str,
                  baseline: str = "prompt_only_checked") -> list[Target]:
    """The targets for ``arm`` against ``baseline``: ``scored`` maps arms to their scored conversations, and
    ``counts`` to their call counts (:func:`labkit.dialog.rescore.counts`)."""
    mine, theirs = scored[arm], scored[baseline]
    n, adhered, base = len(mine), sum(s.adhered for s in mine), sum(s.adhered for s in theirs)
    p = compare_arms(mine, theirs)["adhered"].p_value
    calls = counts[arm]["calls_per_message"]
    false = sum(s.false_completion for s in mine)
    invented = sum(not s.parts["no_invented"] for s in mine)
    return [Target(f"{arm} adherence at least {ADHERENCE_AT_LEAST:.0%} ({adhered}/{n})",
                   adhered >= ADHERENCE_AT_LEAST * n),
            Target(f"at least {TIMES_THE_BASELINE} times {baseline}'s ({base}/{len(theirs)})",
                   adhered >= TIMES_THE_BASELINE * base),
            Target(f"paired exact test p < {P_BELOW} (p = {p:.3g})", p < P_BELOW),
            Target(f"calls per user message at most {CALLS_PER_MESSAGE_AT_MOST:.2f} ({calls})",
                   calls <= CALLS_PER_MESSAGE_AT_MOST),
            Target(f"no false completion ({false})", false == 0),
            Target(f"no invented value (in {invented} conversation(s))", invented == 0)]
