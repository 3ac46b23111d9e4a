"""Grammar-constrained sampling that checks one token instead of masking the whole vocabulary (which costs
more than a 270M model's step): sample freely, check, mask only on rejection, as llama.cpp does. Greedy
calls give the same tokens either way, sampled ones do not, hence ``"auto"`` in :data:`GRAMMAR_MODES`."""

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
    """Sample with ``free``; when ``grammar`` rejects the token, with ``masked`` (same chain plus grammar).
    Every chosen token is accepted by all three; ``rejections`` counts the masked steps."""

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
    """Make ``llm`` build its samplers here from now on; ``lazy()`` is asked per completion, ``sink`` gets
    every sampled token id."""
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
