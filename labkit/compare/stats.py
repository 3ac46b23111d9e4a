"""Small-sample statistics, pure Python: :func:`wilson_interval`, :func:`pass_hat_k` (mean of C(c, k) / C(n, k))
and :func:`paired_test`, the exact two-sided sign test over tasks (for one run per task, exact McNemar)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from labkit.core.errors import LabkitError

Z95 = 1.959963984540054  # the 97.5% quantile of the standard normal distribution


class StatsError(LabkitError, ValueError):
    """Input no count can produce (more successes than runs, k larger than the runs, ...)."""


def wilson_interval(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval for ``successes`` of ``n`` (95% by default), 4 places; ``(0.0, 1.0)`` at n 0."""
    if n < 0 or successes < 0 or successes > n:
        raise StatsError(f"need 0 <= successes <= n, got {successes} of {n}", "count the runs again.")
    if n == 0:
        return (0.0, 1.0)
    p = successes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return (round(max(0.0, centre - half), 4), round(min(1.0, centre + half), 4))



def solved_cell(row: Mapping[str, Any]) -> str:
    """"k/n (low–high)": tasks solved and the Wilson 95% interval of one report row (``tasks_solved``, ``tasks``,
    ``ci95``), the cell every comparison's report uses."""
    return f"{row['tasks_solved']}/{row['tasks']} ({row['ci95'][0]:.2f}–{row['ci95'][1]:.2f})"


def pass_hat_k(per_task: Mapping[str, tuple[int, int]], k: int) -> float:
    """Mean over tasks of C(c, k) / C(n, k), for ``per_task`` = {task: (c successes, n runs)}."""
    if k < 1:
        raise StatsError(f"pass^k needs k >= 1, got {k}", "use k = 1 … n.")
    values = []
    for task, (c, n) in per_task.items():
        if not 0 <= c <= n:
            raise StatsError(f"task {task}: {c} successes in {n} runs is impossible", "count again.")
        if k > n:
            raise StatsError(f"task {task} has only {n} runs; pass^{k} needs at least {k}", "use k <= n.")
        values.append(math.comb(c, k) / math.comb(n, k))
    if not values:
        raise StatsError("pass^k of no tasks", "run at least one task.")
    return sum(values) / len(values)


def sign_test_p(wins: int, losses: int) -> float:
    """Exact two-sided sign test, ties left out: p = min(1, 2 · Σ_{i=0..s} C(m, i) / 2^m), m = wins + losses,
    s = min(wins, losses); 1.0 when m is 0."""
    if wins < 0 or losses < 0:
        raise StatsError(f"wins and losses must be >= 0, got {wins} and {losses}", "count the tasks again.")
    m = wins + losses
    if m == 0:
        return 1.0
    tail = sum(math.comb(m, i) for i in range(min(wins, losses) + 1))
    return min(1.0, 2 * tail / 2**m)


def stored_p(p: float) -> float:
    """A p-value as a report stores it: six decimals, but three significant digits where six decimals would
    read as 0 (a p-value is never zero)."""
    return round(p, 6) or float(f"{p:.3g}")


@dataclass(frozen=True)
class PairedTest:
    """Two arms compared task by task: where A scored higher, where B did, ties, and the exact p."""

    a: str
    b: str
    tasks: int
    a_better: int
    b_better: int
    ties: int
    p_value: float

    def describe(self) -> str:
        """One line for a report: both arms, the better/worse/tied task counts and the p-value."""
        return (f"{self.a} vs {self.b}: {self.a_better} task(s) better, {self.b_better} worse, {self.ties} tied "
                f"(of {self.tasks}), exact sign test p = {self.p_value:.4g}")


def paired_test(a: Mapping[str, tuple[int, int]], b: Mapping[str, tuple[int, int]], *,
                names: tuple[str, str] = ("A", "B")) -> PairedTest:
    """The exact sign test over the same tasks for two arms' ``{task: (successes, runs)}``; a task counts for
    the arm with the higher rate, equal rates are ties."""
    if set(a) != set(b):
        only = sorted(set(a) ^ set(b))
        raise StatsError(f"the arms ran different tasks ({len(only)} not in both, e.g. {only[:3]})",
                         "compare arms over the same task set (rerun the missing tasks).")
    a_better = b_better = 0
    for task in a:
        (ca, na), (cb, nb) = a[task], b[task]
        if not (0 <= ca <= na and 0 <= cb <= nb) or na == 0 or nb == 0:
            raise StatsError(f"task {task}: counts {a[task]} and {b[task]} are not (successes, runs>0)",
                             "count again.")
        # compare rates ca/na and cb/nb without floating point
        diff = ca * nb - cb * na
        a_better += diff > 0
        b_better += diff < 0
    ties = len(a) - a_better - b_better
    return PairedTest(names[0], names[1], len(a), a_better, b_better, ties, sign_test_p(a_better, b_better))


def verdict_words(a_better: int, b_better: int, p_value: float, names: tuple[str, str] = ("A", "B"),
                  alpha: float = 0.05) -> str:
    """What a paired test says, in words a report can print whichever way it came out: which arm did better on
    the untied tasks, and whether the exact p is below ``alpha`` (a difference beyond chance) or not (no evidence
    either way at this size, with the direction of the point estimate)."""
    a, b = names
    if a_better == b_better:
        return f"{a} and {b} are level on the untied tasks: no difference to test"
    better = a if a_better > b_better else b
    if p_value < alpha:
        return f"{better} did better, beyond chance (p < {alpha:g})"
    return f"no evidence either way at this size (p ≥ {alpha:g}); the point estimate favours {better}"
