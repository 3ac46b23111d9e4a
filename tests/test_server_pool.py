"""The server pool on its own: which server a run borrows, which servers it refuses, shared cassettes.

Logic only, with scripted servers that answer as a deterministic function of the request (as one
model file would). What a comparison's rows look like when spread over a pool is tested with the one
runner (``tests/test_runs.py``, and over two real llama.cpp servers in ``tests/test_runs_servers.py``).
"""

from __future__ import annotations

import hashlib
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from labkit.core.errors import LabkitError
from labkit.llm.backend import Request
from labkit.llm.cassette import read_cassette
from labkit.llm.fake import ScriptedBackend
from labkit.llm.pool import ServerPool

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
