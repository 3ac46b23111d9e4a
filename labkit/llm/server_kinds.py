"""Server kinds: one declaration per kind of OpenAI-compatible server, saying how to talk to it.

They differ in chat turns, the schema's field (unknown fields are ignored silently: :func:`probe_schema`),
keeping calls independent and token counts. Add one :class:`ServerKind` to :data:`SERVER_KINDS` with its
test; the documentation each relies on is cited in docs/your-own-model.md."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from labkit.llm.backend import Request
from labkit.llm.errors import BackendError, GrammarError
from labkit.llm.grammar import check_gbnf_offline, compile_schema

SchemaFields = Callable[[dict[str, Any]], dict[str, Any]]
ModelKind = Literal["base", "chat"]


# --------------------------------------------------------------------- how a schema reaches a server
def grammar_field(schema: dict[str, Any]) -> dict[str, Any]:
    """The kit's GBNF for ``schema``, parsed here first: an unparsable grammar crashes a llama_cpp server."""
    compiled = compile_schema(schema)
    check_gbnf_offline(compiled.gbnf)
    return {"grammar": compiled.gbnf}


def json_schema_field(schema: dict[str, Any]) -> dict[str, Any]:
    """llama-server's own field: the server turns the schema into a grammar."""
    return {"json_schema": schema}


def structured_outputs_field(schema: dict[str, Any]) -> dict[str, Any]:
    """vLLM 0.10.2 and later."""
    return {"structured_outputs": {"json": schema}}


def response_format_field(schema: dict[str, Any]) -> dict[str, Any]:
    """OpenAI's structured outputs (``strict``: the schema is a constraint, not a hint)."""
    return {"response_format": {"type": "json_schema", "json_schema": {"name": "answer", "schema": schema,
                                                                       "strict": True}}}


def ollama_format_field(schema: dict[str, Any]) -> dict[str, Any]:
    """Ollama 0.5 and later: ``format`` holds the schema itself."""
    return {"format": schema}


SCHEMA_FIELDS: dict[str, SchemaFields] = {
    "grammar": grammar_field, "json_schema": json_schema_field, "structured_outputs": structured_outputs_field,
    "response_format": response_format_field, "format": ollama_format_field,
}
"""Every way a schema is sent, by the name a request records (``grammar_used`` means one was sent)."""


# ------------------------------------------------------------------------------- the wire formats
@dataclass(frozen=True)
class Reply:
    """What a server's answer says, whatever its wire format."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str
    cached_tokens: int = 0


def turns_of(request: Request) -> list[dict[str, str]]:
    """A request as chat messages: its conversation's turns, or its prompt as one user turn."""
    turns = request.messages or (("user", request.prompt),)
    return [{"role": role, "content": text} for role, text in turns]


def cached_prompt_tokens(answer: Mapping[str, Any]) -> int:
    """Prompt tokens an answer says came from the server's cache (``cached_tokens`` or ``timings.cache_n``)."""
    details = (answer.get("usage") or {}).get("prompt_tokens_details") or {}
    if isinstance(details, Mapping) and details.get("cached_tokens") is not None:
        return int(details["cached_tokens"])
    timings = answer.get("timings") or {}
    return int(timings.get("cache_n") or 0) if isinstance(timings, Mapping) else 0


@dataclass(frozen=True)
class OpenAIWire:
    """``/v1/completions`` and ``/v1/chat/completions``; sampling knobs at the top level of the body."""

    name: str = "openai"

    def path(self, chat: bool) -> str:
        return "/v1/chat/completions" if chat else "/v1/completions"

    def body(self, request: Request, model: str, chat: bool, sampling: Mapping[str, Any]) -> dict[str, Any]:
        head: dict[str, Any] = {"model": model}
        if chat:
            head["messages"] = turns_of(request)
        else:
            head["prompt"] = request.prompt
        body = {**head, "max_tokens": request.max_tokens, "temperature": request.temperature,
                "seed": request.seed, **sampling}
        if request.stop:
            body["stop"] = list(request.stop)
        return body

    def reply(self, answer: dict[str, Any], chat: bool) -> Reply:
        choice = answer["choices"][0]
        usage = answer["usage"]
        text = choice["message"]["content"] if chat else choice["text"]
        return Reply(str(text or ""), int(usage["prompt_tokens"]), int(usage["completion_tokens"]),
                     str(choice.get("finish_reason")), cached_prompt_tokens(answer))

    def barrier_body(self, model: str, text: str) -> dict[str, Any]:
        return {"model": model, "prompt": text, "max_tokens": 1, "temperature": 0.0}

    needs_usage = "choices[0].text (chat: choices[0].message.content) and usage token counts"


