"""An OpenAI-compatible ``/v1/completions`` client (stdlib ``urllib`` only): llama.cpp servers, vLLM, Ollama.

Why plain completions: the same few-shot prompts must reach the model unchanged, whichever backend
serves it (see :mod:`labkit.llm.llamacpp`).

How a schema reaches the server (``schema_mode``):

- ``"grammar"`` (default): the schema is turned into GBNF here (:func:`compile_schema`), checked with
  llama.cpp's parser, and sent as the ``grammar`` field. ``python -m llama_cpp.server`` accepts
  exactly this on ``/v1/completions`` (``CreateCompletionRequest.grammar``; it has no
  ``response_format`` or ``json_schema`` field there), and so does llama.cpp's own ``llama-server``.
  The local parse check matters: llama-cpp-python hands an unparsable grammar to llama.cpp, which
  crashes the server process.
- ``"structured_outputs"``: the schema is sent as ``structured_outputs: {"json": schema}``, the field
  vLLM reads on ``/v1/completions`` (0.10.2 and later; earlier versions read ``guided_json``). Not
  tested against vLLM here: only the request body is tested.
- ``"json_schema"``: the schema is sent as ``json_schema`` (llama.cpp's ``llama-server``). Not
  tested here; ``llama_cpp.server`` silently ignores this field.
- ``"none"``: the server cannot constrain decoding; a call with a schema is an error.

A server that ignores the field returns unconstrained text, so ``grammar_used`` means "a grammar was
sent", and callers validate every answer (:func:`labkit.llm.parse.parse_json_output`) regardless.

Why ``isolate_calls``: ``llama_cpp.server`` reuses the KV cache of the previous request for any
shared prompt prefix, which changed a greedy answer in our measurements. With ``isolate_calls``
each request is preceded by a one-token "barrier" request whose prompt shares no text with it, so
every request starts from the same cache state (measured: the answer then equals a fresh
in-process call). This holds only when no other client uses the server at the same time.
"""

from __future__ import annotations

import http.client
import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from labkit.llm.backend import Backend, Completion, Request
from labkit.llm.errors import BackendError, GrammarError, ModelFileError, ServerError
from labkit.llm.grammar import check_gbnf_offline, compile_schema
from labkit.llm.modelfile import check_gguf, file_sha256

SCHEMA_MODES = ("grammar", "json_schema", "structured_outputs", "none")
_START_HINT = ("start one, e.g. `python -m labkit.llm.serve --model FILE.gguf --host 127.0.0.1 --port 8000`, "
               "or check the URL (--server).")


