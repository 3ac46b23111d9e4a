"""The experiment on real parts: the embedded model in process, a real llama_cpp.server on loopback
(sequential vs concurrent runs), and stub servers on loopback for a flaky and a slow server.

None of these asserts a success figure: a smoke test checks that runs complete and are recorded.
"""

from __future__ import annotations

import contextlib
import http.server
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from labkit.cli import main
from labkit.experiment.arms import ARMS
from labkit.experiment.planners import Decoding
from labkit.experiment.runner import BackendSource, ExperimentConfig, load_runs, run_experiment
from labkit.experiment.tasks import load_tasks
from labkit.llm import LlamaCppBackend, OpenAICompatBackend, ServerError
from labkit.llm.cassette import read_cassette
from labkit.llm.pool import SerialCalls, ServerPool

SMALL = Decoding(temperature=0.5, max_tokens_whole=24, max_tokens_step=8)
TINY = Decoding(temperature=0.5, max_tokens_whole=16, max_tokens_step=8)


def _tasks(*ids: str, max_steps: int = 3) -> list:
    chosen = {t.id: t for t in load_tasks()}
    return [chosen[i].model_copy(update={"budget": chosen[i].budget.model_copy(update={"max_steps": max_steps})})
            for i in ids]


@pytest.mark.slow
def test_smoke_every_arm_runs_live_and_is_recorded(tmp_path: Path) -> None:
    tasks = _tasks("diff2", "restricted3", max_steps=3)
    config = ExperimentConfig(seeds=[0], decoding=SMALL)
    source = BackendSource(live=LlamaCppBackend(), record_to=tmp_path)
    records = run_experiment(config, tasks, source, tmp_path, progress=False)
    assert len(records) == len(load_runs(tmp_path / "runs.jsonl")) == 2 * len(ARMS)
    for r in records:
        assert r.termination and r.planner_calls >= 1
        if ARMS[r.arm].uses_model:
            assert r.llm_calls >= 1 and r.prompt_tokens > 0
            _, calls = read_cassette(tmp_path / "cassettes" / r.arm / f"{r.task}.jsonl")
            assert len(calls) == r.llm_calls  # every call is in the cassette
            assert all(c["request"]["temperature"] == 0.5 for c in calls)
        else:
            assert r.llm_calls == 0


@pytest.mark.slow
def test_concurrent_runs_against_a_real_server_equal_a_sequential_run(server_url: str, tmp_path: Path) -> None:
    tasks = _tasks("diff2", "distractor2", max_steps=3)
    per_run = {}
    for concurrency in (1, 3):
        backend = OpenAICompatBackend(server_url, timeout_s=60, cache_dir=tmp_path / "cache")
        config = ExperimentConfig(seeds=[0, 1], arms=["prompt-only", "machine-model"], decoding=TINY,
                                  concurrency=concurrency)
        out = tmp_path / f"c{concurrency}"
        source = BackendSource(live=SerialCalls(backend) if concurrency > 1 else backend)
        records = run_experiment(config, tasks, source, out, progress=False)
        per_run[concurrency] = [(r.arm, r.task, r.seed, r.passed, r.termination, r.llm_calls, r.prompt_tokens,
                                 r.completion_tokens, tuple(r.outputs)) for r in records]
    assert len(per_run[1]) == 8
    assert per_run[3] == per_run[1]