@dataclass(frozen=True)
class OllamaWire:
    """Ollama's own API: ``/api/generate`` (``raw``: no template) and ``/api/chat``; sampling in ``options``."""

    name: str = "ollama"

    def path(self, chat: bool) -> str:
        return "/api/chat" if chat else "/api/generate"

    def body(self, request: Request, model: str, chat: bool, sampling: Mapping[str, Any]) -> dict[str, Any]:
        options: dict[str, Any] = {"num_predict": request.max_tokens, "temperature": request.temperature,
                                   "seed": request.seed, **sampling}
        if request.stop:
            options["stop"] = list(request.stop)
        head: dict[str, Any] = ({"model": model, "messages": turns_of(request)} if chat else
                                {"model": model, "prompt": request.prompt, "raw": True})
        return {**head, "stream": False, "options": options}

    def reply(self, answer: dict[str, Any], chat: bool) -> Reply:
        text = answer["message"]["content"] if chat else answer["response"]
        return Reply(str(text or ""), int(answer["prompt_eval_count"]), int(answer["eval_count"]),
                     str(answer.get("done_reason", "stop")))

    def barrier_body(self, model: str, text: str) -> dict[str, Any]:
        return {"model": model, "prompt": text, "raw": True, "stream": False,
                "options": {"num_predict": 1, "temperature": 0.0}}

    needs_usage = "response (chat: message.content), prompt_eval_count and eval_count"


Wire = OpenAIWire | OllamaWire


# ------------------------------------------------------------------------------ what a server says
def fetch_json(url: str, *, body: dict[str, Any] | None = None, timeout_s: float = 5.0,
               api_key: str | None = None) -> Any:
    """One GET (or POST with ``body``) for detection; None when the server has no such endpoint or it fails."""
    headers = {"Content-Type": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, headers=headers, method="GET" if body is None else "POST")
    try:
        with urllib.request.urlopen(req, timeout=timeout_s) as answer:
            return json.loads(answer.read().decode())
    except (urllib.error.URLError, OSError, ValueError):
        return None


@dataclass
class ServerFacts:
    """What a server said about itself, fetched once and shared by the kinds' tests of it."""

    base_url: str
    timeout_s: float = 5.0
    api_key: str | None = None
    _cache: dict[str, Any] = field(default_factory=dict)

    def get(self, path: str, body: dict[str, Any] | None = None) -> Any:
        key = path if body is None else f"{path} {json.dumps(body, sort_keys=True)}"
        if key not in self._cache:
            self._cache[key] = fetch_json(f"{self.base_url}{path}", body=body, timeout_s=self.timeout_s,
                                          api_key=self.api_key)
        return self._cache[key]

    def owned_by(self) -> str | None:
        models = self.get("/v1/models")
        try:
            return str(models["data"][0]["owned_by"])
        except (KeyError, IndexError, TypeError):
            return None


ChatDecision = tuple[ModelKind | None, str]  # (base/chat, or None: the server does not say; how it was decided)


def _registry_kind(facts: ServerFacts, model: str) -> ChatDecision:
    """llama_cpp.server names its model by its file: the registry knows a registered file's kind."""
    from labkit.llm.models import spec_for_path

    path = Path(model)
    spec = spec_for_path(path) if path.is_file() else None
    if spec is not None:
        return spec.kind, f"the served file is the registry's {spec.name} ({spec.kind} model)"
    return "base", "the served file is not a registered chat model: treated as a base model, as in process"


def _props_kind(facts: ServerFacts, model: str) -> ChatDecision:
    """llama-server names the template it applies in ``/props``; for a GGUF without one it may name a stand-in
    (such as ChatML), so a base model served by it needs ``--server-model-kind base``."""
    props = facts.get("/props")
    template = props.get("chat_template") if isinstance(props, dict) else None
    if template:
        return "chat", "/props names a chat template"
    if isinstance(props, dict):
        return "base", "/props names no chat template"
    return None, "/props did not answer"


