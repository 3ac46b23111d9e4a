"""The one runner (labkit.compare.runs): resume, rows in job order, progress, provenance, and runs spread over servers.

Logic only, with scripted servers that answer as a deterministic function of the request (as one model
file would). The same spread over two real llama.cpp servers is in ``tests/test_runs_servers.py``.
"""

from __future__ import annotations

import doctest
import hashlib
import json
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

import labkit.compare.runs
from labkit.compare.runs import Answers, Comparison, Job, Outcome, Progress, clean_commit, per_task, read_rows, run_jobs
from labkit.core.errors import LabkitError
from labkit.llm.backend import Backend, Request
from labkit.llm.cassette import read_cassette
from labkit.llm.errors import ServerError
from labkit.llm.fake import ScriptedBackend
from labkit.llm.pool import SerialCalls, ServerPool
from labkit.reading.runner import ReadingComparison, ReadingConfig, load_reading_runs, run_reading

SMOKE = ["dev-triage-01", "dev-extraction-02", "test-selection-01", "test-compare-03"]


def _answer(request: Request) -> str:
    """A stand-in model: the first or second option of an enum (by a hash of the prompt), a form, ``done``."""
    props = (request.schema or {}).get("properties", {})
    pick = hashlib.sha256(request.prompt.encode()).digest()[0] % 2
    for name, prop in props.items():
        if "enum" in prop and name != "action":
            return json.dumps({name: prop["enum"][min(pick, len(prop["enum"]) - 1)]})
    if "order" in props:
        return json.dumps({"order": "ORD-1", "date": "2025-01-01", "amount": "1.00", "name": "Nobody Here"})
    return json.dumps({"action": "done", "args": {}})


class FakeServer(ScriptedBackend):
    """A scripted backend that describes itself like an HTTP server at ``url`` and takes a little time per call."""

    def __init__(self, url: str) -> None:
        super().__init__(_answer, name="fake")
        self.url = url

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "backend": "openai_http", "server": self.url, "model_sha256": "sha-a"}

    def _complete(self, request: Request) -> Any:
        time.sleep(0.001)  # long enough that runs overlap, as on a real server
        return super()._complete(request)


class CountingPool(ServerPool):
    """A pool that notes the most runs one server held at once."""

    most_at_once = 0

    @contextmanager
    def borrow(self) -> Iterator[tuple[str, Backend]]:
        with super().borrow() as lent:
            with self._lock:
                self.most_at_once = max(self.most_at_once, *self._in_flight)
            time.sleep(0.002)  # a run holds its server a moment, as a real one does
            yield lent


def _strip(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in row.items() if k != "wall_s"} for row in rows]


def test_runs_spread_over_two_servers_and_their_slots_give_one_servers_rows_in_job_order(tmp_path: Path) -> None:
    config = ReadingConfig(task_ids=SMOKE, arms=["prompt-only", "machine-model", "machine-rule"], seeds=[0, 1])
    one = FakeServer("http://only")
    serial = run_reading(config, Answers(live=one), tmp_path / "one")
    a, b = FakeServer("http://a"), FakeServer("http://b")
    pool = CountingPool([a, b], slots=2)
    said: list[str] = []
    spread = run_reading(config, Answers(live=pool), tmp_path / "two", progress=said.append)
    assert [(s, r.to_dict()) for s, r in spread] != [] and len(spread) == len(SMOKE) * 3 * 2
    assert _strip(read_rows(tmp_path / "two" / "runs.jsonl")) == _strip(read_rows(tmp_path / "one" / "runs.jsonl"))
    assert [(s, {**r.to_dict(), "wall_s": 0}) for s, r in spread] == \
        [(s, {**r.to_dict(), "wall_s": 0}) for s, r in serial]
    lent = pool.runs_per_server()
    assert lent["http://a"] > 0 and lent["http://b"] > 0 and sum(lent.values()) == len(SMOKE) * 2 * 2
    assert pool.most_at_once == 2  # a server's two slots were used at once
    assert "4 at a time" in said[0] and said[-1].startswith(f"[{len(spread)}/{len(spread)}]")
    # every recorded call names the server that answered it, and a cassette filled by both replays
    servers = set()
    for path in (tmp_path / "two" / "cassettes").rglob("*.jsonl"):
        servers |= {c["server"] for c in read_cassette(path)[1]}
    assert servers == {"http://a", "http://b"}
    again = run_reading(config, Answers(replay=tmp_path / "two"), tmp_path / "replay")
    assert [(s, r.passed, r.llm_calls, r.termination) for s, r in again] == \
        [(s, r.passed, r.llm_calls, r.termination) for s, r in serial]


