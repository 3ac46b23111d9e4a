"""An OpenAI-compatible server client (stdlib ``urllib`` only): llama.cpp servers, vLLM, Ollama.

Without a server kind: plain completions, the schema as ``schema_mode`` says (``grammar``, parse-checked
here; ``structured_outputs``; ``json_schema``; ``none``), and with ``isolate_calls`` a one-token barrier
first so a reused KV cache cannot change a greedy answer. With ``server_kind`` (or ``"auto"``) its
declaration decides (:mod:`labkit.llm.server_kinds`). Callers validate every answer."""

from __future__ import annotations

import http.client
import json
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from labkit.llm.backend import Backend, Completion, Request
from labkit.llm.errors import BackendError, GrammarError, ModelFileError, ServerDown, ServerError
from labkit.llm.modelfile import check_gguf, file_sha256
from labkit.llm.server_kinds import (
    KIND_CHOICES,
    ModelKind,
    ServerFacts,
    ServerKind,
    detect_kind,
    get_kind,
    legacy_kind,
)

SCHEMA_MODES = ("grammar", "json_schema", "structured_outputs", "none")
_START_HINT = ("start one, e.g. `python -m labkit.llm.serve --model FILE.gguf --host 127.0.0.1 --port 8000`, "
               "or check the URL (--server).")


_ENDPOINTS = ("/completions", "/chat/completions", "/models", "/health", "/props")


def check_server_url(url: str) -> str:
    """``url`` if it can name an OpenAI-compatible server's base (``http://host:port``, optionally ``/v1`` or a
    proxy's path); otherwise a :class:`BackendError` saying what is wrong with it and the URL to give."""
    example = "give the server's base URL, e.g. http://127.0.0.1:8000"
    if not isinstance(url, str) or not url.strip():
        raise BackendError("the server URL is empty", f"{example}.")
    if url != url.strip() or any(c.isspace() for c in url):
        raise BackendError(f"server URL {url!r} holds spaces", f"remove them; {example}.")
    if not url.lower().startswith(("http://", "https://")):
        guess = f"http://{url.split('://', 1)[-1]}"
        raise BackendError(f"server URL {url!r} does not start with http:// or https://",
                           f"write the scheme too: {guess}" if "://" not in url else f"{example}.")
    parts = urllib.parse.urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        given = parts.netloc.rsplit(":", 1)[-1]
        raise BackendError(f"server URL {url!r} has the port {given!r}, not a number from 1 to 65535",
                           f"{example} (the port the server prints when it starts).") from None
    if not parts.hostname:
        raise BackendError(f"server URL {url!r} names no host", f"{example}.")
    if port == 0:
        raise BackendError(f"server URL {url!r} has port 0, which no server listens on",
                           f"{example} (the port the server prints when it starts).")
    if parts.query or parts.fragment:
        raise BackendError(f"server URL {url!r} has a query or fragment ('?' or '#')",
                           f"give the base URL only: {parts.scheme}://{parts.netloc}")
    if parts.path.rstrip("/").endswith(_ENDPOINTS):
        raise BackendError(f"server URL {url!r} names an endpoint ({parts.path}), not the server",
                           f"give the base URL only, the client adds the endpoint: {parts.scheme}://{parts.netloc}")
    return url


