"""Runs spread over several servers: the pool's choice, its refusals, and what the results record.

Logic only, with scripted servers that answer as a deterministic function of the request (as one
model file would). The same spread over two real llama.cpp servers is in
``tests/test_experiment_live.py``.
"""

from __future__ import annotations

import hashlib
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from labkit.errors import LabkitError
from labkit.experiment.planners import Decoding
from labkit.experiment.runner import BackendSource, ExperimentConfig, load_runs, run_experiment
from labkit.experiment.tasks import load_tasks
from labkit.llm.backend import Request
from labkit.llm.cassette import ReplayBackend, read_cassette
from labkit.llm.fake import ScriptedBackend
from labkit.llm.pool import SerialCalls, ServerPool

ANSWERS = ('{"action": "read_orders", "args": {}}', '"save"', '{"done": true}', "1")


def _answer(request: Request) -> str:
    """The same answer for the same request, whichever server is asked."""
    digest = hashlib.sha256(f"{request.prompt}|{request.seed}|{request.temperature}".encode()).digest()
    return ANSWERS[digest[0] % len(ANSWERS)]


class FakeServer(ScriptedBackend):
    """A scripted backend that describes itself like an HTTP server at ``url``."""

    def __init__(self, url: str, *, model: str = "sha-a", sampling: dict[str, Any] | None = None) -> None:
        super().__init__(_answer, name="fake")
        self.url, self.model_sha, self._sampling = url, model, sampling

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "backend": "openai_http", "server": self.url, "model_sha256": self.model_sha}

    def _complete(self, request: Request) -> Any:
        time.sleep(0.002)  # long enough that concurrent runs overlap, as on a real server
        return super()._complete(request)

    def sampling(self) -> dict[str, Any]:
        return self._sampling if self._sampling is not None else super().sampling()


def test_each_run_borrows_the_least_busy_server_then_the_least_used() -> None:
    pool = ServerPool([FakeServer("http://a"), FakeServer("http://b"), FakeServer("http://c")])
    with pool.borrow() as (first, _), pool.borrow() as (second, _):
        assert (first, second) == ("http://a", "http://b")
        with pool.borrow() as (third, _), pool.borrow() as (fourth, _):
            assert (third, fourth) == ("http://c", "http://a")  # all busy: the first listed
    with pool.borrow() as (fifth, server):
        assert fifth == "http://b" and isinstance(server, FakeServer) and server.url == "http://b"
    assert pool.runs_per_server() == {"http://a": 2, "http://b": 2, "http://c": 1}
    one_at_a_time = ServerPool([FakeServer("http://a"), FakeServer("http://b")])
    lent = []
    for _ in range(4):
        with one_at_a_time.borrow() as (name, _):
            lent.append(name)
    assert lent == ["http://a", "http://b", "http://a", "http://b"]  # sequential runs take turns


def test_the_pool_refuses_servers_whose_answers_would_differ() -> None:
    with pytest.raises(LabkitError, match="serve the same model file"):
        ServerPool([FakeServer("http://a"), FakeServer("http://b", model="sha-other")])
    with pytest.raises(LabkitError, match="same sampling"):
        ServerPool([FakeServer("http://a"), FakeServer("http://b", sampling={"top_k": 1})])
    with pytest.raises(LabkitError, match="given twice"):
        ServerPool([FakeServer("http://a"), FakeServer("http://a")])
    with pytest.raises(LabkitError, match="at least one server"):
        ServerPool([])
    pool = ServerPool([FakeServer("http://a")])
    with pytest.raises(LabkitError, match="borrow a server"):
        pool.complete("hello")  # a call must belong to a run
    assert pool.describe()["servers"] == ["http://a"] and pool.model_id() == "sha-a"


def _experiment(tmp_path: Path, live: Any, concurrency: int) -> list[Any]:
    chosen = {t.id: t for t in load_tasks()}
    tasks = [chosen["diff2"], chosen["distractor2"]]
    config = ExperimentConfig(seeds=[0, 1, 2], arms=["prompt-only", "machine-model", "machine-rule"],
                              decoding=Decoding(temperature=0.5, max_tokens_whole=24, max_tokens_step=8),
                              concurrency=concurrency)
    return run_experiment(config, tasks, BackendSource(live=live, record_to=tmp_path), tmp_path, progress=False)


def _outcome(r: Any) -> tuple[Any, ...]:
    return (r.arm, r.task, r.seed, r.passed, r.termination, r.llm_calls, r.prompt_tokens, r.completion_tokens,
            tuple(r.outputs), r.trace)


