"""The in-process backend on the real embedded model: determinism, seeds, grammars, bad model files."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import pytest
from conftest import MODEL_THREADS
from pydantic import BaseModel

from labkit.llm import (
    GrammarError,
    LlamaCppBackend,
    ModelFileError,
    OutputTally,
    RecordingBackend,
    ReplayBackend,
)
from labkit.llm.modelfile import embedded_model_sha256
from labkit.llm.prefix_cache import split_point
from labkit.reading.arms import example_order
from labkit.reading.equality import DEFAULT_RECORDING, declared_prefixes_by_arm, recorded_prompts, run_equality
from labkit.reading.prompts import whole_prefix, whole_prompt
from labkit.reading.runner import N_CTX, ReadingConfig

pytestmark = pytest.mark.slow

FEW_SHOT = "List three fruits:\n1. Apple\n2. Banana\n3. Cherry\n\nList three colours:\n1."
RECORD_PROMPT = ('Record: I bought 3 apples.\nJSON: {"fruit": "apple", "count": 3}\n'
                 "Record: She has 7 pears.\nJSON:")


class Fruit(BaseModel):
    fruit: Literal["apple", "pear"]
    count: int


@pytest.fixture(scope="module")
def llm(embedded_llm):
    return embedded_llm


def test_describe_names_the_embedded_model_with_its_verified_sha256(llm):
    info = llm.describe()
    assert info["backend"] == "llama_cpp" and info["embedded_model"] is True
    assert info["model_sha256"] == embedded_model_sha256()  # hashed from the file, not copied from the package
    assert info["llama_cpp_python"].startswith("0.3.")
    assert set(info["sampling"]) == {"top_k", "top_p", "min_p", "repeat_penalty"}


def test_greedy_calls_are_identical_and_independent_of_the_call_before(llm):
    first = llm.complete(FEW_SHOT, max_tokens=12)
    llm.complete("List three fruits:\n1.", max_tokens=2)  # shares a prefix: would be reused without reset
    again = llm.complete(FEW_SHOT, max_tokens=12)
    assert first.text == again.text and first.text.strip()
    assert first.prompt_tokens == again.prompt_tokens > 10
    assert 0 < first.completion_tokens <= 12 and first.seconds > 0
    assert not first.grammar_used


def test_sampling_with_a_seed_reproduces_and_seeds_vary_it(llm):
    texts = {seed: [llm.complete("List three fruits:\n1.", max_tokens=10, temperature=0.9, seed=seed).text
                    for _ in range(2)] for seed in (1, 2, 3)}
    for seed, (a, b) in texts.items():
        assert a == b, f"seed {seed} gave two different samples"
    assert len({pair[0] for pair in texts.values()}) >= 2  # different seeds do change the sample


def test_schema_constrained_output_parses_into_the_callers_model(llm):
    tally = OutputTally()
    out = llm.complete(RECORD_PROMPT, max_tokens=30, schema=Fruit.model_json_schema())
    obj = tally.parse(out.text, Fruit)
    assert out.grammar_used and tally.invalid == 0, tally.errors
    assert obj is not None and obj.fruit in ("apple", "pear")


def test_stop_sequences_end_the_completion(llm):
    out = llm.complete(FEW_SHOT, max_tokens=32, stop=["\n"])
    assert "\n" not in out.text and out.finish_reason == "stop"


def test_an_unconvertible_schema_is_an_error_before_decoding(llm):
    with pytest.raises(GrammarError, match="cannot turn this JSON schema"):
        llm.complete(RECORD_PROMPT, max_tokens=4, schema={"type": "object", "properties": {"a": {"not": {}}}})


def test_a_prompt_longer_than_the_context_is_a_clear_error(llm):
    with pytest.raises(Exception, match="n_ctx") as info:
        llm.complete("word " * 3000, max_tokens=4)
    assert type(info.value).__name__ == "BackendError"


def test_recorded_real_calls_replay_exactly(llm, tmp_path):
    path = tmp_path / "real.jsonl"
    recorder = RecordingBackend(llm, path)
    live = recorder.complete(FEW_SHOT, max_tokens=8, temperature=0.7, seed=9)
    replay = ReplayBackend(path)
    again = replay.complete(FEW_SHOT, max_tokens=8, temperature=0.7, seed=9)
    assert again.text == live.text and again.completion_tokens == live.completion_tokens and again.replayed
    assert replay.describe()["model_sha256"] == embedded_model_sha256()


# --- lazy grammar and prefix reuse (the full proof: data/bench/equality.json, tests/test_llm_speed.py) ---

RECORDING = Path(__file__).resolve().parents[1] / DEFAULT_RECORDING


@pytest.fixture(scope="module")
def llm_long(tmp_path_factory):
    """The embedded model with the context the reading comparison loads it with (its prompt-only prompts need it)."""
    return LlamaCppBackend(cache_dir=tmp_path_factory.mktemp("cache"), n_ctx=N_CTX, n_threads=MODEL_THREADS)


def _free_prompts() -> tuple[str, str, str]:
    """The prompt-only arms' declared prefix and two prompts that start with it (dev examples, seed 0)."""
    examples = example_order(ReadingConfig().task_sets()["dev"].example_tasks(), 0)
    a = whole_prompt(examples, "Route message M901 to one queue and save it under key route-M901.", [],
                     helpers=False)
    b = whole_prompt(examples, "Compare records R901 and R902 and save the differences under key diff-R901.",
                     [('{"action": "read_record", "args": {"id": "R901"}}', "ok {}")], helpers=False)
    return whole_prefix(examples, helpers=False), a, b


