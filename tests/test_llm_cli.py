"""``labkit complete`` as a learner runs it: the embedded model, schemas, cassettes and clear errors."""

from __future__ import annotations

import json
import socket
import subprocess
import sys

import pytest

from labkit.cli import main
from labkit.llm.modelfile import embedded_model_sha256

PROMPT = "Record: I bought 3 apples.\nJSON: {\"fruit\": \"apple\", \"count\": 3}\nRecord: She has 7 pears.\nJSON:"


@pytest.fixture
def schema_file(tmp_path):
    path = tmp_path / "fruit.json"
    path.write_text(json.dumps({"type": "object", "required": ["fruit", "count"], "properties": {
        "fruit": {"enum": ["apple", "pear"]}, "count": {"type": "integer", "minimum": 0}}}))
    return path


@pytest.mark.slow
def test_complete_runs_the_embedded_model_from_the_shell():
    out = subprocess.run([sys.executable, "-m", "labkit", "complete", "The capital of France is", "--max-tokens",
                          "6"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    text, stats = out.stdout.rstrip("\n").rsplit("\n", 1)
    assert text.strip()
    assert stats.startswith("-- llama_cpp (live): 6 prompt + ") and "completion tokens in" in stats


@pytest.mark.slow
def test_complete_with_schema_records_and_replays(tmp_path, schema_file, capsys):
    cassette = tmp_path / "c.jsonl"
    args = ["complete", PROMPT, "--schema", str(schema_file), "--max-tokens", "24", "--json"]
    assert main([*args, "--record", str(cassette)]) == 0
    live = json.loads(capsys.readouterr().out)
    assert live["completion"]["grammar_used"] and live["backend"]["model_sha256"] == embedded_model_sha256()
    assert json.loads(live["completion"]["text"])["fruit"] in ("apple", "pear")
    assert main([*args, "--replay", str(cassette)]) == 0
    replayed = json.loads(capsys.readouterr().out)
    assert replayed["completion"] == {**live["completion"], "replayed": True}
    assert replayed["backend"]["backend"] == "replay" and replayed["backend"]["recorded_backend"] == "llama_cpp"


def test_a_prompt_missing_from_the_cassette_is_an_error(tmp_path, capsys):
    cassette = tmp_path / "empty.jsonl"
    cassette.write_text("")
    assert main(["complete", "never recorded", "--replay", str(cassette)]) == 2
    err = capsys.readouterr().err
    assert "has no recording for key" in err and "never recorded" in err


def test_show_grammar_prints_gbnf_and_what_it_cannot_enforce(schema_file, capsys):
    assert main(["complete", "x", "--schema", str(schema_file), "--show-grammar"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("count ::=") or "root ::=" in out
    assert "# not enforced by the grammar: /properties/count: minimum" in out


@pytest.mark.parametrize("argv, message", [
    (["--model", "/nonexistent/model.gguf"], "no model file at /nonexistent/model.gguf"),
    (["--schema", "/nonexistent/schema.json"], "cannot read schema file"),
    (["--model", "a.gguf", "--server", "http://127.0.0.1:1"], "--model and --server"),
    (["--replay", "c.jsonl", "--record", "d.jsonl"], "cannot be combined"),
])
def test_bad_options_are_clear_errors(argv, message, capsys):
    assert main(["complete", "x", *argv]) == 2
    assert message in capsys.readouterr().err


def test_a_server_that_is_down_is_reported(capsys):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    assert main(["complete", "x", "--server", f"http://127.0.0.1:{port}", "--server-model", "m",
                 "--retries", "0"]) == 2
    err = capsys.readouterr().err
    assert "cannot connect" in err and "labkit.llm.serve" in err


def test_a_schema_file_that_is_not_json_is_an_error(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text("{type: integer}")
    assert main(["complete", "x", "--schema", str(bad), "--show-grammar"]) == 2
    assert "is not valid JSON" in capsys.readouterr().err