def test_the_rows_are_identical_whatever_order_the_runs_finish_in(tmp_path: Path) -> None:
    """Servers of very different speed finish runs out of job order; the rows still come back in it."""

    class Slow(FakeServer):
        def _complete(self, request: Request) -> Any:
            time.sleep(0.01)
            return super()._complete(request)

    config = ReadingConfig(task_ids=SMOKE, arms=["machine-model"], seeds=[0, 1, 2])
    serial = run_reading(config, Answers(live=FakeServer("http://only")), tmp_path / "one")
    finished: list[str] = []
    spread = run_reading(config, Answers(live=ServerPool([Slow("http://slow"), FakeServer("http://fast")])),
                               tmp_path / "two", progress=finished.append)
    assert [r.to_dict() | {"wall_s": 0} for _, r in spread] == [r.to_dict() | {"wall_s": 0} for _, r in serial]
    assert load_reading_runs(tmp_path / "two" / "runs.jsonl") == spread


class Toy(Comparison):
    """A comparison of two arms on three tasks: an arm passes a task whose number it divides."""

    def __init__(self, seeds: int = 2, fails: str = "") -> None:
        self.seeds, self.fails = seeds, fails
        self.ran: list[tuple[str, str, int]] = []

    def config(self) -> dict[str, Any]:
        return {"seeds": self.seeds}

    def jobs(self) -> list[Job]:
        return [Job(arm, task, seed) for seed in range(self.seeds) for arm in ("two", "three")
                for task in ("t4", "t6", "t9")]

    def row_job(self, row: dict[str, Any]) -> Job:
        return Job(row["arm"], row["task"], row["seed"])

    def cassette(self, folder: Path, job: Job) -> Path:
        return folder / "cassettes" / f"{job.arm}-{job.task}.jsonl"

    def log(self, folder: Path, job: Job) -> Path | None:
        return None

    def run(self, job: Job, backend: Backend | None, folder: Path) -> Outcome:
        assert backend is not None
        self.ran.append((job.arm, job.task, job.seed))
        backend.complete(f"{job.arm} {job.task} {job.seed}")
        if job.task == self.fails:
            raise KeyboardInterrupt  # the machine is switched off mid-run
        passed = int(job.task[1:]) % {"two": 2, "three": 3}[job.arm] == 0
        return Outcome({"arm": job.arm, "task": job.task, "seed": job.seed, "passed": passed}, passed, "done")

    def failed(self, job: Job, error: Exception, http_retries: int) -> Outcome:
        row = {"arm": job.arm, "task": job.task, "seed": job.seed, "passed": False, "retries": http_retries}
        return Outcome(row, False, f"backend error: {error}")


def test_a_stopped_recording_resumes_without_running_a_recorded_row_again(tmp_path: Path) -> None:
    stopped = Toy(fails="t9")
    with pytest.raises(KeyboardInterrupt):
        run_jobs(stopped, Answers(live=ScriptedBackend(lambda r: "ok")), tmp_path)
    assert [(r["arm"], r["task"]) for r in read_rows(tmp_path / "runs.jsonl")] == [("two", "t4"), ("two", "t6")]
    with pytest.raises(LabkitError, match="another configuration"):
        run_jobs(Toy(seeds=3), Answers(live=ScriptedBackend(lambda r: "ok")), tmp_path, resume=True)
    resumed = Toy()
    rows = run_jobs(resumed, Answers(live=ScriptedBackend(lambda r: "ok")), tmp_path, resume=True)
    assert ("two", "t4", 0) not in resumed.ran and ("two", "t9", 0) in resumed.ran and len(resumed.ran) == 10
    assert [(r["arm"], r["task"], r["seed"]) for r in rows] == [j.key()[1:] for j in Toy().jobs()]
    assert per_task(rows, "three") == {"t4": (0, 2), "t6": (2, 2), "t9": (2, 2)}
    with pytest.raises(LabkitError, match="nothing to resume"):
        run_jobs(Toy(), Answers(live=ScriptedBackend(lambda r: "ok")), tmp_path / "never", resume=True)