def test_the_prompt_tokens_are_the_ones_create_completion_reads(llm):
    out = llm.complete(FEW_SHOT, max_tokens=3)
    tokens = llm.prompt_tokens(FEW_SHOT)
    assert len(tokens) == out.prompt_tokens and list(llm._llm.input_ids[:len(tokens)]) == tokens


def test_recorded_prompts_give_the_same_token_ids_on_every_fast_path(llm_long):
    """The CI smoke of `labkit bench equality`: 4 prompts of the v2 recording, greedy, all four paths
    (the bench's record, data/bench/equality.json, covers 25 prompts per arm)."""
    declared = declared_prefixes_by_arm(RECORDING)
    prompts = recorded_prompts(RECORDING / "cassettes", declared, ["machine-model", "prompt-grammar"], 2)
    result = run_equality(llm_long, prompts)
    assert [(r["comparison"], r["arm"], r["prompts"], r["differ"]) for r in result["comparisons"]] == [
        ("lazy-vs-mask", "machine-model", 2, 0), ("lazy-vs-mask", "prompt-grammar", 2, 0),
        ("reuse-vs-fresh", "prompt-grammar", 2, 0), ("two-batches-vs-one", "prompt-grammar", 2, 0),
        ("optimised-vs-today", "prompt-grammar", 2, 0)]
    # the first prompt-grammar prompt evaluates the prefix, the second reuses it
    assert (result["reuse_hits"], result["prefix_evaluations"]) == (1, 1)
    assert (llm_long.grammar_mode, llm_long.prefixes, llm_long.prefix_reuse) == ("auto", (), True)  # restored


def test_sampled_grammar_calls_stay_on_the_masking_path_under_auto(llm):
    tokens = {}
    for mode in ("auto", "mask"):
        llm.grammar_mode = mode
        llm.complete(RECORD_PROMPT, max_tokens=20, schema=Fruit.model_json_schema(), temperature=0.9, seed=5)
        tokens[mode] = llm.last_token_ids
    llm.grammar_mode = "auto"
    assert tokens["auto"] == tokens["mask"] and len(tokens["auto"]) > 3


