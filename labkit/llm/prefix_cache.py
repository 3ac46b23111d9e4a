"""Prompt evaluation in two batches, [declared prefix][rest], with the prefix's KV state kept.

Why not llama-cpp-python's own prefix matching: it evaluates only the part of a prompt that differs
from the previous call, so *where* a prompt is cut into batches depends on the call before it, and
a different cut can change floating-point results (measured on the comparison's prompt-only
prompts: 4 of 40 greedy outputs changed). labkit therefore resets before every call by default.

This module makes reuse equal by construction instead. The *canonical evaluation* of a prompt whose
text starts with a declared prefix is two batches: the prefix's tokens from an empty cache, then the
rest. Whether the prefix's KV state is computed now or kept from an earlier call, the second batch
sees the same cache cells, holding the same values, at the same positions: the earlier call's own
tokens are removed (``llama_memory_seq_rm``) back to the prefix, which puts the cache's insertion
head where a fresh evaluation of the prefix leaves it. So the cache changes only the time.

The prefix must be *declared* by whoever writes the prompts (the arm's instruction and worked
examples), never guessed from the previous call: the cut then depends on the prompt alone. Which
cut point a prompt gets is :func:`split_point`, a pure function of its tokens and the prefix's.
Whether the two-batch evaluation gives the same tokens as today's one-batch evaluation is a separate,
measured question (``labkit bench equality``, ``data/bench/equality.json``): on the comparison v2's recorded
prompts it does for two of its three declared prefixes, and not on 7 of 25 prompt + helpers prompts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

# The shortest prefix worth a separate batch: below it the saved time is noise.
MIN_PREFIX_TOKENS = 16


def split_point(tokens: Sequence[int], prefix_tokens: Sequence[int]) -> int:
    """Where the canonical evaluation cuts ``tokens``: after their common start with ``prefix_tokens``.

    The prefix text tokenised alone can end in a different token than inside the whole prompt (a
    tokenizer may merge across the boundary), so the cut is the longest common token prefix, and at
    least one token always stays for the second batch (its logits are the ones sampled from).
    Returns 0 (no cut: one batch) when fewer than :data:`MIN_PREFIX_TOKENS` tokens are shared.
    """
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
    """Evaluates prompts the canonical way on one ``llama_cpp.Llama`` and keeps the last prefix's state.

    ``reuse=False`` evaluates the same two batches from an empty cache every time (the reference the
    equality benchmark compares against). After :meth:`evaluate`, the whole prompt is in the model's
    context and its last logits are current, so ``create_completion`` given the same token list
    samples at once without evaluating anything again.
    """

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
        """Evaluate ``tokens`` as the two batches [tokens[:cut]][tokens[cut:]].

        Returns True when the prefix's state was reused instead of evaluated.
        """
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
