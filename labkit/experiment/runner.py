"""Arms × tasks × seeds: run them, write each finished run at once, record or replay the model's answers.

Why write per run: an experiment on a laptop takes minutes and may be stopped (Ctrl-C, a server
that goes away, a cassette miss); every finished run is already a line in ``runs.jsonl``, and the
summary is rebuilt from those lines, so nothing finished is lost.

Where answers come from (one ``Backend`` per arm and task, from :class:`BackendSource`):

- live: the embedded model, another GGUF file, or an OpenAI-compatible server; every call is
  recorded to ``OUT/cassettes/<arm>/<task>.jsonl`` (small files, so none grows past a few MB);
- replay: the cassettes of a recorded experiment; a call that is not in them is an error
  (:class:`~labkit.llm.errors.CassetteMiss`), never a live call.

Concurrency (``--server`` only): runs are independent (own planner, own draft area, own meter), so
threads can run several at once. The HTTP backend's call isolation (a barrier request before each
call, against llama_cpp.server's prefix cache) holds only if no other request slips between the
barrier and the call, so with ``isolate_calls`` each barrier+call pair holds a lock: the server
sees the same sequence of cache states as in a sequential run. ``llama_cpp.server`` answers one
request at a time anyway; what overlaps is the harness's own work and the network.
"""

from __future__ import annotations

import json
import shutil
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from labkit.errors import LabkitError
from labkit.experiment.arms import ARMS, RunRecord, run_one
from labkit.experiment.planners import Decoding
from labkit.experiment.tasks import load_tasks
from labkit.llm.backend import Backend
from labkit.llm.cassette import RecordingBackend, ReplayBackend
from labkit.llm.pool import ServerPool
from labkit.runtime.task import Task
from labkit.runtime.tools import DraftStore


@dataclass
class ExperimentConfig:
    """What an experiment runs; stored as ``experiment.json`` beside its results."""

    seeds: list[int] = field(default_factory=lambda: list(range(5)))
    arms: list[str] = field(default_factory=lambda: list(ARMS))
    task_ids: list[str] | None = None  # None: every task of the file
    decoding: Decoding = field(default_factory=Decoding)
    concurrency: int = 1

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ExperimentConfig:
        return cls(seeds=list(data["seeds"]), arms=list(data["arms"]), task_ids=data.get("task_ids"),
                   decoding=Decoding(**data["decoding"]), concurrency=int(data.get("concurrency", 1)))

    def check(self) -> None:
        unknown = [a for a in self.arms if a not in ARMS]
        if unknown:
            raise LabkitError(f"unknown arm(s) {unknown}", f"use some of: {', '.join(ARMS)}.")
        if not self.seeds:
            raise LabkitError("no seeds to run", "give at least one seed (--seeds N).")
        if self.concurrency < 1:
            raise LabkitError(f"--concurrency must be at least 1, got {self.concurrency}", "use 1 or more.")
        if min(self.seeds) < 0:
            raise LabkitError(f"seeds must be 0 or more, got {min(self.seeds)}",
                              "use --first-seed 0 or higher (each model call's seed is seed*1000+step).")
        if self.decoding.temperature <= 0 and len(self.seeds) > 1:
            raise LabkitError(f"--temperature {self.decoding.temperature} with {len(self.seeds)} seeds: greedy "
                              "decoding ignores the seed, so the model's runs would differ only in menu order",
                              "use a temperature above 0 (default 0.5), or --seeds 1 for one greedy run.")


def cassette_path(folder: Path, arm: str, task_id: str) -> Path:
    return folder / "cassettes" / arm / f"{task_id}.jsonl"


