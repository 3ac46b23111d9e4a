"""Every server kind's requests and answers, against stub servers on loopback built from each server's docs.

A :class:`KindStub` answers like one kind of server: its detection endpoints (``/v1/models`` with
its ``owned_by``, llama-server's ``/props``, Ollama's ``/api/version`` and ``/api/show``), and its
completion endpoints in its own wire format. It reads the schema only from the field its kind
reads (or, with ``obeys_schema=False``, never), so a request that puts the schema in the wrong
place is answered as a free answer would be: the probe and these tests see it.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from labkit.cli import build_parser, main
from labkit.core.errors import LabkitError
from labkit.llm.errors import BackendError, ServerError
from labkit.llm.http import OpenAICompatBackend
from labkit.llm.server_kinds import PROBE_SCHEMA, PROBE_WORD, SERVER_KINDS, probe_outcome, probe_schema

SHA = "cd" * 32
OWNED_BY = {"llama-cpp-python": "me", "llama-server": "llamacpp", "vllm": "vllm", "ollama": "library",
            "openai": "organization-owner"}
SCHEMA_FIELD = {"llama-cpp-python": "grammar", "llama-server": "grammar", "vllm": "structured_outputs",
                "ollama": "format", "openai": "response_format"}
CHAT_TEMPLATE = "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>{% endfor %}"


class KindStub:
    """A loopback server that answers as kind ``kind`` does; every POST body is kept in :attr:`posts`."""

    def __init__(self, json_server: Any, kind: str, *, obeys_schema: bool = True, chat_template: bool = True,
                 model: str = "stub-model") -> None:
        self.kind, self.obeys_schema, self.chat_template, self.model = kind, obeys_schema, chat_template, model
        self._http = json_server(self._answer)
        self.url = self._http.url

    @property
    def posts(self) -> list[tuple[str, dict[str, Any]]]:
        return [(path, body) for method, path, body in self._http.requests if method == "POST"]

    def _answer(self, method: str, path: str, body: dict[str, Any], n: int) -> tuple[int, dict[str, Any]] | None:
        answer = self.get(path) if method == "GET" else self.post(path, body)
        return None if answer is None else (200, answer)

    # --- what this kind of server says --------------------------------------------------------
    def get(self, path: str) -> dict[str, Any] | None:
        if path == "/v1/models":
            return {"object": "list", "data": [{"id": self.model, "object": "model", "owned_by": OWNED_BY[self.kind]}]}
        if path == "/props" and self.kind == "llama-server":
            return {"default_generation_settings": {"n_ctx": 4096}, "total_slots": 1,
                    "chat_template": CHAT_TEMPLATE if self.chat_template else ""}
        if path == "/api/version" and self.kind == "ollama":
            return {"version": "0.12.6"}
        return None

    def _text(self, body: dict[str, Any]) -> str:
        """The probe's one allowed object when the schema arrived where this kind reads it, else free text."""
        sent = body.get(SCHEMA_FIELD[self.kind])
        if self.obeys_schema and sent is not None and PROBE_WORD in json.dumps(sent):
            return json.dumps({"colour": PROBE_WORD})
        return " Red, like a fire engine."

    def post(self, path: str, body: dict[str, Any]) -> dict[str, Any] | None:
        text = self._text(body)
        if self.kind == "ollama":
            if path == "/api/show":
                return {"template": "{{ .System }}<|user|>{{ .Prompt }}" if self.chat_template else "{{ .Prompt }}"}
            if path == "/api/generate":
                return {"model": self.model, "response": text, "done": True, "done_reason": "stop",
                        "prompt_eval_count": 11, "eval_count": 7}
            if path == "/api/chat":
                return {"model": self.model, "message": {"role": "assistant", "content": text}, "done": True,
                        "done_reason": "stop", "prompt_eval_count": 13, "eval_count": 8}
            return None
        usage = {"prompt_tokens": 9, "completion_tokens": 5, "total_tokens": 14}
        if path == "/v1/completions":
            return {"object": "text_completion", "choices": [{"text": text, "finish_reason": "stop"}], "usage": usage}
        if path == "/v1/chat/completions":
            return {"object": "chat.completion", "usage": usage,
                    "choices": [{"message": {"role": "assistant", "content": text}, "finish_reason": "stop"}]}
        return None

    def calls(self) -> list[tuple[str, dict[str, Any]]]:
        """The POSTs but the barrier requests (one token) and Ollama's /api/show."""
        return [(p, b) for p, b in self.posts if p != "/api/show"
                and (b.get("max_tokens") or b.get("options", {}).get("num_predict")) != 1]


