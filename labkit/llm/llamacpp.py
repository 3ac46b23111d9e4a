"""In-process llama.cpp through ``llama_cpp.Llama.create_completion``.

A chat model (``chat=True``) reads the prompt through its GGUF template. Every call starts from an empty
cache with its own seed; only a declared prefix's KV state is kept (:mod:`labkit.llm.prefix_cache`), and
grammar calls check tokens lazily where that gives the same tokens (:mod:`labkit.llm.lazy_grammar`)."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from labkit.llm.backend import Backend, Completion, Request, Turn
from labkit.llm.errors import BackendError, ModelFileError
from labkit.llm.grammar import check_gbnf, compile_schema
from labkit.llm.lazy_grammar import check_grammar_mode, install, lazy_for
from labkit.llm.modelfile import check_gguf, embedded_model_path, file_sha256
from labkit.llm.native import LoadPlan, load_plan, open_llama
from labkit.llm.prefix_cache import PrefixEvaluator, longest_declared, split_point


class LlamaCppBackend(Backend):
    """A GGUF model in this process (the embedded one when ``model_path`` is None); ``warmup`` maps the
    weights at load; ``prefixes``: prompt starts whose KV state is kept when ``prefix_reuse`` is on."""

    kind = "llama_cpp"

    def __init__(self, model_path: str | Path | None = None, *, n_ctx: int = 2048,
                 n_threads: int | None = None, clock: Callable[[], float] = time.perf_counter,
                 cache_dir: Path | None = None, warmup: bool = True, chat: bool = False,
                 grammar_mode: str = "auto", prefixes: Sequence[str] = (), prefix_reuse: bool = True) -> None:
        import llama_cpp

        path = check_gguf(model_path if model_path is not None else embedded_model_path())
        self.model_path = path
        self.embedded = model_path is None
        self.n_ctx = n_ctx
        self.n_threads = n_threads or os.cpu_count() or 1
        self._clock = clock
        self._cache_dir = cache_dir
        self._sha256: str | None = None
        self._grammars: dict[str, Any] = {}  # schema sha256 -> LlamaGrammar, checked once
        self._lock = threading.Lock()
        self.load_plan: LoadPlan = load_plan()
        started = clock()
        try:
            self._llm = open_llama(path, self.load_plan, n_ctx=n_ctx, n_threads=self.n_threads,
                                   n_threads_batch=self.n_threads, seed=0, verbose=False)
        except (ValueError, RuntimeError, OSError) as exc:
            raise ModelFileError(f"llama.cpp could not load {path}: {exc}",
                                 "the file may be truncated or use an architecture this llama.cpp build "
                                 "does not know; try another .gguf or a newer llama-cpp-python.") from exc
        if warmup:
            self._llm.create_completion(" ", max_tokens=1, temperature=0.0)
            self._llm.reset()
        self.load_seconds = clock() - started
        self.llama_cpp_version = str(llama_cpp.__version__)
        self.chat = chat
        self._formatter = self._chat_formatter() if chat else None
        self.grammar_mode = check_grammar_mode(grammar_mode)
        self.prefixes = tuple(prefixes)
        self.prefix_reuse = prefix_reuse
        self._lazy_now = False
        self._sampled: list[int] = []
        install(self._llm, lambda: self._lazy_now, self._sampled)
        self._prefix = PrefixEvaluator(self._llm)
        self._prefix_tokens: dict[str, list[int]] = {}
        self._cached_tokens = 0  # the last call's prompt tokens read from the kept prefix

    @property
    def prefixes(self) -> tuple[str, ...]:
        """The declared prompt prefixes (the caller's text); setting them also renders them for the template."""
        return self._prefixes

    @prefixes.setter
    def prefixes(self, prefixes: Sequence[str]) -> None:
        self._prefixes = tuple(prefixes)
        self._rendered_prefixes = tuple(self.render_prefix(p) for p in self._prefixes)

    def forget_kept_prefix(self) -> None:
        """Drop the kept prefix state, so the next call evaluates its prefix again (a benchmark's fresh start)."""
        self._prefix.forget()

    @property
    def last_token_ids(self) -> tuple[int, ...]:
        """The token ids sampled by the last call (including a final end-of-generation token)."""
        return tuple(self._sampled)

    @property
    def prefix_stats(self) -> Any:
        """How often a kept prefix state was reused (:class:`~labkit.llm.prefix_cache.PrefixStats`)."""
        return self._prefix.stats

    def prompt_tokens(self, text: str) -> list[int]:
        """The token ids ``create_completion`` reads for ``text``, mirroring llama-cpp-python 0.3's prompt
        assembly (BOS/CLS first where the model adds one)."""
        llm = self._llm
        model = llm._model
        bos = llm.token_bos()
        cls = model.token_cls()
        sep = model.token_sep()
        first = [cls if cls != -1 else bos]
        if not model.add_bos_token() or first[:1] == [-1]:
            first = []
        last = [] if (not model.add_eos_token() and sep == -1) else [sep if sep != -1 else llm.token_eos()]
        body = llm.tokenize(text.encode("utf-8"), add_bos=False, special=True) if text else []
        return first + body + last

    def _cut(self, text: str, tokens: list[int]) -> int:
        """Where the canonical evaluation cuts this prompt: after its declared prefix (0: no cut)."""
        declared = longest_declared(text, self._rendered_prefixes)
        if declared is None:
            return 0
        if declared not in self._prefix_tokens:
            self._prefix_tokens[declared] = self.prompt_tokens(declared)
        return split_point(tokens, self._prefix_tokens[declared])

    def _chat_formatter(self) -> Any:
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        template = self._llm.metadata.get("tokenizer.chat_template")
        if not template:
            raise ModelFileError(f"{self.model_path} has no chat template in its metadata",
                                 "load it as a base model (chat=False), or use a chat model's GGUF.")
        model = self._llm._model
        return Jinja2ChatFormatter(template=template, eos_token=model.token_get_text(self._llm.token_eos()),
                                   bos_token=model.token_get_text(self._llm.token_bos()),
                                   add_generation_prompt=True)

    def render_prompt(self, prompt: str, messages: Sequence[Turn] = ()) -> tuple[str, list[str]]:
        """The text the model reads for ``prompt`` and the template's stop strings (a chat model reads
        ``messages``, or the prompt as one user turn, in its template)."""
        if self._formatter is None:
            return prompt, []
        turns = messages or (("user", prompt),)
        rendered = self._formatter(messages=[{"role": role, "content": text} for role, text in turns])
        stop = rendered.stop if isinstance(rendered.stop, list) else [rendered.stop] if rendered.stop else []
        return rendered.prompt, [s for s in stop if s]

    def render_prefix(self, prefix: str) -> str:
        """How a prompt starting with ``prefix`` starts once rendered (rendered with a marker, cut there);
        "" where the template changes the content."""
        marker = "\u2063labkit-prefix-end\u2063"
        rendered, _ = self.render_prompt(prefix + marker)
        return rendered.split(marker, 1)[0] if marker in rendered else ""

    @property
    def model_sha256(self) -> str:
        """sha256 of the model file (computed once, cached on disk by path+size+mtime)."""
        if self._sha256 is None:
            self._sha256 = file_sha256(self.model_path, cache_dir=self._cache_dir)
        return self._sha256

    def describe(self) -> dict[str, Any]:
        return {"backend": self.kind, "model": str(self.model_path), "model_sha256": self.model_sha256,
                "embedded_model": self.embedded, "llama_cpp_python": self.llama_cpp_version,
                "n_ctx": self.n_ctx, "n_threads": self.n_threads, "sampling": self.sampling(),
                "prefix_cache": self._prefix_description(), "grammar_mode": self.grammar_mode,
                "extra_buffer_types": self.load_plan.use_extra_bufts,
                "model_kind": "chat" if self.chat else "base",
                "prompt_format": ("the GGUF's chat template: one user turn, or a conversation's turns" if self.chat
                                  else "plain completion")}

    def _prefix_description(self) -> str:
        if not self.prefixes:
            return "reset before every call"
        how = "its KV state kept between calls" if self.prefix_reuse else "evaluated afresh each call"
        return (f"reset before every call, except prompts starting with one of {len(self.prefixes)} declared "
                f"prefixes: two batches [prefix][rest], {how}")

    def grammar_for(self, schema: dict[str, Any]) -> Any:
        """The ``LlamaGrammar`` for ``schema``: converted and parse-checked once, then reused."""
        import llama_cpp

        compiled = compile_schema(schema)
        grammar = self._grammars.get(compiled.sha256)
        if grammar is None:
            check_gbnf(compiled.gbnf, self._llm._model.vocab)
            grammar = llama_cpp.LlamaGrammar.from_string(compiled.gbnf, verbose=False)
            self._grammars[compiled.sha256] = grammar
        return grammar

    def _complete(self, request: Request) -> Completion:
        grammar = self.grammar_for(request.schema) if request.schema is not None else None
        s = request.sampling
        text, template_stop = self.render_prompt(request.prompt, request.messages)
        with self._lock:
            self._sampled.clear()
            self._lazy_now = lazy_for(self.grammar_mode, request.temperature)
            started = self._clock()
            try:
                prompt = self._evaluate(text)
                out = self._llm.create_completion(
                    prompt, max_tokens=request.max_tokens, stop=[*request.stop, *template_stop] or None,
                    temperature=request.temperature, seed=request.seed, top_k=s["top_k"], top_p=s["top_p"],
                    min_p=s["min_p"], repeat_penalty=s["repeat_penalty"], grammar=grammar)
            except ValueError as exc:  # e.g. "Requested tokens (…) exceed context window of …"
                self._prefix.forget()
                raise BackendError(f"llama.cpp refused the prompt: {exc}",
                                   f"shorten the prompt or max_tokens, or load the model with a larger "
                                   f"n_ctx (now {self.n_ctx}).") from exc
            seconds = self._clock() - started
        choice = out["choices"][0]  # type: ignore[index]
        usage = out["usage"]  # type: ignore[index]
        return Completion(text=choice["text"], prompt_tokens=int(usage["prompt_tokens"]),
                          completion_tokens=int(usage["completion_tokens"]), seconds=seconds,
                          grammar_used=grammar is not None, finish_reason=str(choice.get("finish_reason")),
                          cached_tokens=self._cached_tokens)

    def _evaluate(self, text: str) -> str | list[int]:
        """Bring the prompt into the context; return what ``create_completion`` is given: the text after a
        ``reset()``, or with a declared prefix the tokens evaluated here as [prefix][rest]."""
        self._cached_tokens = 0
        tokens = self.prompt_tokens(text) if self.prefixes else []
        cut = self._cut(text, tokens) if tokens else 0
        if cut == 0:
            self._prefix.forget()
            self._llm.reset()
            return text
        if len(tokens) >= self.n_ctx:
            raise ValueError(f"Requested tokens ({len(tokens)}) exceed context window of {self.n_ctx}")
        if self._prefix.evaluate(tokens, cut, reuse=self.prefix_reuse):
            self._cached_tokens = cut
        return tokens