class BackendSource:
    """The backend each (arm, task) uses: a recording of ``live``, or a replay of ``replay_dir``.

    ``live`` may be a :class:`~labkit.llm.pool.ServerPool`: then each run borrows one server for all
    its calls (:meth:`for_run`), and the run and each of its cassette records name that server.
    """

    def __init__(self, *, live: Backend | None = None, record_to: Path | None = None,
                 replay_dir: Path | None = None) -> None:
        if (live is None) == (replay_dir is None):
            raise LabkitError("give either a live backend or a folder to replay", "this is a bug in the caller.")
        self.live, self.record_to, self.replay_dir = live, record_to, replay_dir
        self._made: dict[tuple[str, str], Backend] = {}
        self._cassette_locks: dict[tuple[str, str], threading.Lock] = {}
        self._lock = threading.Lock()

    def describe(self) -> dict[str, Any]:
        if self.live is not None:
            return self.live.describe()
        return {"backend": "replay", "cassettes": str(self.replay_dir / "cassettes")}  # type: ignore[operator]

    def __call__(self, arm: str, task_id: str) -> Backend | None:
        if not ARMS[arm].uses_model:
            return None
        if isinstance(self.live, ServerPool):
            raise LabkitError("a server pool lends a server per run", "use BackendSource.for_run(arm, task_id).")
        with self._lock:
            made = self._made.get((arm, task_id))
            if made is None:
                if self.replay_dir is not None:
                    path = cassette_path(self.replay_dir, arm, task_id)
                    if not path.exists():
                        raise LabkitError(f"no cassette for arm {arm}, task {task_id}: {path} is missing",
                                          "replay only what was recorded (same tasks, arms and seeds), or "
                                          "record it live first.")
                    made = ReplayBackend(path)
                elif self.record_to is not None:
                    made = RecordingBackend(self.live, cassette_path(self.record_to, arm, task_id))  # type: ignore[arg-type]
                else:
                    made = self.live
                self._made[(arm, task_id)] = made
            return made

    @contextmanager
    def for_run(self, arm: str, task_id: str) -> Iterator[tuple[Backend | None, str]]:
        """The backend for one run of ``arm`` on ``task_id``, and the server serving it ("" for none).

        With a server pool the run holds its server until the block ends; its calls are recorded to
        the (arm, task) cassette like any others, each naming the server that answered it.
        """
        pool = self.live if isinstance(self.live, ServerPool) else None
        if pool is None or not ARMS[arm].uses_model:
            backend = self(arm, task_id)
            live = backend is not None and self.live is not None
            yield backend, str(backend.describe().get("server") or "") if live else ""
            return
        with pool.borrow() as (name, server_backend):
            backend: Backend = server_backend
            if self.record_to is not None:
                backend = RecordingBackend(server_backend, cassette_path(self.record_to, arm, task_id),
                                           lock=self._cassette_lock(arm, task_id))
            yield backend, name

    def _cassette_lock(self, arm: str, task_id: str) -> threading.Lock:
        with self._lock:
            return self._cassette_locks.setdefault((arm, task_id), threading.Lock())


def _jobs(tasks: Sequence[Task], config: ExperimentConfig) -> list[tuple[str, Task, int]]:
    return [(arm, task, seed) for task in tasks for seed in config.seeds for arm in config.arms]


def select_tasks(tasks: Sequence[Task], task_ids: Sequence[str] | None) -> list[Task]:
    if task_ids is None:
        return list(tasks)
    known = {t.id: t for t in tasks}
    missing = [t for t in task_ids if t not in known]
    if missing:
        raise LabkitError(f"no task(s) {missing} in the task file", f"choose from: {', '.join(known)}.")
    return [known[t] for t in task_ids]


def load_runs(path: Path) -> list[RunRecord]:
    """The finished runs of ``runs.jsonl`` (a torn last line from a crash is skipped)."""
    records = []
    if not path.exists():
        return records
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            records.append(RunRecord.from_dict(json.loads(line)))
        except (ValueError, TypeError):
            continue
    return records


def order_key(config: ExperimentConfig, tasks: Sequence[Task]) -> Callable[[RunRecord], tuple[int, int, int]]:
    arm_pos = {a: i for i, a in enumerate(config.arms)}
    task_pos = {t.id: i for i, t in enumerate(tasks)}
    return lambda r: (arm_pos.get(r.arm, 99), task_pos.get(r.task, 999), r.seed)


