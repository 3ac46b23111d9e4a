"""Prompt evaluation in two batches, [declared prefix][rest], with the prefix's KV state kept.

The cut depends on the prompt alone (:func:`split_point`), and the cache is rolled back to the prefix, so a
kept prefix sees the same cells as a fresh one; ``labkit bench equality`` measures two batches against one."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

# The shortest prefix worth a separate batch: below it the saved time is noise.
MIN_PREFIX_TOKENS = 16


def split_point(tokens: Sequence[int], prefix_tokens: Sequence[int]) -> int:
    """Where ``tokens`` are cut: after their longest common start with ``prefix_tokens``, leaving one token;
    0 (one batch) below :data:`MIN_PREFIX_TOKENS`."""
    n = 0
    for a, b in zip(tokens, prefix_tokens, strict=False):
        if a != b:
            break
        n += 1
    n = min(n, len(tokens) - 1)
    return n if n >= MIN_PREFIX_TOKENS else 0


def longest_declared(text: str, prefixes: Sequence[str]) -> str | None:
    """The longest declared prefix that ``text`` starts with (None if none does)."""
    matches = [p for p in prefixes if p and text.startswith(p)]
    return max(matches, key=len) if matches else None


@dataclass
class PrefixStats:
    """How often the kept prefix state was reused, and how often the prefix was evaluated again."""

    reused: int = 0
    evaluated: int = 0


class PrefixEvaluator:
    """Evaluates prompts the canonical way on one ``Llama``, keeping the last prefix's state (``reuse=False``:
    both batches from an empty cache, the equality reference)."""

    def __init__(self, llm: Any) -> None:
        self.llm = llm
        self._kept: tuple[int, ...] | None = None  # prefix tokens whose KV state sits at positions 0..n-1
        self.stats = PrefixStats()

    def forget(self) -> None:
        """Drop the kept prefix (e.g. after a call that did not go through :meth:`evaluate`)."""
        self._kept = None

    def cache_span(self) -> tuple[int, int]:
        """The first and last position the model's cache holds for its one sequence."""
        import llama_cpp

        memory = llama_cpp.llama_get_memory(self.llm._ctx.ctx)
        return (int(llama_cpp.llama_memory_seq_pos_min(memory, 0)),
                int(llama_cpp.llama_memory_seq_pos_max(memory, 0)))

    def _truncate_to(self, n: int) -> bool:
        """Remove every cache cell from position ``n`` on; True if the cache now holds exactly 0..n-1."""
        if not self.llm._ctx.kv_cache_seq_rm(-1, n, -1):
            return False
        if self.cache_span() != (0, n - 1):
            return False  # e.g. a sliding-window cache that dropped early cells: evaluate afresh
        self.llm.n_tokens = n
        return True

    def evaluate(self, tokens: Sequence[int], cut: int, *, reuse: bool) -> bool:
        """Evaluate ``tokens`` as [tokens[:cut]][tokens[cut:]]; True when the prefix's state was reused."""
        if not 0 < cut < len(tokens):
            raise ValueError(f"cut {cut} must leave tokens on both sides of {len(tokens)}")
        llm = self.llm
        tokens = list(tokens)
        prefix = tuple(tokens[:cut])
        reused = reuse and self._kept == prefix and self._truncate_to(cut)
        if not reused:
            self._kept = None
            llm.reset()
            llm.eval(list(prefix))
            self.stats.evaluated += 1
        else:
            self.stats.reused += 1
        llm.eval(tokens[cut:])
        self._kept = prefix if reuse else None
        return reused