@pytest.fixture
def stub_factory(json_server: Any) -> Any:
    return lambda kind, **kw: KindStub(json_server, kind, **kw)


def client(stub: KindStub, kind: str = "auto", **kw: Any) -> OpenAICompatBackend:
    return OpenAICompatBackend(stub.url, model_sha256=SHA, server_kind=kind, sleep=lambda s: None, **kw)


# --- detection ------------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", list(SERVER_KINDS))
def test_each_kind_is_detected_from_the_servers_answers(stub_factory, kind):
    backend = client(stub_factory(kind))
    assert backend.server_kind.name == kind
    assert backend.describe()["server_kind"] == kind and backend.describe()["server_kind_source"] == "auto"


@pytest.mark.parametrize(("kind", "template", "expected"), [
    ("llama-server", True, "chat"), ("llama-server", False, "base"),
    ("ollama", True, "chat"), ("ollama", False, "base"),
    ("vllm", True, "chat"), ("openai", True, "chat"),  # these do not say: a chat model is assumed
    ("llama-cpp-python", True, "base"),  # a file the registry does not know: base, as in process
])
def test_chat_or_base_is_asked_of_the_server_where_it_can_say(stub_factory, kind, template, expected):
    backend = client(stub_factory(kind, chat_template=template))
    assert backend.model_kind == expected
    source = backend.describe()["model_kind_source"]
    assert ("assumed" in source) == (kind in ("vllm", "openai"))


def test_a_given_model_kind_wins_over_the_server(stub_factory):
    stub = stub_factory("llama-server", chat_template=True)
    backend = client(stub, model_kind="base")
    assert backend.model_kind == "base" and backend.describe()["model_kind_source"] == "given"
    backend.complete("x")
    assert [p for p, _ in stub.calls()] == ["/v1/completions"]


# --- what each kind sends -------------------------------------------------------------------------

@pytest.mark.parametrize("kind", list(SERVER_KINDS))
@pytest.mark.parametrize("chat", [False, True])
def test_each_kind_sends_a_call_where_its_server_reads_it(stub_factory, kind, chat):
    stub = stub_factory(kind)
    backend = client(stub, kind, model_kind="chat" if chat else "base")
    out = backend.complete("Say hi.", max_tokens=7, stop=["\n"], messages=[("user", "Hi"), ("assistant", "Hello"),
                                                                           ("user", "Say hi.")])
    ((path, body),) = stub.calls()
    declared = SERVER_KINDS[kind]
    assert path == declared.wire.path(chat)
    if chat:
        assert body["messages"] == [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"},
                                    {"role": "user", "content": "Say hi."}] and "prompt" not in body
    else:
        assert body["prompt"] == "Say hi." and "messages" not in body
    if kind == "ollama":  # Ollama's own API: sampling and the token cap in options, no template on plain calls
        assert body["options"]["num_predict"] == 7 and body["options"]["stop"] == ["\n"]
        assert body["options"]["top_k"] == 40 and body["stream"] is False
        assert body.get("raw") is (None if chat else True)
        assert (out.prompt_tokens, out.completion_tokens) == ((13, 8) if chat else (11, 7))
    else:
        assert body["max_tokens"] == 7 and body["stop"] == ["\n"] and body["model"] == "stub-model"
        assert (out.prompt_tokens, out.completion_tokens) == (9, 5)
    if kind == "vllm":
        assert body["repetition_penalty"] == 1.0 and "repeat_penalty" not in body
    assert out.text == " Red, like a fire engine." and not out.grammar_used


