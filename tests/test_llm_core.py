"""Logic of the backend layer with the scripted fake: cassettes, parsing, schema compilation, errors."""

from __future__ import annotations

import json
from typing import Literal

import pytest
from pydantic import BaseModel, Field

from labkit.core.errors import LabkitError
from labkit.llm import (
    BackendError,
    CassetteError,
    CassetteMiss,
    Completion,
    GrammarError,
    OutputTally,
    RecordingBackend,
    ReplayBackend,
    Request,
    ScriptedBackend,
    cassette_key,
    compile_schema,
    parse_json_output,
)
from labkit.llm.grammar import check_not_generic
from labkit.llm.modelfile import check_gguf, file_sha256


class Step(BaseModel):
    action: Literal["read", "write"]
    row: int = Field(ge=0, le=10)


# --- the scripted fake ---------------------------------------------------------------------------

def test_scripted_backend_answers_in_order_and_keeps_requests():
    fake = ScriptedBackend(["one two", "three"])
    first = fake.complete("p1", max_tokens=5, stop=["\n"], seed=3)
    second = fake.complete("p2 words here")
    assert (first.text, first.completion_tokens, first.prompt_tokens) == ("one two", 2, 1)
    assert (second.text, second.prompt_tokens) == ("three", 3)
    assert [r.prompt for r in fake.requests] == ["p1", "p2 words here"]
    assert fake.requests[0].stop == ("\n",) and fake.requests[0].seed == 3


def test_scripted_backend_running_out_is_a_clear_error():
    fake = ScriptedBackend(["only"])
    fake.complete("a")
    with pytest.raises(BackendError, match="only 1 answer"):
        fake.complete("b")


def test_scripted_backend_truncates_at_max_tokens():
    out = ScriptedBackend(lambda r: "a b c d e").complete("x", max_tokens=2)
    assert (out.text, out.completion_tokens, out.finish_reason) == ("a b", 2, "length")


def test_max_tokens_below_one_and_negative_temperature_are_refused():
    with pytest.raises(BackendError, match="max_tokens"):
        ScriptedBackend(["x"]).complete("p", max_tokens=0)
    with pytest.raises(BackendError, match="temperature"):
        ScriptedBackend(["x"]).complete("p", temperature=-1.0)


def test_completion_round_trips_through_a_dict():
    c = Completion(text="t", prompt_tokens=1, completion_tokens=2, seconds=0.5, grammar_used=True, retries=1)
    assert Completion.from_dict(json.loads(json.dumps(c.to_dict()))) == c


# --- cassettes -----------------------------------------------------------------------------------

def test_cassette_key_changes_with_every_input():
    base = Request(prompt="p", max_tokens=8, stop=("\n",), schema={"type": "integer"}, temperature=0.0, seed=0)
    key = cassette_key(base, "m1")
    variants = [Request(prompt="q", max_tokens=8, stop=("\n",), schema={"type": "integer"}),
                Request(prompt="p", max_tokens=9, stop=("\n",), schema={"type": "integer"}),
                Request(prompt="p", max_tokens=8, stop=(), schema={"type": "integer"}),
                Request(prompt="p", max_tokens=8, stop=("\n",), schema={"type": "string"}),
                Request(prompt="p", max_tokens=8, stop=("\n",), schema=None),
                Request(prompt="p", max_tokens=8, stop=("\n",), schema={"type": "integer"}, temperature=0.5),
                Request(prompt="p", max_tokens=8, stop=("\n",), schema={"type": "integer"}, seed=1)]
    keys = {cassette_key(v, "m1") for v in variants} | {cassette_key(base, "m2")}
    assert key not in keys and len(keys) == len(variants) + 1
    same = Request(prompt="p", max_tokens=8, stop=("\n",), schema={"type": "integer"})
    assert cassette_key(same, "m1") == key