def run_experiment(config: ExperimentConfig, tasks: Sequence[Task], source: BackendSource, out: Path, *,
                   progress: bool = True) -> list[RunRecord]:
    """Run every (arm, task, seed) job, appending each finished run to ``out/runs.jsonl``.

    Raises what stopped it (a :class:`LabkitError` or ``KeyboardInterrupt``) after the finished runs
    are written; ``out/runs.jsonl`` then holds them.
    """
    from tqdm import tqdm

    config.check()
    out.mkdir(parents=True, exist_ok=True)
    runs_path = out / "runs.jsonl"
    runs_path.write_text("", encoding="utf-8")
    drafts_path = out / "drafts.sqlite"
    for old in out.glob("drafts.sqlite*"):
        old.unlink()
    (out / "experiment.json").write_text(json.dumps(config.to_dict(), indent=2) + "\n", encoding="utf-8")
    (out / "tasks.json").write_text(json.dumps([t.model_dump(mode="json") for t in tasks], indent=2) + "\n",
                                    encoding="utf-8")
    jobs = _jobs(tasks, config)
    records: list[RunRecord] = []
    lock = threading.Lock()
    bar = tqdm(total=len(jobs), desc="experiment", unit="run", file=sys.stderr, disable=not progress)

    # The runtime's DraftStore switches a new file to WAL and creates its tables when it opens it; two
    # threads doing that at once get "database is locked". Create the file once here, and open stores
    # one at a time (the runs themselves then write concurrently, which WAL allows).
    DraftStore(drafts_path, "setup").close()
    opening = threading.Lock()

    def one(arm: str, task: Task, seed: int) -> RunRecord:
        with opening:
            store = DraftStore(drafts_path, f"{arm}/{task.id}/{seed}")
        try:
            with source.for_run(arm, task.id) as (backend, server):
                record = run_one(ARMS[arm], task, seed, backend=backend, drafts=store, decoding=config.decoding)
            record.server = server
            return record
        finally:
            store.close()

    def keep(record: RunRecord) -> None:
        with lock:
            records.append(record)
            with runs_path.open("a", encoding="utf-8") as handle:
                handle.write(json.dumps(record.to_dict(), ensure_ascii=False) + "\n")
            bar.update(1)
            bar.set_postfix_str(f"{record.arm} {record.task} s{record.seed} {'ok' if record.passed else 'fail'}")

    try:
        if config.concurrency == 1:
            for arm, task, seed in jobs:
                keep(one(arm, task, seed))
        else:
            with ThreadPoolExecutor(max_workers=config.concurrency) as pool:
                futures = [pool.submit(one, arm, task, seed) for arm, task, seed in jobs]
                kept: set[Future[RunRecord]] = set()
                try:
                    for future in as_completed(futures):
                        keep(future.result())
                        kept.add(future)
                except BaseException:
                    for f in futures:
                        f.cancel()
                    pool.shutdown(wait=True)  # runs already in flight finish; keep those that did
                    for f in futures:
                        if f not in kept and f.done() and not f.cancelled() and f.exception() is None:
                            keep(f.result())
                    raise
    finally:
        bar.close()
    records.sort(key=order_key(config, tasks))
    return records


def prepare_replay(folder: Path) -> tuple[ExperimentConfig, list[Task]]:
    """The config and tasks a recorded experiment in ``folder`` ran (``experiment.json``, ``tasks.json``)."""
    for name in ("experiment.json", "tasks.json", "cassettes"):
        if not (folder / name).exists():
            raise LabkitError(f"{folder} is not a recorded experiment: {folder / name} is missing",
                              "replay a folder written by `labkit experiment-v1` (e.g. data/experiment).")
    try:
        config = ExperimentConfig.from_dict(json.loads((folder / "experiment.json").read_text(encoding="utf-8")))
    except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise LabkitError(f"{folder / 'experiment.json'} is damaged ({type(exc).__name__}: {exc})",
                          "restore it from git, or replay another recorded experiment.") from None
    tasks = load_tasks(folder / "tasks.json")
    return config, select_tasks(tasks, config.task_ids)


# What a re-grade keeps from the recording: the clock of the live run (a replay's clock is not the model's)
# and the server that answered each run (a replay has none).
RECORDED_TIMINGS = ("wall_s", "model_s", "server")


def with_recorded_timings(records: Sequence[RunRecord], recorded: Sequence[RunRecord]) -> list[RunRecord]:
    """``records`` (a replay) with the seconds and the server of the same runs in ``recorded`` (the live run).

    Why: re-grading a recording with new code replays the model's recorded answers, so everything a
    replay computes (passes, checks, terminations, counts) is this code's, but a replay's seconds
    measure the cassette lookups, not the model. The live seconds of the same (arm, task, seed) are
    the only real ones. A replayed run that the recording lacks is an error, not a guess.
    """
    live = {(r.arm, r.task, r.seed): r for r in recorded}
    missing = [(r.arm, r.task, r.seed) for r in records if (r.arm, r.task, r.seed) not in live]
    if missing:
        raise LabkitError(f"{len(missing)} replayed run(s) are not in the recording, e.g. {missing[0]}",
                          "re-grade only the arms, tasks and seeds that were recorded.")
    out = []
    for r in records:
        copy = RunRecord.from_dict(r.to_dict())
        for name in RECORDED_TIMINGS:
            setattr(copy, name, getattr(live[(r.arm, r.task, r.seed)], name))
        out.append(copy)
    return out


def reset_cassettes(out: Path) -> None:
    """A new live experiment records into empty cassettes (replay serves the latest recording anyway)."""
    folder = out / "cassettes"
    if folder.exists():
        shutil.rmtree(folder)


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    started = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - started