@pytest.mark.parametrize("kind", list(SERVER_KINDS))
def test_each_kind_puts_the_schema_in_its_servers_field_and_the_probe_sees_it_enforced(stub_factory, kind):
    stub = stub_factory(kind, chat_template=False)
    backend = client(stub, kind)
    probe = probe_schema(backend)
    assert probe.enforced, probe.detail
    ((_, body),) = stub.calls()
    others = {"grammar", "json_schema", "structured_outputs", "response_format", "format"} - {SCHEMA_FIELD[kind]}
    assert SCHEMA_FIELD[kind] in body and not others & set(body)
    sent = body[SCHEMA_FIELD[kind]]
    expected = {"structured_outputs": {"json": PROBE_SCHEMA}, "format": PROBE_SCHEMA,
                "response_format": {"type": "json_schema",
                                    "json_schema": {"name": "answer", "schema": PROBE_SCHEMA, "strict": True}}}
    if SCHEMA_FIELD[kind] == "grammar":
        assert isinstance(sent, str) and PROBE_WORD in sent  # the kit's own GBNF, parsed before it is sent
    else:
        assert sent == expected[SCHEMA_FIELD[kind]]


def test_a_server_that_ignores_the_schema_is_caught_by_the_probe(stub_factory):
    backend = client(stub_factory("vllm", obeys_schema=False), "vllm")
    probe = probe_schema(backend)
    assert not probe.enforced and "IGNORED" in probe.detail and "Red" in probe.detail
    assert probe_outcome('{"colour": "red"}').enforced is False
    assert probe_outcome(json.dumps({"colour": PROBE_WORD})).enforced is True


@pytest.mark.parametrize(("kind", "barriers", "fresh"), [
    ("llama-cpp-python", 1, {}), ("llama-server", 0, {"cache_prompt": False}), ("vllm", 0, {}),
    ("ollama", 1, {}), ("openai", 1, {}),
])
def test_a_call_is_made_independent_by_a_request_field_where_the_server_has_one(stub_factory, kind, barriers, fresh):
    stub = stub_factory(kind, chat_template=False)
    backend = client(stub, kind)
    backend.complete("0 is where this prompt starts")
    assert backend.stats["barrier_requests"] == barriers
    barrier_bodies = [b for p, b in stub.posts if (p, b) not in stub.calls() and p != "/api/show"]
    assert len(barrier_bodies) == barriers
    if barriers:
        assert barrier_bodies[0]["prompt"] == "1"  # shares no text with the call
    ((_, body),) = stub.calls()
    assert {k: body[k] for k in fresh} == fresh
    assert ("cache_prompt" in body) == bool(fresh)
    # without isolation: neither the barrier nor the field
    quiet = client(stub, kind, isolate_calls=False)
    quiet.complete("again")
    assert quiet.stats["barrier_requests"] == 0 and "cache_prompt" not in stub.calls()[-1][1]


def test_without_a_kind_the_request_is_what_it_always_was(stub_factory):
    """The default path: plain completions, the grammar field, the barrier, exactly these keys in this order."""
    stub = stub_factory("llama-server", chat_template=True)
    backend = OpenAICompatBackend(stub.url, model="stub-model", model_sha256=SHA)
    backend.complete("Hi", max_tokens=3, messages=[("user", "Hi")])
    (barrier_path, barrier), (path, body) = stub.posts
    assert (barrier_path, barrier) == ("/v1/completions", {"model": "stub-model", "prompt": "0", "max_tokens": 1,
                                                           "temperature": 0.0})
    assert path == "/v1/completions"
    assert list(body) == ["model", "prompt", "max_tokens", "temperature", "seed", "top_k", "top_p", "min_p",
                          "repeat_penalty"]
    assert "server_kind" not in backend.describe()


def test_an_answer_of_the_wrong_shape_names_what_the_kind_needs(stub_factory):
    stub = stub_factory("openai")
    backend = client(stub, "ollama", model_kind="base")  # an OpenAI server spoken to as Ollama
    with pytest.raises(ServerError, match=r"HTTP 404|prompt_eval_count"):
        backend.complete("x")