def test_runs_spread_over_two_servers_equal_one_server_and_name_their_server(tmp_path: Path) -> None:
    one = _experiment(tmp_path / "one", FakeServer("http://only"), concurrency=1)
    a, b = FakeServer("http://a"), FakeServer("http://b")
    two = _experiment(tmp_path / "two", ServerPool([SerialCalls(a), SerialCalls(b)]), concurrency=4)
    assert [_outcome(r) for r in two] == [_outcome(r) for r in one]  # the spread changes nothing
    model_runs = [r for r in two if r.arm != "machine-rule"]
    assert {r.server for r in model_runs} == {"http://a", "http://b"}  # both servers were used
    assert all(r.server == "" for r in two if r.arm == "machine-rule")  # no model, no server
    assert {r.server for r in one if r.arm != "machine-rule"} == {"http://only"}
    assert len(a.requests) + len(b.requests) == sum(r.llm_calls for r in two)
    written = {(r.arm, r.task, r.seed): r.server for r in load_runs(tmp_path / "two" / "runs.jsonl")}
    assert written == {(r.arm, r.task, r.seed): r.server for r in two}
    # Every recorded call names its server, and it is the server of the run it belongs to.
    served = {(r.arm, r.task, r.seed): r.server for r in model_runs}
    for r in model_runs:
        _, calls = read_cassette(tmp_path / "two" / "cassettes" / r.arm / f"{r.task}.jsonl")
        mine = [c for c in calls if c["request"]["seed"] // 1000 == r.seed]
        assert len(mine) == r.llm_calls and {c["server"] for c in mine} == {served[(r.arm, r.task, r.seed)]}


def test_a_cassette_filled_from_two_servers_replays(tmp_path: Path) -> None:
    _experiment(tmp_path, ServerPool([SerialCalls(FakeServer("http://a")), SerialCalls(FakeServer("http://b"))]),
                concurrency=2)
    path = tmp_path / "cassettes" / "machine-model" / "diff2.jsonl"
    backends, calls = read_cassette(path)
    assert {b["server"] for b in backends} <= {"http://a", "http://b"} and calls
    replay = ReplayBackend(path)
    call = calls[0]
    req = call["request"]
    again = replay.complete(req["prompt"], max_tokens=req["max_tokens"], stop=req["stop"], schema=req["schema"],
                            temperature=req["temperature"], seed=req["seed"])
    assert again.text == call["completion"]["text"] and again.replayed


def test_a_pool_lends_no_server_to_a_run_that_needs_no_model(tmp_path: Path) -> None:
    pool = ServerPool([FakeServer("http://a")])
    source = BackendSource(live=pool, record_to=tmp_path)
    with source.for_run("machine-rule", "diff2") as (backend, server):
        assert backend is None and server == ""
    assert pool.runs_per_server() == {"http://a": 0}
    with pytest.raises(LabkitError, match="lends a server per run"):
        source("machine-model", "diff2")


def test_recorders_sharing_a_cassette_never_tear_each_others_lines(tmp_path: Path) -> None:
    from labkit.llm.cassette import RecordingBackend

    path, lock = tmp_path / "shared.jsonl", threading.Lock()
    long_prompt = "x " * 20_000  # a line far larger than a write buffer

    def record(url: str) -> None:
        recorder = RecordingBackend(FakeServer(url), path, lock=lock)
        for i in range(10):
            recorder.complete(f"{long_prompt}{i}", seed=i)

    threads = [threading.Thread(target=record, args=(f"http://{n}",)) for n in "abcd"]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    _, calls = read_cassette(path)  # a torn or interleaved line would be an error here
    assert len(calls) == 40 and {c["server"] for c in calls} == {"http://a", "http://b", "http://c", "http://d"}


def test_a_regrade_keeps_the_server_each_run_was_recorded_on(tmp_path: Path) -> None:
    from labkit.experiment.runner import prepare_replay, with_recorded_timings

    recorded = _experiment(tmp_path / "live", ServerPool([SerialCalls(FakeServer("http://a")),
                                                          SerialCalls(FakeServer("http://b"))]), concurrency=2)
    config, tasks = prepare_replay(tmp_path / "live")
    replayed = run_experiment(config, tasks, BackendSource(replay_dir=tmp_path / "live"), tmp_path / "replay",
                              progress=False)
    assert all(r.server == "" for r in replayed)  # a replay asks no server
    assert [_outcome(r) for r in replayed] == [_outcome(r) for r in recorded]
    kept = with_recorded_timings(replayed, recorded)
    assert [r.server for r in kept] == [r.server for r in recorded]
    assert {r.server for r in kept if r.arm != "machine-rule"} == {"http://a", "http://b"}
