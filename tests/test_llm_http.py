"""The OpenAI-compatible client against a real ``llama_cpp.server`` on loopback, plus stub servers
on loopback for the failure paths (down, slow, flaky, rejecting)."""

from __future__ import annotations

import time
from typing import Literal

import pytest
from pydantic import BaseModel

from labkit.llm import GrammarError, OpenAICompatBackend, ServerError, parse_json_output
from labkit.llm.modelfile import embedded_model_path, embedded_model_sha256

FEW_SHOT = "List three fruits:\n1. Apple\n2. Banana\n3. Cherry\n\nList three colours:\n1."
RECORD_PROMPT = ('Record: I bought 3 apples.\nJSON: {"fruit": "apple", "count": 3}\n'
                 "Record: She has 7 pears.\nJSON:")


class Fruit(BaseModel):
    fruit: Literal["apple", "pear"]
    count: int


@pytest.fixture(scope="module")
def client(server_url, tmp_path_factory) -> OpenAICompatBackend:
    # A safety bound only: on a loaded machine one answer can take minutes; a retry then would be the machine's.
    return OpenAICompatBackend(server_url, timeout_s=900, cache_dir=tmp_path_factory.mktemp("cache"))


# --- the real server -----------------------------------------------------------------------------

@pytest.mark.slow
def test_describe_hashes_the_model_file_the_server_names(client, server_url):
    info = client.describe()
    assert info["server"] == server_url and info["model"] == str(embedded_model_path())
    assert info["model_sha256"] == embedded_model_sha256()
    assert info["model_sha256_source"].startswith("hashed")


@pytest.mark.slow
def test_isolated_calls_do_not_depend_on_the_request_before(client):
    first = client.complete(FEW_SHOT, max_tokens=12)
    client.complete("List three fruits:\n1.", max_tokens=2)  # shares a prefix the server would reuse
    again = client.complete(FEW_SHOT, max_tokens=12)
    assert first.text == again.text and first.text.strip()
    assert first.prompt_tokens > 10 and 0 < first.completion_tokens <= 12 and first.seconds > 0
    assert client.stats["barrier_requests"] >= 3 and first.retries == 0


@pytest.mark.slow
def test_server_answers_equal_the_in_process_backend(client, embedded_llm):
    local = embedded_llm
    client.complete("List three fruits:\n1.", max_tokens=2)  # a request sharing a prefix comes first
    assert client.complete(FEW_SHOT, max_tokens=12).text == local.complete(FEW_SHOT, max_tokens=12).text


@pytest.mark.slow
def test_seeded_sampling_on_the_server_reproduces(client):
    runs = [client.complete("List three fruits:\n1.", max_tokens=10, temperature=0.9, seed=s).text for s in (4, 4)]
    assert runs[0] == runs[1]


@pytest.mark.slow
def test_the_server_constrains_output_with_the_grammar(client):
    out = client.complete(RECORD_PROMPT, max_tokens=30, schema=Fruit.model_json_schema())
    obj, error = parse_json_output(out.text, Fruit)
    assert out.grammar_used and error is None, (out.text, error)
    assert obj is not None


@pytest.mark.slow
def test_a_bad_schema_is_refused_before_it_reaches_the_server(client):
    with pytest.raises(GrammarError):
        client.complete("x", max_tokens=2, schema={"type": "string", "pattern": "no anchors"})
    assert client.complete("Hello", max_tokens=2).completion_tokens >= 1  # the server is still alive


@pytest.mark.slow
def test_schema_mode_none_refuses_schemas(server_url):
    with pytest.raises(GrammarError, match="without constrained decoding"):
        OpenAICompatBackend(server_url, schema_mode="none").complete("x", schema={"type": "integer"})


# --- failure paths on loopback stubs -------------------------------------------------------------

GOOD = {"choices": [{"text": " ok", "finish_reason": "stop"}], "usage": {"prompt_tokens": 3, "completion_tokens": 1}}