def _ollama_kind(facts: ServerFacts, model: str) -> ChatDecision:
    shown = facts.get("/api/show", {"model": model})
    if not isinstance(shown, dict) or "template" not in shown:
        return None, "/api/show did not name the model's template"
    if str(shown["template"]).strip() in ("", "{{ .Prompt }}"):
        return "base", "/api/show: the template passes the prompt through"
    return "chat", "/api/show names a chat template"


def _unknown_kind(facts: ServerFacts, model: str) -> ChatDecision:
    return None, "this kind of server does not say whether its model has a chat template"


# ---------------------------------------------------------------------------------- the declaration
@dataclass(frozen=True)
class ServerKind:
    """One kind of server: how it takes a call, constrains it, keeps it independent, counts its tokens.

    ``plain_schema``/``chat_schema``: keys of :data:`SCHEMA_FIELDS`; ``fresh_fields`` or ``barrier`` keep
    calls independent; ``renames`` sampling knobs (None drops one); ``is_this`` and ``model_kind`` recognise."""

    name: str
    label: str
    start: str
    wire: Wire
    plain_schema: str | None
    chat_schema: str | None
    fresh_fields: Mapping[str, Any]
    barrier: bool
    is_this: Callable[[ServerFacts], bool]
    model_kind: Callable[[ServerFacts, str], ChatDecision]
    unknown_model_kind: ModelKind = "chat"
    renames: Mapping[str, str | None] = field(default_factory=dict)
    schema_fix: str = ""

    def schema_fields(self, schema: dict[str, Any], chat: bool) -> dict[str, Any]:
        """The body fields that carry ``schema``; refused where the endpoint cannot take one."""
        mode = self.chat_schema if chat else self.plain_schema
        if mode is None:
            raise GrammarError(f"a {self.label} takes no schema on {self.wire.path(chat)}",
                               "call without a schema and validate the text, or use a server that "
                               "constrains decoding.")
        return SCHEMA_FIELDS[mode](schema)

    def sampling(self, knobs: Mapping[str, Any]) -> dict[str, Any]:
        """The kit's sampling knobs under this server's names."""
        out: dict[str, Any] = {}
        for name, value in knobs.items():
            renamed = self.renames.get(name, name)
            if renamed is not None:
                out[renamed] = value
        return out

    def body(self, request: Request, model: str, chat: bool, knobs: Mapping[str, Any]) -> dict[str, Any]:
        """The whole request body: the call, its schema, and what keeps it independent."""
        body = self.wire.body(request, model, chat, self.sampling(knobs))
        if request.schema is not None:
            body.update(self.schema_fields(request.schema, chat))
        body.update(self.fresh_fields)
        return body

    @property
    def isolation(self) -> str:
        """How a call is kept independent of the one before, in words for provenance and the doctor."""
        if self.fresh_fields:
            return "per request: " + ", ".join(f"{k}={json.dumps(v)}" for k, v in self.fresh_fields.items())
        if self.barrier:
            return "barrier request before each call (holds while no other client uses the server)"
        return "none needed (the server's prefix cache does not change answers)"


def _is_llama_server(facts: ServerFacts) -> bool:
    props = facts.get("/props")
    return facts.owned_by() == "llamacpp" or (isinstance(props, dict) and "default_generation_settings" in props)


def _is_ollama(facts: ServerFacts) -> bool:
    version = facts.get("/api/version")
    return isinstance(version, dict) and "version" in version and facts.owned_by() != "vllm"