class OpenAICompatBackend(Backend):
    """A model behind an OpenAI-compatible server.

    ``retries`` re-sends after a connection failure, timeout or 5xx/429 (``backoff_s * 2**i``), then raises
    :class:`ServerError`; ``model_sha256`` else from a local GGUF path the server names; ``server_kind``:
    None, a name or ``"auto"``; ``model_kind``: "base" or "chat" where the server does not say."""

    kind = "openai_http"

    def __init__(self, base_url: str, *, model: str | None = None, model_sha256: str | None = None,
                 timeout_s: float = 60.0, retries: int = 2, backoff_s: float = 0.5, schema_mode: str = "grammar",
                 isolate_calls: bool = True, api_key: str | None = None,
                 clock: Callable[[], float] = time.perf_counter, sleep: Callable[[float], None] = time.sleep,
                 cache_dir: Path | None = None, server_kind: str | None = None,
                 model_kind: ModelKind | None = None) -> None:
        if schema_mode not in SCHEMA_MODES:
            raise BackendError(f"unknown schema_mode {schema_mode!r}", f"use one of {', '.join(SCHEMA_MODES)}.")
        if server_kind is not None and server_kind not in KIND_CHOICES:
            get_kind(server_kind)  # raises, listing the kinds
        if server_kind is not None and schema_mode != "grammar":
            raise BackendError(f"schema_mode {schema_mode!r} and server_kind {server_kind!r} are both given",
                               "drop --schema-mode: a server kind decides where the schema goes.")
        if model_kind not in (None, "base", "chat"):
            raise BackendError(f"unknown model_kind {model_kind!r}", "use base or chat.")
        if model_kind is not None and server_kind is None:
            raise BackendError("model_kind is given without server_kind",
                               "add --server-kind (auto, or the kind): only a kind knows how to reach a "
                               "chat template.")
        url = check_server_url(base_url).rstrip("/")
        self.base_url = url[: -len("/v1")] if url.endswith("/v1") else url
        self.model = model
        self.timeout_s, self.retries, self.backoff_s = timeout_s, retries, backoff_s
        self.schema_mode, self.isolate_calls = schema_mode, isolate_calls
        self._api_key, self._clock, self._sleep, self._cache_dir = api_key, clock, sleep, cache_dir
        self._sha256 = model_sha256
        self._sha256_source = "given" if model_sha256 else None
        self.server_kind_choice = server_kind
        self._kind: ServerKind | None = None if server_kind is not None else legacy_kind(schema_mode)
        self._model_kind: ModelKind | None = model_kind
        self._model_kind_source = "given" if model_kind else None
        self.stats = {"requests": 0, "retries": 0, "failed_calls": 0, "barrier_requests": 0}

    # --- HTTP -------------------------------------------------------------------------------------

    def _send(self, method: str, path: str, body: dict[str, Any] | None) -> tuple[dict[str, Any], int]:
        """One request with retries; returns (JSON answer, retries used) or raises :class:`ServerError`."""
        url = f"{self.base_url}{path}"
        data = None if body is None else json.dumps(body).encode()
        headers = {"Content-Type": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        last = ""
        for attempt in range(self.retries + 1):
            if attempt:
                self.stats["retries"] += 1
                self._sleep(self.backoff_s * 2 ** (attempt - 1))
            self.stats["requests"] += 1
            req = urllib.request.Request(url, data=data, headers=headers, method=method)
            try:
                with urllib.request.urlopen(req, timeout=self.timeout_s) as answer:
                    return json.loads(answer.read().decode()), attempt
            except urllib.error.HTTPError as exc:
                detail = exc.read().decode(errors="replace")[:300]
                if exc.code < 500 and exc.code != 429:
                    self.stats["failed_calls"] += 1
                    raise ServerError(f"{url} rejected the request: HTTP {exc.code}: {detail}",
                                      "check the model name and the request fields this server accepts.",
                                      attempts=attempt + 1) from exc
                last = f"HTTP {exc.code}: {detail}"
            except TimeoutError:
                last = f"no answer within {self.timeout_s:g} s"
            except urllib.error.URLError as exc:
                if isinstance(exc.reason, TimeoutError):
                    last = f"no answer within {self.timeout_s:g} s"
                else:
                    last = f"cannot connect ({exc.reason})"
            except (ConnectionError, http.client.HTTPException, ValueError) as exc:  # cut off, or not JSON
                last = f"{type(exc).__name__}: {exc}"
        self.stats["failed_calls"] += 1
        slow = last.startswith("no answer within")
        raise ServerDown(
            f"{url} failed {self.retries + 1} time(s); last: {last}",
            ("the server is up but slow: raise timeout_s (--timeout), lower max_tokens, or check its load."
             if slow else f"is the server running? {_START_HINT}"),
            attempts=self.retries + 1)

    # --- provenance -------------------------------------------------------------------------------

    def _resolve_model(self) -> str:
        if self.model is None:
            answer, _ = self._send("GET", "/v1/models", None)
            try:
                self.model = str(answer["data"][0]["id"])
            except (KeyError, IndexError, TypeError) as exc:
                raise ServerError(f"{self.base_url}/v1/models lists no model: {str(answer)[:200]}",
                                  "pass the model name (model= or --server-model).") from exc
        if self._sha256 is None:
            try:
                self._sha256 = file_sha256(check_gguf(self.model), cache_dir=self._cache_dir)
                self._sha256_source = "hashed the local file the server names"
            except (ModelFileError, OSError):
                self._sha256_source = "unknown (pass model_sha256=)"
        return self.model

    def facts(self) -> ServerFacts:
        """A fresh view of what the server says about itself (its detection endpoints)."""
        return ServerFacts(self.base_url, timeout_s=min(self.timeout_s, 10.0), api_key=self._api_key)

    @property
    def server_kind(self) -> ServerKind:
        """The kind's declaration this server is spoken to by (detected on first use with ``"auto"``)."""
        if self._kind is None:
            choice = self.server_kind_choice or "auto"
            self._kind = detect_kind(self.facts()) if choice == "auto" else get_kind(choice)
        return self._kind

    @property
    def model_kind(self) -> ModelKind:
        """"chat" when calls go through the server's chat template, else "base" (plain completions)."""
        if self._model_kind is None:
            kind = self.server_kind
            decided, how = kind.model_kind(self.facts(), self._resolve_model())
            if decided is None:
                decided, how = kind.unknown_model_kind, f"{how}; assumed {kind.unknown_model_kind}"
            self._model_kind, self._model_kind_source = decided, how
        return self._model_kind

    def describe(self) -> dict[str, Any]:
        model = self._resolve_model()
        info = {"backend": self.kind, "server": self.base_url, "model": model, "model_sha256": self._sha256,
                "model_sha256_source": self._sha256_source, "schema_mode": self.schema_mode,
                "isolate_calls": self.isolate_calls, "timeout_s": self.timeout_s, "retries": self.retries,
                "sampling": self.sampling()}  # counters live in .stats: they are not provenance
        if self.server_kind_choice is not None:  # only then: earlier provenance keeps its keys
            kind = self.server_kind
            info.update({"server_kind": kind.name, "server_kind_source": self.server_kind_choice,
                         "model_kind": self.model_kind, "model_kind_source": self._model_kind_source,
                         "schema_mode": kind.chat_schema if self.model_kind == "chat" else kind.plain_schema,
                         "isolation": kind.isolation if self.isolate_calls else "off"})
        return info

    def model_id(self) -> str:
        model = self._resolve_model()
        return self._sha256 or f"unhashed:{model}"

    # --- completion -------------------------------------------------------------------------------

    def _body(self, request: Request) -> dict[str, Any]:
        if request.schema is not None and self.server_kind_choice is None and self.schema_mode == "none":
            raise GrammarError(f"the server at {self.base_url} is used without constrained decoding "
                               "(schema_mode='none'), but this call asks for a schema",
                               "use schema_mode='grammar' for llama.cpp servers, or call without a schema "
                               "and validate the text.")
        kind, chat = self.server_kind, self.model_kind == "chat"
        body = kind.body(request, self._resolve_model(), chat, request.sampling)
        if not self.isolate_calls:
            for name in kind.fresh_fields:
                body.pop(name, None)
        return body

    def _barrier(self, prompt: str) -> int:
        """Send the one-token barrier request; return the retries it needed."""
        self.stats["barrier_requests"] += 1
        text = "1" if prompt.startswith("0") else "0"
        wire = self.server_kind.wire
        _, retries = self._send("POST", wire.path(False), wire.barrier_body(self._resolve_model(), text))
        return retries

    def _complete(self, request: Request) -> Completion:
        body = self._body(request)
        kind, chat = self.server_kind, self.model_kind == "chat"
        barrier_retries = self._barrier(request.prompt) if self.isolate_calls and kind.barrier else 0
        started = self._clock()
        answer, call_retries = self._send("POST", kind.wire.path(chat), body)
        retries = barrier_retries + call_retries  # every re-sent request this call needed
        seconds = self._clock() - started
        try:
            reply = kind.wire.reply(answer, chat)
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            raise ServerError(f"{self.base_url} answered without {kind.wire.needs_usage}: {str(answer)[:200]}",
                              f"labkit needs the answer of {kind.wire.path(chat)} with its token counts; "
                              "is --server-kind right?", attempts=call_retries + 1) from exc
        return Completion(text=reply.text, prompt_tokens=reply.prompt_tokens,
                          completion_tokens=reply.completion_tokens, seconds=seconds,
                          grammar_used=request.schema is not None, finish_reason=reply.finish_reason,
                          retries=retries, cached_tokens=reply.cached_tokens)
