"""The comparison against an OpenAI-compatible server: the shared server options, and HTTP retries counted.

The server is a real HTTP server on loopback (the ``json_server`` fixture) that fails its first requests (503)
and then answers like a completion server that reads the request's ``json_schema``: the first option of an enum, an
invented form, ``done`` for a free-loop action. Its answers are not meant to be right; the tests
check what the experiment records about the requests.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import stub_reading_answer

from labkit.cli import build_parser, main
from labkit.core.errors import LabkitError
from labkit.core.store import load_events
from labkit.llm.http import OpenAICompatBackend
from labkit.llm.metered import MeteredBackend

SHA = "ab" * 32
TASKS = "dev-triage-01,dev-extraction-02"


def _answer(body: dict[str, Any]) -> str:
    return "0" if body.get("max_tokens") == 1 else stub_reading_answer(body.get("json_schema"))  # 1: the barrier


def flaky_answer(fail_first: int = 0, *, always_fail: bool = False) -> Any:
    """A completion server's answers (for the ``json_server`` fixture): HTTP 503 to the first ``fail_first``
    requests (or to all, with ``always_fail``), then :func:`_answer` with usage counts."""

    def answer(method: str, path: str, body: dict[str, Any], n: int) -> tuple[int, dict[str, Any]]:
        if always_fail or n <= fail_first:
            return 503, {"error": "busy"}
        return 200, {"choices": [{"text": _answer(body), "finish_reason": "stop"}],
                     "usage": {"prompt_tokens": len(body["prompt"]) // 4, "completion_tokens": 5}}

    return answer


@pytest.fixture
def flaky(json_server: Any) -> Any:
    return json_server(flaky_answer(fail_first=2))


def _server_args(url: str) -> list[str]:
    return ["--server", url, "--server-model", "stub-model", "--model-sha256", SHA, "--schema-mode", "json_schema"]


def test_the_barrier_requests_retries_are_counted_in_the_call(flaky: Any) -> None:
    backend = OpenAICompatBackend(flaky.url, model="stub-model", model_sha256=SHA, sleep=lambda s: None)
    out = backend.complete("hello")
    assert [b["max_tokens"] for b in flaky.posts()] == [1, 1, 1, 64]  # the barrier failed twice, then the call
    assert out.retries == 2 and backend.stats["retries"] == 2 and backend.stats["barrier_requests"] == 1
    assert backend.complete("again").retries == 0


def test_a_meter_counts_each_calls_retries_from_its_completion(flaky: Any) -> None:
    """MeteredBackend (the code comparison's call budget builds on it) sums what each Completion reports."""
    server = OpenAICompatBackend(flaky.url, model="stub-model", model_sha256=SHA, sleep=lambda s: None)
    metered = MeteredBackend(server)
    metered.purpose = "probe"
    metered.complete("a prompt")
    metered.complete("another prompt")
    assert metered.meter.retries == 2 and [c.retries for c in metered.meter.calls] == [2, 0]
    assert [c.purpose for c in metered.meter.calls] == ["probe", "probe"]
    assert metered.meter.completion_tokens == 10  # the stub reports 5 per call


def test_a_reading_run_records_its_retries_in_record_log_summary_and_report(
        flaky: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    code = main(["compare", "reading", *_server_args(flaky.url), "--arms", "machine-model", "--only", TASKS,
                 "--split", "dev", "--quiet", "--out", str(out)])
    assert code == 0
    printed = capsys.readouterr().out
    runs = [json.loads(line) for line in (out / "runs.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [r["http_retries"] for r in runs] == [2, 0]  # the first call's barrier was re-sent twice
    assert all(not r["termination"].startswith("backend error") for r in runs)
    events = load_events(out / "logs" / "machine-model" / "dev" / "dev-triage-01-s0.jsonl")
    asked = [e for e in events if e.type == "model_asked"]
    assert asked[0].http_retries == 2 and all(e.http_retries == 0 for e in asked[1:])
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["rows"][0]["http_retries"] == 2
    assert "HTTP retries (requests re-sent to the server, barrier requests included): dev 4 machine + model 2" \
        in printed
    backend = json.loads((out / "provenance.json").read_text(encoding="utf-8"))["backend"]
    assert (backend["model"], backend["model_sha256"], backend["schema_mode"]) == ("stub-model", SHA, "json_schema")
    assert {b["model"] for b in flaky.posts()} == {"stub-model"}  # --server-model is asked for in every request
    calls = [json.loads(line) for line in (out / "cassettes" / "machine-model" / "dev" / "dev-triage-01.jsonl")
             .read_text(encoding="utf-8").splitlines() if '"type": "call"' in line]
    assert calls and {c["server"] for c in calls} == {flaky.url} and calls[0]["completion"]["retries"] == 2
    # the cassettes keep each call's retries, so a replay reports the same numbers without the server
    again = tmp_path / "again"
    assert main(["compare", "reading", "--replay", str(out), "--out", str(again), "--quiet"]) == 0
    replayed = [json.loads(line) for line in (again / "runs.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [r["http_retries"] for r in replayed] == [2, 0]


def test_a_server_that_stays_down_stops_the_recording_and_a_resume_finishes_it(
        tmp_path: Path, json_server: Any, capsys: pytest.CaptureFixture[str]) -> None:
    down, up = json_server(flaky_answer(always_fail=True)), json_server(flaky_answer())
    out = tmp_path / "run"
    args = ["--retries", "1", "--arms", "machine-oracle,machine-model", "--only", TASKS, "--split", "dev", "--quiet",
            "--out", str(out)]
    assert main(["compare", "reading", *_server_args(down.url), *args]) == 2
    said = capsys.readouterr().err
    assert f"run machine-model dev/dev-triage-01 s0 stopped: {down.url}/v1/completions failed 2 time(s)" in said
    assert "resume the recording" in said
    kept = [json.loads(line) for line in (out / "runs.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [r["arm"] for r in kept] == ["machine-oracle", "machine-oracle"]  # no row of the down server's runs
    assert main(["compare", "reading", *_server_args(up.url), *args, "--resume"]) == 0
    runs = [json.loads(line) for line in (out / "runs.jsonl").read_text(encoding="utf-8").splitlines()]
    assert sorted((r["arm"], r["task"]) for r in runs) == sorted(
        (arm, task) for arm in ("machine-oracle", "machine-model") for task in TASKS.split(","))
    assert not any(r["termination"].startswith("backend error") for r in runs)


def test_the_server_options_need_a_server(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", "reading", "--server-model", "m", "--arms", "machine-oracle", "--only", "dev-triage-01",
                 "--out", str(tmp_path / "experiment")]) != 0
    assert "--server-model describe(s) a server, but no --server is given" in capsys.readouterr().err
    assert main(["compare", "reading", "--slots", "2", "--arms", "machine-model", "--only", "dev-triage-01",
                 "--split", "dev", "--out", str(tmp_path / "slots")]) != 0
    assert "--slots is for servers" in capsys.readouterr().err


def test_the_server_options_are_declared_once_for_the_comparison_and_complete() -> None:
    parser = build_parser()
    options = {}
    for command in (["compare", "reading"], ["complete", "a prompt"]):
        args = parser.parse_args([*command, "--server", "http://x:1", "--server-model", "n", "--model-sha256", SHA,
                                  "--schema-mode", "none", "--timeout", "5", "--retries", "0"])
        options[command[0]] = {k: getattr(args, k) for k in ("server", "server_model", "model_sha256",
                                                             "schema_mode", "timeout", "retries")}
    assert options["compare"] == options["complete"] == {
        "server": ["http://x:1"], "server_model": "n", "model_sha256": SHA, "schema_mode": "none", "timeout": 5.0,
        "retries": 0}
    with pytest.raises(LabkitError, match="--retries must be 0 or more"):
        from labkit.llm.server_options import connect_servers

        connect_servers(parser.parse_args(["compare", "reading", "--server", "http://x:1", "--retries", "-1"]),
                        several=False)


def test_reading_runs_spread_over_two_servers_give_one_servers_rows(tmp_path: Path, json_server: Any) -> None:
    first, second, only = (json_server(flaky_answer()) for _ in range(3))
    common = ["--server-model", "stub-model", "--model-sha256", SHA, "--schema-mode", "json_schema", "--arms",
              "machine-model,machine-rule", "--only", TASKS, "--split", "dev", "--seeds", "2", "--quiet"]
    assert main(["compare", "reading", "--server", only.url, *common, "--out", str(tmp_path / "one")]) == 0
    assert main(["compare", "reading", "--server", first.url, "--server", second.url, "--slots", "2", *common,
                 "--out", str(tmp_path / "two")]) == 0

    def rows(name: str) -> list[dict[str, Any]]:
        return [{k: v for k, v in json.loads(line).items() if k != "wall_s"}
                for line in (tmp_path / name / "runs.jsonl").read_text(encoding="utf-8").splitlines()]

    assert len(rows("two")) == 8 and rows("two") == rows("one")
    backend = json.loads((tmp_path / "two" / "provenance.json").read_text(encoding="utf-8"))["backend"]
    assert backend["backend"] == "server_pool" and backend["servers"] == [first.url, second.url]
    assert first.posts() and second.posts()  # both servers answered