def test_a_server_that_is_down_is_a_clear_error_after_counted_retries(unused_port):
    sleeps: list[float] = []
    backend = OpenAICompatBackend(f"http://127.0.0.1:{unused_port}", model="m", model_sha256="s", retries=2,
                                  backoff_s=0.1, sleep=sleeps.append, isolate_calls=False)
    with pytest.raises(ServerError, match="cannot connect") as info:
        backend.complete("hi")
    assert info.value.attempts == 3 and sleeps == [0.1, 0.2]
    assert "labkit.llm.serve" in str(info.value)  # says how to start one
    assert backend.stats == {"requests": 3, "retries": 2, "failed_calls": 1, "barrier_requests": 0}


def test_a_slow_server_times_out_with_a_clear_error(json_server):
    url = json_server(lambda method, path, body, n: (time.sleep(1.0), (200, GOOD))[1]).url
    backend = OpenAICompatBackend(url, model="m", model_sha256="s", timeout_s=0.2, retries=1,
                                  sleep=lambda s: None, isolate_calls=False)
    with pytest.raises(ServerError, match=r"no answer within 0.2 s") as info:
        backend.complete("hi")
    assert info.value.attempts == 2 and "raise timeout_s" in str(info.value)


def test_a_flaky_server_succeeds_after_a_counted_retry(json_server):
    url = json_server(lambda method, path, body, n: (503, {"error": "busy"}) if n == 1 else (200, GOOD)).url
    backend = OpenAICompatBackend(url, model="m", model_sha256="s", sleep=lambda s: None, isolate_calls=False)
    out = backend.complete("hi")
    assert (out.text, out.retries, out.prompt_tokens, out.completion_tokens) == (" ok", 1, 3, 1)
    assert backend.stats["retries"] == 1 and backend.stats["failed_calls"] == 0


def test_a_rejected_request_is_not_retried_and_shows_the_servers_message(json_server):
    url = json_server(lambda method, path, body, n: (400, {"error": "unknown model m"})).url
    backend = OpenAICompatBackend(url, model="m", model_sha256="s", sleep=lambda s: None, isolate_calls=False)
    with pytest.raises(ServerError, match=r"HTTP 400.*unknown model m") as info:
        backend.complete("hi")
    assert info.value.attempts == 1 and backend.stats["retries"] == 0


def test_an_answer_without_usage_counts_is_an_error(json_server):
    url = json_server(lambda method, path, body, n: (200, {"choices": [{"text": "x"}]})).url
    backend = OpenAICompatBackend(url, model="m", model_sha256="s", isolate_calls=False)
    with pytest.raises(ServerError, match="usage"):
        backend.complete("hi")


def test_bad_urls_and_modes_are_refused():
    with pytest.raises(Exception, match="http://"):
        OpenAICompatBackend("localhost:8000")
    with pytest.raises(Exception, match="schema_mode"):
        OpenAICompatBackend("http://127.0.0.1:1", schema_mode="magic")
    assert OpenAICompatBackend("http://127.0.0.1:8000/v1/").base_url == "http://127.0.0.1:8000"


def test_each_schema_mode_puts_the_schema_where_its_server_reads_it(json_server):
    server = json_server(lambda method, path, body, n: (200, GOOD))
    url, schema = server.url, {"type": "integer"}
    bodies = server.requests
    for mode, field in (("grammar", "grammar"), ("json_schema", "json_schema"),
                        ("structured_outputs", "structured_outputs")):
        client = OpenAICompatBackend(url, model="m", model_sha256="0" * 64, schema_mode=mode,
                                     isolate_calls=False)
        assert client.complete("x", schema=schema).grammar_used
        sent = bodies[-1][2]
        assert field in sent and not {"grammar", "json_schema", "structured_outputs"} - {field} & set(sent)
    assert bodies[-1][2]["structured_outputs"] == {"json": schema}  # vLLM's field
    assert isinstance(bodies[0][2]["grammar"], str) and bodies[1][2]["json_schema"] == schema
