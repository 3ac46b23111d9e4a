"""Grammar-constrained sampling that checks one token instead of masking the whole vocabulary.

Why: Gemma 3's vocabulary has 262,144 tokens. llama-cpp-python's sampler chain (penalties → grammar →
greedy or top-k/top-p/min-p/temperature/dist) runs the grammar over *every* token at every step,
which costs more than the forward pass of a 270M model. llama.cpp's own ``common_sampler`` does it
lazily: sample with the chain *without* the grammar, check only the chosen token against the grammar,
and only if it is rejected run the full masked chain. This module does the same with the low-level
sampler API, and installs itself as the ``_init_sampler`` of one ``llama_cpp.Llama`` instance, so
``create_completion`` (stop strings, detokenising, usage counts) is unchanged around it.

Greedy decoding (temperature 0) gives the same tokens in both modes, by construction. Let ``l`` be
the penalised logits and ``A`` the tokens the grammar allows. The greedy sampler picks the *first*
index of the maximum. Lazy picks ``t`` = first argmax of ``l``. If ``t`` is in ``A``, every index
before ``t`` has a smaller logit and none after it a larger one, in the masked array as well, so the
masked chain picks ``t`` too. If ``t`` is not in ``A``, lazy runs exactly the masked chain. Whether a
token is allowed does not depend on the other candidates (llama.cpp decides each token from its own
text and the grammar's state), so the one-token check agrees with the full mask. Both paths then
accept the same token into the same grammar and penalty states, and the argument repeats per step.

Temperature sampling (temperature > 0) is *not* the same, neither per seed nor in distribution:

* Per seed: lazy draws from the unconstrained chain's random stream first and draws a second time
  (from the masked chain's own stream) only on rejection, so the same seed yields other tokens.
* In distribution: write ``Q`` for the unconstrained chain's distribution (top-k, top-p and min-p
  cut on the *whole* vocabulary, then temperature) and ``M`` for the masked chain's (the same cuts
  applied to the allowed tokens only). Lazy samples ``P(x) = Q(x) + (1 - Q(A)) * M(x)`` for ``x`` in
  ``A``. If ``M`` were ``Q`` conditioned on ``A`` this would equal ``M`` exactly (one round of
  rejection sampling with an exact fallback). It is not: the cuts differ. An allowed token outside
  the unconstrained top-40 / top-p / min-p set has ``Q(x) = 0`` and is reached only through the
  fallback, with weight ``1 - Q(A)``; and the cuts renormalise over different sets. So lazy shifts
  probability towards allowed tokens the unconstrained model already favours.

Hence :data:`GRAMMAR_MODES`: ``"auto"`` (the default) is lazy for greedy calls and masks first for
sampled ones, so every call keeps the tokens masking-first would give.
"""

from __future__ import annotations

import contextlib
import ctypes
import math
from collections.abc import Callable
from typing import Any

# Declared modes: name -> (lazy when greedy, lazy when sampling, what it means).
GRAMMAR_MODES: dict[str, tuple[bool, bool, str]] = {
    "auto": (True, False, "lazy for greedy calls (same tokens), masking first for sampled calls"),
    "lazy": (True, True, "check the chosen token, mask only on rejection (sampled calls change)"),
    "mask": (False, False, "mask the whole vocabulary at every step (llama-cpp-python's own chain)"),
}


def check_grammar_mode(mode: str) -> str:
    """``mode`` if it is declared in :data:`GRAMMAR_MODES`, else a :class:`BackendError`."""
    from labkit.llm.errors import BackendError

    if mode not in GRAMMAR_MODES:
        raise BackendError(f"grammar_mode {mode!r} is not one of {', '.join(GRAMMAR_MODES)}",
                           "use 'auto' (the default), 'lazy' or 'mask'.")
    return mode


def lazy_for(mode: str, temperature: float) -> bool:
    """Whether a call with this temperature samples lazily under ``mode``."""
    greedy, sampled, _ = GRAMMAR_MODES[check_grammar_mode(mode)]
    return greedy if temperature == 0 else sampled


class RecordingSampler:
    """The library's own sampler chain, unchanged, noting every token it returns in ``sink``."""

    def __init__(self, chain: Any, sink: list[int]) -> None:
        self.chain = chain
        self.sink = sink

    def sample(self, ctx: Any, idx: int = -1) -> int:
        token = int(self.chain.sample(ctx, idx))
        self.sink.append(token)
        return token

    def close(self) -> None:
        self.chain.close()


