"""Calling a flaky function again until it succeeds."""

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class RetryPolicy:
    """How often to try; ``max_attempts`` counts the first call too."""

    max_attempts: int = 1
    retry_on: tuple = (ConnectionError,)


def call_with_retry(fn: Callable[[], object], policy: RetryPolicy = RetryPolicy()) -> object:
    """Call ``fn`` until it returns, at most ``policy.max_attempts`` times."""
    last: Exception | None = None
    for _ in range(policy.max_attempts):
        try:
            return fn()
        except policy.retry_on as exc:
            last = exc
    raise RuntimeError(f"gave up after {policy.max_attempts} attempts") from last