@pytest.mark.slow
def test_runs_spread_over_two_real_servers_equal_one_server(server_url: str, tmp_path: Path,
                                                            start_llama_server: Any) -> None:
    """Two `python -m labkit.llm.serve` processes on loopback against the module's one server."""

    tasks = _tasks("diff2", "distractor2", max_steps=3)
    config = ExperimentConfig(seeds=[0, 1], arms=["prompt-only", "machine-model"], decoding=TINY, concurrency=2)

    def experiment(live: Any, out: Path) -> list:
        return run_experiment(config, tasks, BackendSource(live=live, record_to=out), out, progress=False)

    def server(url: str) -> SerialCalls:
        return SerialCalls(OpenAICompatBackend(url, timeout_s=60, cache_dir=tmp_path / "cache"))

    one = experiment(server(server_url), tmp_path / "one")
    with start_llama_server(threads=1) as first, start_llama_server(threads=1) as second:
        pool = ServerPool([server(first), server(second)])
        two = experiment(pool, tmp_path / "two")

    def outcome(r: Any) -> tuple:
        return (r.arm, r.task, r.seed, r.passed, r.termination, r.llm_calls, r.prompt_tokens, r.completion_tokens,
                tuple(r.outputs))

    assert len(one) == 8 and [outcome(r) for r in two] == [outcome(r) for r in one]
    assert {r.server for r in one} == {server_url}
    assert {r.server for r in two} == {first, second}  # both served, each run by one of them
    assert sum(pool.runs_per_server().values()) == 8
    for r in two:
        _, calls = read_cassette(tmp_path / "two" / "cassettes" / r.arm / f"{r.task}.jsonl")
        mine = [c for c in calls if c["request"]["seed"] // 1000 == r.seed]
        assert len(mine) == r.llm_calls and {c["server"] for c in mine} == {r.server}


# --- bad input ---------------------------------------------------------------------------------------

def test_model_paths_that_cannot_be_a_model(tmp_path: Path, capsys) -> None:
    not_gguf = tmp_path / "model.gguf"
    not_gguf.write_text("hello, not a model")
    for path in (tmp_path / "missing.gguf", not_gguf):
        code = main(["experiment-v1", "--model", str(path), "--task-ids", "diff2", "--seeds", "1",
                     "--out", str(tmp_path / "out"), "--no-progress"])
        assert code == 2
        assert str(path) in capsys.readouterr().err


def test_options_that_do_not_fit_together(tmp_path: Path, capsys) -> None:
    assert main(["experiment-v1", "--concurrency", "2", "--out", str(tmp_path)]) == 2
    assert "--concurrency needs --server" in capsys.readouterr().err
    assert main(["experiment-v1", "--arms", "prompt-only,telepathy", "--out", str(tmp_path)]) == 2
    assert "unknown arm" in capsys.readouterr().err


def test_a_server_that_is_down(tmp_path: Path, capsys) -> None:
    code = main(["experiment-v1", "--server", "http://127.0.0.1:9", "--timeout", "1", "--retries", "1",
                 "--out", str(tmp_path), "--no-progress"])
    assert code == 2
    assert "failed 2 time(s)" in capsys.readouterr().err


class _Stub(http.server.BaseHTTPRequestHandler):
    posts = 0
    fail_post = 2  # the second POST is the first real call (the first is the isolation barrier)
    delay = 0.0

    def log_message(self, *args: object) -> None:
        pass

    def _json(self, code: int, data: object) -> None:
        body = json.dumps(data).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # the client gave up: that is the test
            self.wfile.write(body)

    def do_GET(self) -> None:
        self._json(200, {"data": [{"id": "stub-model"}]})

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        type(self).posts += 1
        if type(self).delay:
            time.sleep(type(self).delay)
        if type(self).posts == type(self).fail_post:
            self._json(500, {"error": "overloaded"})
            return
        self._json(200, {"choices": [{"text": '"save"', "finish_reason": "stop"}],
                         "usage": {"prompt_tokens": 50, "completion_tokens": 3}})


@pytest.fixture
def stub() -> Iterator[tuple[str, type[_Stub]]]:
    handler = type("Stub", (_Stub,), {"posts": 0})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", handler
    finally:
        server.shutdown()
        server.server_close()


def test_server_retries_are_counted_per_run(stub, tmp_path: Path) -> None:
    url, _ = stub
    backend = OpenAICompatBackend(url, timeout_s=5, retries=2, backoff_s=0.0, model_sha256="0" * 64)
    config = ExperimentConfig(seeds=[0], arms=["machine-model"])
    records = run_experiment(config, _tasks("diff2"), BackendSource(live=backend), tmp_path, progress=False)
    assert records[0].http_retries == 1 and records[0].llm_calls >= 1


def test_a_slow_server_stops_the_experiment_and_keeps_finished_runs(stub, tmp_path: Path) -> None:
    url, handler = stub
    handler.delay, handler.fail_post = 1.0, -1
    backend = OpenAICompatBackend(url, timeout_s=0.3, retries=1, backoff_s=0.0, model_sha256="0" * 64)
    config = ExperimentConfig(seeds=[0], arms=["machine-random", "machine-model"])
    with pytest.raises(ServerError, match="no answer within"):
        run_experiment(config, _tasks("diff2"), BackendSource(live=backend), tmp_path, progress=False)
    kept = load_runs(tmp_path / "runs.jsonl")
    assert [r.arm for r in kept] == ["machine-random"]


@contextlib.contextmanager
def _stub_server(delay: float = 0.0) -> Iterator[str]:
    handler = type("Stub", (_Stub,), {"posts": 0, "fail_post": -1, "delay": delay})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_cli_spreads_runs_over_every_server_given(tmp_path: Path, capsys) -> None:
    out = tmp_path / "out"
    with _stub_server(delay=0.01) as first, _stub_server(delay=0.01) as second:
        code = main(["experiment-v1", "--server", first, "--server", second, "--task-ids", "diff2,distractor2",
                     "--arms", "prompt-only,machine-model,machine-rule", "--seeds", "2", "--retries", "0",
                     "--out", str(out), "--no-progress", "--no-plots"])
        assert code == 0, capsys.readouterr().err
        assert main(["experiment-v1", "--server", first, "--server", first + "/", "--out", str(tmp_path / "twice"),
                     "--no-progress"]) == 2
        assert "given twice" in capsys.readouterr().err
    runs = load_runs(out / "runs.jsonl")
    assert len(runs) == 12
    assert {r.server for r in runs if r.arm != "machine-rule"} == {first, second}
    assert {r.server for r in runs if r.arm == "machine-rule"} == {""}
    assert json.loads((out / "experiment.json").read_text())["concurrency"] == 2  # one run per server
    assert json.loads((out / "provenance.json").read_text())["backend"]["servers"] == [first, second]