class LazyGrammarSampler:
    """Sample with ``free`` (no grammar); on rejection by ``grammar`` sample with ``masked``.

    ``free`` and ``masked`` are llama-cpp-python ``LlamaSampler`` chains built with the same
    parameters, without and with the grammar; ``grammar`` is a lone grammar sampler used for the
    one-token check. Every chosen token is accepted by all three, so their states stay in step with
    what masking first would have seen. ``rejections`` counts the steps that needed the full mask.
    """

    def __init__(self, free: Any, masked: Any, grammar: Any, n_vocab: int, sink: list[int]) -> None:
        import llama_cpp
        import numpy as np

        self.free, self.masked, self.grammar = free, masked, grammar
        self.n_vocab = n_vocab
        self.sink = sink
        self.steps = 0
        self.rejections = 0
        self._np = np
        self._native = llama_cpp
        dtype = np.dtype([("id", np.intc), ("logit", np.single), ("p", np.single)], align=True)
        self._data = np.zeros(n_vocab, dtype=dtype)
        self._ids = np.arange(n_vocab, dtype=np.intc)
        self._one = llama_cpp.llama_token_data()
        self._one_array = llama_cpp.llama_token_data_array(data=ctypes.pointer(self._one), size=1, selected=-1,
                                                           sorted=False)

    def _candidates(self, ctx: Any, idx: int) -> Any:
        """All tokens with their logits, as llama.cpp's ``llama_sampler_sample`` lays them out."""
        np, native = self._np, self._native
        logits = native.llama_get_logits_ith(ctx.ctx, idx)
        self._data["id"] = self._ids
        self._data["logit"] = np.ctypeslib.as_array(logits, shape=(self.n_vocab,))
        self._data["p"] = 0.0
        return native.llama_token_data_array(data=self._data.ctypes.data_as(native.llama_token_data_p),
                                             size=self.n_vocab, selected=-1, sorted=False)

    def _apply(self, chain: Any, ctx: Any, idx: int) -> int:
        array = self._candidates(ctx, idx)
        self._native.llama_sampler_apply(chain, ctypes.byref(array))
        if not 0 <= array.selected < array.size:
            raise RuntimeError("llama.cpp's sampler chain selected no token")
        return int(array.data[array.selected].id)

    def allowed(self, token: int) -> bool:
        """Whether the grammar, in its current state, allows ``token`` (one-token check)."""
        self._one.id, self._one.logit, self._one.p = token, 0.0, 0.0
        self._one_array.size, self._one_array.selected, self._one_array.sorted = 1, -1, False
        self._native.llama_sampler_apply(self.grammar, ctypes.byref(self._one_array))
        return not math.isinf(self._one.logit)

    def sample(self, ctx: Any, idx: int = -1) -> int:
        self.steps += 1
        token = self._apply(self.free.sampler, ctx, idx)
        if not self.allowed(token):
            self.rejections += 1
            token = self._apply(self.masked.sampler, ctx, idx)
        for sampler in (self.free.sampler, self.masked.sampler, self.grammar):
            self._native.llama_sampler_accept(sampler, token)
        self.sink.append(token)
        return token

    def close(self) -> None:
        self.free.close()
        self.masked.close()
        if self.grammar is not None:
            self._native.llama_sampler_free(self.grammar)
            self.grammar = None

    def __del__(self) -> None:
        with contextlib.suppress(Exception):  # at interpreter shutdown the library may be gone already
            self.close()


def install(llm: Any, lazy: Callable[[], bool], sink: list[int]) -> None:
    """Make ``llm`` build its samplers through this module from now on.

    ``lazy()`` is asked each time a completion starts (the backend sets the mode per call); ``sink``
    receives every sampled token id, so callers can compare token ids, not only texts.
    """
    import llama_cpp

    original = llm._init_sampler  # the bound method of the class

    def init_sampler(**kwargs: Any) -> Any:
        grammar = kwargs.get("grammar")
        if grammar is None or not lazy():
            return RecordingSampler(original(**kwargs), sink)
        free = original(**{**kwargs, "grammar": None})
        masked = original(**kwargs)
        lone = llama_cpp.llama_sampler_init_grammar(llm._model.vocab, grammar._grammar.encode("utf-8"),
                                                    grammar._root.encode("utf-8"))
        if not lone:
            raise RuntimeError("llama.cpp could not parse the grammar for the lazy check")
        return LazyGrammarSampler(free, masked, lone, llm.n_vocab(), sink)

    llm._init_sampler = init_sampler