def test_a_conversation_s_turns_are_checked_and_keyed_and_old_keys_stay(tmp_path):
    """Turns must alternate from the user's and end with it; they change the key only when given."""
    plain = Request(prompt="p")
    assert "messages" not in plain.to_dict()  # a call without turns is keyed and stored as before
    assert cassette_key(plain, "m") == cassette_key(Request(prompt="p", messages=()), "m")
    turns = (("user", "task"), ("assistant", '{"action": "run_tests"}'), ("user", "tests failed"))
    talk = Request(prompt="p", messages=turns)  # type: ignore[arg-type]
    assert cassette_key(talk, "m") != cassette_key(plain, "m")
    path = tmp_path / "calls.jsonl"
    live = ScriptedBackend(["one"])
    RecordingBackend(live, path).complete("p", messages=turns)  # type: ignore[arg-type]
    assert live.requests[0].messages == turns
    assert ReplayBackend(path).complete("p", messages=turns).text == "one"  # type: ignore[arg-type]
    with pytest.raises(CassetteMiss):
        ReplayBackend(path).complete("p")
    for wrong, says in [((("assistant", "x"), ("user", "y")), "turn 1 .*'assistant', expected 'user'"),
                        ((("user", "x"), ("user", "y")), "turn 2 .*'user', expected 'assistant'"),
                        ((("user", "x"), ("assistant", "y")), "end with the assistant")]:
        with pytest.raises(BackendError, match=says):
            ScriptedBackend(["x"]).complete("p", messages=wrong)  # type: ignore[arg-type]


def test_record_then_replay_gives_the_same_completions(tmp_path):
    path = tmp_path / "calls.jsonl"
    live = ScriptedBackend(["alpha", "beta"], seconds_per_call=0.25)
    recorder = RecordingBackend(live, path)
    a = recorder.complete("first prompt", max_tokens=4)
    b = recorder.complete("second prompt", max_tokens=4, schema={"type": "string"}, temperature=0.7, seed=5)
    replay = ReplayBackend(path)
    ra = replay.complete("first prompt", max_tokens=4)
    rb = replay.complete("second prompt", max_tokens=4, schema={"type": "string"}, temperature=0.7, seed=5)
    assert (ra.text, rb.text) == (a.text, b.text) == ("alpha", "beta")
    assert ra.replayed and rb.replayed and not a.replayed
    assert ra.seconds == 0.25 and replay.hits == 2
    assert replay.describe()["recorded_backend"] == "scripted"
    assert len(live.requests) == 2  # replay never touched the live backend


def test_replay_miss_names_key_and_prompt_and_never_falls_back(tmp_path):
    path = tmp_path / "calls.jsonl"
    RecordingBackend(ScriptedBackend(["x"]), path).complete("recorded prompt")
    replay = ReplayBackend(path)
    with pytest.raises(CassetteMiss) as info:
        replay.complete("recorded prompt", seed=1)  # same prompt, other seed: a different call
    message = str(info.value)
    assert "recorded prompt" in message and info.value.key[:16] in message and str(path) in message
    assert isinstance(info.value, LabkitError)


def test_a_damaged_cassette_line_is_reported_with_its_number(tmp_path):
    path = tmp_path / "calls.jsonl"
    RecordingBackend(ScriptedBackend(["x", "y"]), path).complete("p")
    with path.open("a") as handle:
        handle.write('{"type": "call", "key": "abc"\n')
    with pytest.raises(CassetteError, match="line 3"):
        ReplayBackend(path)
    with pytest.raises(CassetteError, match="line 3"):
        RecordingBackend(ScriptedBackend(["z"]), path)  # refuses to append after damage


def test_replay_of_a_cassette_with_two_models_needs_a_choice(tmp_path):
    path = tmp_path / "calls.jsonl"
    RecordingBackend(ScriptedBackend(["x"], name="m1"), path).complete("p")
    RecordingBackend(ScriptedBackend(["y"], name="m2"), path).complete("p")
    with pytest.raises(CassetteError, match="2 models"):
        ReplayBackend(path)
    assert ReplayBackend(path, model_id="unhashed:m2").complete("p").text == "y"


def test_missing_cassette_is_a_clear_error(tmp_path):
    with pytest.raises(CassetteError, match="cannot read cassette"):
        ReplayBackend(tmp_path / "nope.jsonl")


# --- parsing outputs -----------------------------------------------------------------------------

def test_parse_json_output_accepts_valid_and_explains_the_rest():
    obj, err = parse_json_output(' {"action": "read", "row": 3} ', Step)
    assert err is None and obj == Step(action="read", row=3)
    obj, err = parse_json_output('{"action": "read", "row": 1000000000000000}', Step)
    assert obj is None and err is not None and err.startswith("schema-invalid: row")
    obj, err = parse_json_output('{"action": "re', Step)
    assert obj is None and err is not None and err.startswith("not JSON")
    obj, err = parse_json_output('{"action": "read", "row": 1} and more', Step)
    assert obj is None and err is not None and err.startswith("not JSON")