def test_kind_options_are_checked():
    with pytest.raises(BackendError, match="unknown server kind"):
        OpenAICompatBackend("http://127.0.0.1:1", server_kind="lmstudio")
    with pytest.raises(BackendError, match="drop --schema-mode"):
        OpenAICompatBackend("http://127.0.0.1:1", server_kind="vllm", schema_mode="json_schema")
    with pytest.raises(BackendError, match="without server_kind"):
        OpenAICompatBackend("http://127.0.0.1:1", model_kind="chat")


def test_the_shared_server_options_pass_the_kind_to_every_command(stub_factory):
    from labkit.llm.server_options import connect_servers

    stub = stub_factory("llama-server", chat_template=True)
    args = build_parser().parse_args(["compare", "reading", "--server", stub.url, "--server-kind", "auto",
                                      "--model-sha256", SHA])
    (server,) = connect_servers(args, several=False)
    assert server.server_kind.name == "llama-server" and server.model_kind == "chat"
    with pytest.raises(LabkitError, match="--server-kind"):
        connect_servers(build_parser().parse_args(["compare", "reading", "--server-kind", "vllm"]), several=False)


# --- labkit doctor --server -----------------------------------------------------------------------

def test_doctor_reports_a_schema_ignoring_server_with_the_fix(stub_factory, capsys):
    stub = stub_factory("vllm", obeys_schema=False)
    assert main(["doctor", "--server", stub.url]) == 1
    printed = capsys.readouterr().out
    assert "FAIL  schema enforced" in printed and "IGNORED" in printed
    assert "fix: use vLLM 0.10.2 or later" in printed
    for line in ("ok    reachable", "ok    server kind      vllm", "ok    model            stub-model",
                 "ok    chat or base     chat model", "ok    speed"):
        assert line in printed
    assert "1 problem(s): schema enforced" in printed


def test_doctor_passes_a_server_that_enforces_the_schema(stub_factory, capsys):
    stub = stub_factory("ollama", chat_template=False)
    assert main(["doctor", "--server", stub.url, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    found = {f["check"]: f for f in report["findings"]}
    assert report["ok"] and list(found) == ["reachable", "server kind", "model", "chat or base",
                                            "schema enforced", "speed"]
    assert found["server kind"]["detail"].startswith("ollama") and "barrier" in found["server kind"]["detail"]
    assert found["chat or base"]["detail"].startswith("base model")
    assert "7 tokens in" in found["speed"]["detail"]  # Ollama's eval_count


def test_doctor_says_how_to_start_a_server_that_is_down(unused_port, capsys):
    assert main(["doctor", "--server", f"http://127.0.0.1:{unused_port}", "--server-kind", "llama-server"]) == 1
    printed = capsys.readouterr().out
    assert "FAIL  reachable" in printed and "llama-server -m FILE.gguf" in printed
    assert "schema enforced" not in printed  # the checks stop when nothing answers


def test_doctor_refuses_a_model_the_server_does_not_serve(stub_factory, capsys):
    stub = stub_factory("vllm")
    assert main(["doctor", "--server", stub.url, "--server-model", "other"]) == 1
    printed = capsys.readouterr().out
    assert "FAIL  model" in printed and "fix: --server-model stub-model" in printed


def test_doctor_refuses_server_options_without_a_server(capsys):
    assert main(["doctor", "--server-kind", "vllm"]) != 0
    assert "--server-kind describe(s) a server, but no --server is given" in capsys.readouterr().err


def test_labkit_complete_sends_one_chat_turn_to_a_chat_model_and_records_the_kind(stub_factory, capsys):
    stub = stub_factory("llama-server", chat_template=True)
    assert main(["complete", "Name a fruit.", "--server", stub.url, "--server-kind", "auto", "--model-sha256", SHA,
                 "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    ((path, body),) = stub.calls()
    assert path == "/v1/chat/completions" and body["messages"] == [{"role": "user", "content": "Name a fruit."}]
    assert body["cache_prompt"] is False
    backend = printed["backend"]
    assert (backend["server_kind"], backend["model_kind"], backend["isolation"]) == (
        "llama-server", "chat", "per request: cache_prompt=false")
