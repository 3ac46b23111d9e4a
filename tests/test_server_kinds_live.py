"""Server kinds against a real ``llama_cpp.server`` on loopback (``python -m labkit.llm.serve``, one thread).

The embedded Gemma 270M (a base model): the kind is detected, plain completions are kept, and the
schema probe finds the schema enforced; ``labkit doctor --server`` passes it; sent in a field this
server does not read (llama-server's ``json_schema``), the schema is ignored and the probe says so. The opt-in Qwen chat
model, when it is already on this machine (never fetched here): chat turns go through the GGUF's own
template — the server's answer equals the in-process chat backend's — and a schema is enforced on
chat completions too. The other kinds are tested against stubs only (``test_server_kinds.py``).
"""

from __future__ import annotations

import json
from typing import Literal

import pytest
from conftest import MODEL_THREADS
from pydantic import BaseModel

from labkit.doctor.server import examine_server
from labkit.llm import OpenAICompatBackend, parse_json_output
from labkit.llm.models import get_model
from labkit.llm.server_kinds import probe_schema

pytestmark = pytest.mark.slow


class Fruit(BaseModel):
    fruit: Literal["apple", "pear"]
    count: int


RECORD = "Record: She has 7 pears.\nAs JSON with the fruit and its count:"


def test_a_base_model_server_is_detected_kept_on_plain_completions_and_enforces_a_schema(start_llama_server):
    with start_llama_server() as url:
        backend = OpenAICompatBackend(url, server_kind="auto", timeout_s=120)
        assert backend.server_kind.name == "llama-cpp-python" and backend.model_kind == "base"
        assert probe_schema(backend).enforced
        out = backend.complete(RECORD, max_tokens=24, schema=Fruit.model_json_schema())
        fruit, error = parse_json_output(out.text, Fruit)
        assert error is None and fruit is not None and out.grammar_used, out.text
        report = examine_server(url, timeout_s=120)
        assert report.ok, report.render()
        assert [f.check for f in report.findings][-1] == "speed"
        # the same server ignores llama-server's field in silence; the probe catches it
        ignored = probe_schema(OpenAICompatBackend(url, schema_mode="json_schema", timeout_s=120))
        assert not ignored.enforced, ignored.text


QWEN = get_model("qwen2.5-coder-1.5b")


@pytest.mark.skipif(QWEN.path_if_present() is None, reason="the opt-in Qwen chat model is not on this machine "
                    "(labkit models fetch qwen2.5-coder-1.5b); it is never fetched by a test")
def test_a_chat_model_server_takes_turns_through_its_template_and_enforces_a_schema(start_llama_server):
    from labkit.llm.llamacpp import LlamaCppBackend

    path = QWEN.path_if_present()
    turns = [("user", "Reply with one word: the colour of the sky on a clear day?")]
    with start_llama_server(model=path) as url:
        backend = OpenAICompatBackend(url, server_kind="auto", timeout_s=180)
        assert backend.server_kind.name == "llama-cpp-python" and backend.model_kind == "chat"
        assert "registry" in backend.describe()["model_kind_source"]
        served = backend.complete(turns[0][1], max_tokens=6, messages=turns)
        out = backend.complete(RECORD, max_tokens=24, schema=Fruit.model_json_schema())
        fruit, error = parse_json_output(out.text, Fruit)
        assert error is None and fruit == Fruit(fruit="pear", count=7), out.text
        assert json.loads(out.text) == fruit.model_dump()  # no fence, no prose: the grammar held
    local = LlamaCppBackend(path, chat=True, n_threads=MODEL_THREADS, warmup=False)
    assert served.text == local.complete(turns[0][1], max_tokens=6, messages=turns).text