def test_output_tally_counts_invalid_outputs():
    tally = OutputTally()
    results = [tally.parse(t, Step) for t in ('{"action": "write", "row": 0}', "nonsense", '{"action": "x", "row": 1}')]
    assert results[0] == Step(action="write", row=0) and results[1:] == [None, None]
    assert (tally.valid, tally.invalid, len(tally.errors)) == (1, 2, 2)


# --- schema compilation --------------------------------------------------------------------------

def test_compile_schema_is_cached_and_lists_unenforced_keywords():
    schema = Step.model_json_schema()
    first = compile_schema(schema)
    assert compile_schema(json.loads(json.dumps(schema))) is first  # converted once per distinct schema
    assert "root ::=" in first.gbnf and '"\\"read\\""' in first.gbnf
    assert set(first.unenforced) == {"/properties/row: maximum", "/properties/row: minimum"}


def test_the_grammar_keeps_the_declared_property_order_and_the_canonical_name():
    """A model writes keys in the grammar's order: ``search`` must come before ``replace``, as declared (a
    sorted schema would force the reverse), while both orders name the same schema in cassette keys."""
    def edit(*names: str) -> dict:
        return {"type": "object", "properties": {n: {"type": "string"} for n in names},
                "required": ["search", "replace"]}

    declared, reversed_ = compile_schema(edit("search", "replace")), compile_schema(edit("replace", "search"))

    def root(compiled) -> str:
        return next(line for line in compiled.gbnf.splitlines() if line.startswith("root ::="))

    assert root(declared).index("search-kv") < root(declared).index("replace-kv")
    assert root(reversed_).index("replace-kv") < root(reversed_).index("search-kv")
    assert declared.sha256 == reversed_.sha256


@pytest.mark.parametrize("schema, fragment", [
    ({"type": "strange"}, "Unrecognized schema"),
    ({"not": {"type": "string"}}, "Unrecognized schema"),
    ({"type": "string", "pattern": "[a-z]+"}, "must start with"),
    ({"type": "object", "properties": {"a": {"$ref": "#/$defs/missing"}}}, "Error resolving ref"),
])
def test_a_schema_llama_cpp_cannot_convert_is_an_error(schema, fragment):
    with pytest.raises(GrammarError, match=fragment):
        compile_schema(schema)


def test_the_generic_json_fallback_grammar_is_detected():
    from llama_cpp.llama_chat_format import _grammar_for_json_schema

    schema = {"type": "object", "properties": {"a": {"type": "strange"}}}
    fallback = _grammar_for_json_schema(json.dumps(schema))  # llama-cpp-python's own silent fallback
    with pytest.raises(GrammarError, match="generic JSON grammar"):
        check_not_generic(fallback._grammar, schema)
    check_not_generic(fallback._grammar, {"type": "object", "title": "anything"})  # generic is right here


# --- model files ---------------------------------------------------------------------------------

def test_model_file_checks_name_the_problem(tmp_path):
    with pytest.raises(LabkitError, match="no model file"):
        check_gguf(tmp_path / "missing.gguf")
    with pytest.raises(LabkitError, match="is a directory"):
        check_gguf(tmp_path)
    fake = tmp_path / "model.safetensors"
    fake.write_bytes(b'{"__metadata__": {}}')
    with pytest.raises(LabkitError, match="not a GGUF file") as info:
        check_gguf(fake)
    assert "convert" in str(info.value)
    good = tmp_path / "tiny.gguf"
    good.write_bytes(b"GGUF" + b"\0" * 20)
    assert check_gguf(good) == good.resolve()


def test_file_sha256_is_cached_by_path_size_and_mtime(tmp_path):
    import hashlib
    import os

    f = tmp_path / "m.bin"
    f.write_bytes(b"abc")
    digest = file_sha256(f, cache_dir=tmp_path / "cache")
    assert digest == hashlib.sha256(b"abc").hexdigest()
    assert digest in (tmp_path / "cache" / "sha256.json").read_text()
    f.write_bytes(b"abcd")
    os.utime(f, ns=(1, 1))
    assert file_sha256(f, cache_dir=tmp_path / "cache") == hashlib.sha256(b"abcd").hexdigest()