def test_a_declared_prefix_keeps_calls_independent_of_the_call_before(tmp_path_factory):
    prefix, a, b = _free_prompts()
    backend = LlamaCppBackend(cache_dir=tmp_path_factory.mktemp("cache"), n_ctx=N_CTX, prefixes=(prefix,),
                              n_threads=MODEL_THREADS)
    schema = {"enum": ["read_message", "read_record", "done"]}
    first = backend.complete(a, max_tokens=12, schema=schema)
    ids = backend.last_token_ids
    backend.complete(b, max_tokens=12, schema=schema)
    again = backend.complete(a, max_tokens=12, schema=schema)
    assert again.text == first.text and backend.last_token_ids == ids
    assert backend.prefix_stats.reused == 2 and backend.prefix_stats.evaluated == 1
    # the tokens read from the kept prefix are reported per call: none on the call that evaluated it
    cut = split_point(backend.prompt_tokens(a), backend.prompt_tokens(prefix))
    assert first.cached_tokens == 0 and again.cached_tokens == cut > 0
    assert "declared prefixes" in backend.describe()["prefix_cache"]
    with pytest.raises(Exception, match="n_ctx") as info:
        backend.complete(prefix + "word " * N_CTX, max_tokens=4)
    assert type(info.value).__name__ == "BackendError"


@pytest.mark.parametrize("content, message", [(None, "no model file"), (b"PK\x03\x04zipzip", "not a GGUF file"),
                                              (b"GGUF\x03\x00\x00\x00" + b"\0" * 64, "llama.cpp could not load")])
def test_bad_model_files_are_clear_errors(tmp_path, content, message):
    path = tmp_path / "model.gguf"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(ModelFileError, match=message):
        LlamaCppBackend(path)


def test_a_declared_prefix_is_found_inside_a_chat_template():
    """A chat model reads the prefix after the template's opening; a template that rewrites it gives none."""
    opening = "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n"

    class Chat:
        def render_prompt(self, prompt: str) -> tuple[str, list[str]]:
            return f"{opening}{prompt}<|im_end|>\n<|im_start|>assistant\n", []

    class Shouting:
        def render_prompt(self, prompt: str) -> tuple[str, list[str]]:
            return prompt.upper(), []

    prefix = "Tools:\n- read(id)\n\nNow\n"
    rendered = LlamaCppBackend.render_prefix(Chat(), prefix)  # type: ignore[arg-type]
    assert rendered == opening + prefix
    assert Chat().render_prompt(prefix + "Task: x")[0].startswith(rendered)
    assert LlamaCppBackend.render_prefix(Shouting(), prefix) == ""  # type: ignore[arg-type]


def test_a_chat_model_reads_a_conversation_s_turns_in_its_template():
    """With turns, the template renders each as its role's turn; without, the prompt is one user turn."""
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    chatml = ("{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
              "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")

    class Chat:
        _formatter = Jinja2ChatFormatter(template=chatml, eos_token="<|im_end|>", bos_token="",
                                         add_generation_prompt=True)

    class Base:
        _formatter = None

    turns = (("user", "fix it"), ("assistant", '{"action": "run_tests"}'), ("user", "1 failed"))
    rendered, stop = LlamaCppBackend.render_prompt(Chat(), "fix it\n> ...", turns)  # type: ignore[arg-type]
    assert rendered == ("<|im_start|>user\nfix it<|im_end|>\n<|im_start|>assistant\n{\"action\": \"run_tests\"}"
                        "<|im_end|>\n<|im_start|>user\n1 failed<|im_end|>\n<|im_start|>assistant\n")
    assert "<|im_end|>" in stop
    one, _ = LlamaCppBackend.render_prompt(Chat(), "fix it")  # type: ignore[arg-type]
    assert one == "<|im_start|>user\nfix it<|im_end|>\n<|im_start|>assistant\n"
    assert LlamaCppBackend.render_prompt(Base(), "fix it\n> ", turns) == ("fix it\n> ", [])  # type: ignore[arg-type]