def test_a_spread_that_is_stopped_keeps_the_runs_in_flight_in_job_order(tmp_path: Path) -> None:
    pool = ServerPool([FakeServer("http://a"), FakeServer("http://b")])
    with pytest.raises(KeyboardInterrupt):
        run_jobs(Toy(fails="t9"), Answers(live=pool), tmp_path)
    rows = read_rows(tmp_path / "runs.jsonl")
    order = [j.key()[1:] for j in Toy().jobs()]
    keys = [(r["arm"], r["task"], r["seed"]) for r in rows]
    assert keys and keys == sorted(keys, key=order.index) and all(k[1] != "t9" for k in keys)


def test_a_run_whose_server_fails_counts_its_retries_and_the_others_go_on(tmp_path: Path) -> None:
    class Down(ScriptedBackend):
        def _complete(self, request: Request) -> Any:
            raise ServerError("the server at http://127.0.0.1:9 failed 3 time(s)", "start it again.", attempts=3)

    rows = run_jobs(Toy(seeds=1), Answers(live=Down([])), tmp_path)
    assert len(rows) == 6 and {r["retries"] for r in rows} == {2} and not any(r["passed"] for r in rows)


def test_progress_says_what_is_left_with_an_estimate() -> None:
    said: list[str] = []
    now = iter([0.0, 10.0, 20.0, 600.0])
    shown = Progress(said.append, total=4, clock=lambda: next(now))
    for task in ("t1", "t2", "t3"):
        shown.finished(Job("machine", task, 0, "dev"), Outcome({}, task != "t2", "done"))
    assert said == ["[1/4] machine dev/t1 s0: pass (done), about 30 s left",
                    "[2/4] machine dev/t2 s0: fail (done), about 20 s left",
                    "[3/4] machine dev/t3 s0: pass (done), about 3 min left"]


def test_a_pool_with_slots_waits_for_a_free_one_and_keeps_a_barrier_with_its_call() -> None:
    class Isolating(FakeServer):
        isolate_calls = True

    pool = ServerPool([Isolating("http://a"), FakeServer("http://b")], slots=[2, 1])
    assert pool.capacity() == 3 and isinstance(pool.servers[0], SerialCalls)
    assert not isinstance(pool.servers[1], SerialCalls)  # one slot: nobody else calls it during a run
    waited: list[str] = []
    late = threading.Thread(target=lambda: waited.append(_borrow_name(pool)))
    with pool.borrow() as (first, _), pool.borrow() as (second, _):
        with pool.borrow() as (third, _):
            assert (first, second, third) == ("http://a", "http://b", "http://a")
            late.start()
            late.join(0.05)
            assert waited == []  # every slot taken: the fourth run waits
        late.join(1)
        assert waited == ["http://a"]  # the slot given back
    with pytest.raises(LabkitError, match="do not fit"):
        ServerPool([FakeServer("http://a")], slots=0)


def _borrow_name(pool: ServerPool) -> str:
    with pool.borrow() as (name, _):
        return name


def test_a_recording_into_data_needs_a_clean_commit(tmp_path: Path) -> None:
    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)

    git("init", "-q")
    (tmp_path / "data").mkdir()
    (tmp_path / "code.py").write_text("x = 1\n")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "c")
    assert len(clean_commit(tmp_path / "data" / "rec", repo=tmp_path)) == 40
    (tmp_path / "code.py").write_text("x = 2\n")
    with pytest.raises(LabkitError, match="uncommitted changes"):
        clean_commit(tmp_path / "data" / "rec", repo=tmp_path)
    assert clean_commit(tmp_path / "scratch", repo=tmp_path).endswith("+dirty")  # elsewhere only flagged


def test_the_reading_comparison_declares_its_jobs_for_the_runner() -> None:
    comparison = ReadingComparison(ReadingConfig(task_ids=SMOKE, arms=["prompt-only", "machine-rule"]))
    jobs = comparison.jobs()
    assert [j.key() for j in jobs[:2]] == [("dev", "prompt-only", "dev-triage-01", 0),
                                          ("dev", "prompt-only", "dev-extraction-02", 0)]
    assert {j.uses_model for j in jobs if j.arm == "machine-rule"} == {False}
    row = {"split": "dev", "arm": "machine-rule", "task": "dev-triage-01", "seed": 0}
    assert comparison.row_job(row).key() == ("dev", "machine-rule", "dev-triage-01", 0)


def test_the_module_example_runs() -> None:
    assert doctest.testmod(labkit.compare.runs).failed == 0