class OpenAICompatBackend(Backend):
    """A model behind an OpenAI-compatible server.

    ``timeout_s`` bounds each HTTP request; ``retries`` re-sends after a connection failure, a
    timeout or a 5xx/429 answer, waiting ``backoff_s * 2**i`` (``sleep`` is injectable). Every
    re-sent request is counted in :attr:`stats` and, when the call succeeds, in its
    ``Completion.retries`` — the call's own and those of its barrier request (``isolate_calls``).
    A call that fails for good raises :class:`ServerError`, whose ``attempts`` counts the requests
    of the request that gave up.
    ``model_sha256``: give it when you know it; otherwise, if the server names its model by a
    local GGUF path (``llama_cpp.server`` does), that file is hashed.
    """

    kind = "openai_http"

    def __init__(self, base_url: str, *, model: str | None = None, model_sha256: str | None = None,
                 timeout_s: float = 60.0, retries: int = 2, backoff_s: float = 0.5, schema_mode: str = "grammar",
                 isolate_calls: bool = True, api_key: str | None = None,
                 clock: Callable[[], float] = time.perf_counter, sleep: Callable[[float], None] = time.sleep,
                 cache_dir: Path | None = None) -> None:
        if schema_mode not in SCHEMA_MODES:
            raise BackendError(f"unknown schema_mode {schema_mode!r}", f"use one of {', '.join(SCHEMA_MODES)}.")
        if not base_url.startswith(("http://", "https://")):
            raise BackendError(f"server URL {base_url!r} does not start with http:// or https://",
                               "give the server's base URL, e.g. http://127.0.0.1:8000")
        url = base_url.rstrip("/")
        self.base_url = url[: -len("/v1")] if url.endswith("/v1") else url
        self.model = model
        self.timeout_s, self.retries, self.backoff_s = timeout_s, retries, backoff_s
        self.schema_mode, self.isolate_calls = schema_mode, isolate_calls
        self._api_key, self._clock, self._sleep, self._cache_dir = api_key, clock, sleep, cache_dir
        self._sha256 = model_sha256
        self._sha256_source = "given" if model_sha256 else None
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
        raise ServerError(
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

    def describe(self) -> dict[str, Any]:
        model = self._resolve_model()
        return {"backend": self.kind, "server": self.base_url, "model": model, "model_sha256": self._sha256,
                "model_sha256_source": self._sha256_source, "schema_mode": self.schema_mode,
                "isolate_calls": self.isolate_calls, "timeout_s": self.timeout_s, "retries": self.retries,
                "sampling": self.sampling()}  # counters live in .stats: they are not provenance

    def model_id(self) -> str:
        model = self._resolve_model()
        return self._sha256 or f"unhashed:{model}"

    # --- completion -------------------------------------------------------------------------------

    def _schema_fields(self, schema: dict[str, Any]) -> dict[str, Any]:
        if self.schema_mode == "none":
            raise GrammarError(f"the server at {self.base_url} is used without constrained decoding "
                               "(schema_mode='none'), but this call asks for a schema",
                               "use schema_mode='grammar' for llama.cpp servers, or call without a schema "
                               "and validate the text.")
        if self.schema_mode == "json_schema":
            return {"json_schema": schema}
        if self.schema_mode == "structured_outputs":
            return {"structured_outputs": {"json": schema}}
        compiled = compile_schema(schema)
        check_gbnf_offline(compiled.gbnf)  # an unparsable grammar would crash a llama_cpp server
        return {"grammar": compiled.gbnf}

    def _body(self, request: Request) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self._resolve_model(), "prompt": request.prompt,
                                "max_tokens": request.max_tokens, "temperature": request.temperature,
                                "seed": request.seed, **request.sampling}
        if request.stop:
            body["stop"] = list(request.stop)
        if request.schema is not None:
            body.update(self._schema_fields(request.schema))
        return body

    def _barrier(self, prompt: str) -> int:
        """Send the one-token barrier request; return the retries it needed."""
        self.stats["barrier_requests"] += 1
        text = "1" if prompt.startswith("0") else "0"
        _, retries = self._send("POST", "/v1/completions", {"model": self.model, "prompt": text, "max_tokens": 1,
                                                            "temperature": 0.0})
        return retries

    def _complete(self, request: Request) -> Completion:
        body = self._body(request)
        barrier_retries = self._barrier(request.prompt) if self.isolate_calls else 0
        started = self._clock()
        answer, call_retries = self._send("POST", "/v1/completions", body)
        retries = barrier_retries + call_retries  # every re-sent request this call needed
        seconds = self._clock() - started
        try:
            choice = answer["choices"][0]
            usage = answer["usage"]
            return Completion(text=str(choice["text"]), prompt_tokens=int(usage["prompt_tokens"]),
                              completion_tokens=int(usage["completion_tokens"]), seconds=seconds,
                              grammar_used=any(f in body for f in ("grammar", "json_schema", "structured_outputs")),
                              finish_reason=str(choice.get("finish_reason")), retries=retries)
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            raise ServerError(f"{self.base_url} answered without choices[0].text or usage token counts: "
                              f"{str(answer)[:200]}",
                              "labkit needs an OpenAI-compatible /v1/completions answer with usage counts.",
                              attempts=call_retries + 1) from exc