SERVER_KINDS: dict[str, ServerKind] = {kind.name: kind for kind in (
    ServerKind(
        name="llama-cpp-python", label="llama_cpp.server (llama-cpp-python)",
        start="python -m labkit.llm.serve --model FILE.gguf --host 127.0.0.1 --port 8000   "
              "# or: python -m llama_cpp.server with the same options",
        wire=OpenAIWire(), plain_schema="grammar", chat_schema="grammar", fresh_fields={}, barrier=True,
        is_this=lambda facts: facts.owned_by() == "me" and facts.get("/props") is None,
        model_kind=_registry_kind, unknown_model_kind="base",
        schema_fix="upgrade llama-cpp-python to >=0.3.16 (its server reads `grammar`)"),
    ServerKind(
        name="llama-server", label="llama.cpp llama-server",
        start="llama-server -m FILE.gguf --host 127.0.0.1 --port 8080",
        wire=OpenAIWire(), plain_schema="grammar", chat_schema="grammar", fresh_fields={"cache_prompt": False},
        barrier=False, is_this=_is_llama_server, model_kind=_props_kind,
        schema_fix="use a recent llama.cpp build (its server reads `grammar`)"),
    ServerKind(
        name="vllm", label="vLLM", start="vllm serve MODEL --host 127.0.0.1 --port 8000",
        wire=OpenAIWire(), plain_schema="structured_outputs", chat_schema="structured_outputs", fresh_fields={},
        barrier=False, is_this=lambda facts: facts.owned_by() == "vllm", model_kind=_unknown_kind,
        renames={"repeat_penalty": "repetition_penalty"},
        schema_fix="use vLLM 0.10.2 or later (it reads `structured_outputs`)"),
    ServerKind(
        name="ollama", label="Ollama", start="ollama serve   # then: ollama pull MODEL",
        wire=OllamaWire(), plain_schema="format", chat_schema="format", fresh_fields={}, barrier=True,
        is_this=_is_ollama, model_kind=_ollama_kind,
        schema_fix="use Ollama 0.5 or later (it reads a schema in `format`)"),
    ServerKind(
        name="openai", label="generic OpenAI-compatible server", start="(your server's own command)",
        wire=OpenAIWire(), plain_schema="response_format", chat_schema="response_format", fresh_fields={},
        barrier=True, is_this=lambda facts: True, model_kind=_unknown_kind,
        schema_fix="use a server that enforces `response_format` json_schema, or one of the other kinds"),
)}
"""Every kind, in the order :func:`detect_kind` tries them (the generic one last: it matches anything)."""

KIND_CHOICES = ("auto", *SERVER_KINDS)


def legacy_kind(schema_mode: str) -> ServerKind:
    """The kind a server without ``server_kind`` is spoken to as: exactly what was always sent (plain
    completions, ``schema_mode``, a barrier), so recordings keep their requests."""
    placement = {"grammar": "grammar", "json_schema": "json_schema", "structured_outputs": "structured_outputs",
                 "none": None}[schema_mode]
    return ServerKind(name=f"unspecified ({schema_mode})", label="OpenAI-compatible server",
                      start=SERVER_KINDS["llama-cpp-python"].start, wire=OpenAIWire(), plain_schema=placement,
                      chat_schema=placement, fresh_fields={}, barrier=True, is_this=lambda facts: False,
                      model_kind=lambda facts, model: ("base", "no --server-kind: plain completions"),
                      unknown_model_kind="base")


def get_kind(name: str) -> ServerKind:
    """The declaration of kind ``name``; an unknown name is an error listing the known ones."""
    if name not in SERVER_KINDS:
        raise BackendError(f"unknown server kind {name!r}", f"use one of: {', '.join(KIND_CHOICES)}.")
    return SERVER_KINDS[name]


def detect_kind(facts: ServerFacts) -> ServerKind:
    """The first kind whose test the server's answers pass (the generic kind when none does)."""
    return next(kind for kind in SERVER_KINDS.values() if kind.is_this(facts))


# ---------------------------------------------------------------------------- is the schema enforced?
PROBE_WORD = "zyzzogeton"
PROBE_SCHEMA: dict[str, Any] = {"type": "object", "properties": {"colour": {"type": "string", "enum": [PROBE_WORD]}},
                                "required": ["colour"], "additionalProperties": False}
PROBE_PROMPT = "Name one colour of the rainbow.\nColour:"


@dataclass(frozen=True)
class SchemaProbe:
    """What a call under :data:`PROBE_SCHEMA` returned, and whether the schema held."""

    enforced: bool
    text: str

    @property
    def detail(self) -> str:
        if self.enforced:
            return f"enforced: asked for a colour under a schema that allows only {PROBE_WORD!r}, it answered that"
        return (f"IGNORED: under a schema that allows only {{\"colour\": {PROBE_WORD!r}}} the server answered "
                f"{self.text[:80]!r}")


def probe_outcome(text: str) -> SchemaProbe:
    """Judge the probe's answer: the schema held only if the text is exactly the one object it allows."""
    try:
        enforced = json.loads(text) == {"colour": PROBE_WORD}
    except ValueError:
        enforced = False
    return SchemaProbe(enforced, text)


def probe_schema(backend: Any) -> SchemaProbe:
    """Send a schema a free answer would almost surely break; an enforcing server can only write
    ``{"colour": "zyzzogeton"}``."""
    out = backend.complete(PROBE_PROMPT, max_tokens=32, schema=PROBE_SCHEMA)
    return probe_outcome(out.text)
