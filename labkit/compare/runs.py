"""One runner for every comparison: arms × tasks × seeds as declared jobs, run, recorded, resumed, spread.

A :class:`Comparison` declares its jobs, files, one run and a failed run's row; :func:`run_jobs` does the
rest alike (``runs.jsonl``, ``resume``, cassettes, hash-chained logs, progress, a
:class:`~labkit.llm.pool.ServerPool`). Example, two arms that need no model::

    >>> import tempfile
    >>> class Coin(Comparison):
    ...     def config(self): return {"arms": ["heads", "tails"]}
    ...     def jobs(self): return [Job(arm, f"t{i}", 0, uses_model=False) for arm in ("heads", "tails")
    ...                              for i in range(2)]
    ...     def row_job(self, row): return Job(row["arm"], row["task"], row["seed"], uses_model=False)
    ...     def cassette(self, folder, job): return folder / "cassettes" / f"{job.arm}.jsonl"
    ...     def run(self, job, backend, folder):
    ...         return Outcome({"arm": job.arm, "task": job.task, "seed": job.seed, "passed": job.arm == "heads"},
    ...                        job.arm == "heads")
    >>> rows = run_jobs(Coin(), Answers(), Path(tempfile.mkdtemp()))
    >>> per_task(rows, "heads"), per_task(rows, "tails")
    ({'t0': (1, 1), 't1': (1, 1)}, {'t0': (0, 1), 't1': (0, 1)})
"""

from __future__ import annotations

import json
import shutil
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from labkit.core.errors import LabkitError
from labkit.core.provenance import REPO, git_commit, machine
from labkit.core.store import write_atomic, write_jsonl
from labkit.llm.backend import Backend, Completion, Request, WrappedBackend
from labkit.llm.cassette import RecordingBackend, ReplayBackend
from labkit.llm.errors import BackendError, CassetteError, CassetteMiss, ServerDown
from labkit.llm.pool import ServerPool

Row = dict[str, Any]


@dataclass(frozen=True)
class Job:
    """One run to do: ``arm`` on ``task`` with ``seed``, in ``split`` ("" where a comparison has none)."""

    arm: str
    task: str
    seed: int
    split: str = ""
    uses_model: bool = True

    def key(self) -> tuple[str, str, str, int]:
        return self.split, self.arm, self.task, self.seed

    def name(self) -> str:
        return f"{self.arm} {self.split + '/' if self.split else ''}{self.task} s{self.seed}"


@dataclass(frozen=True)
class Outcome:
    """What one run gives back: its row for ``runs.jsonl``, whether it passed, and its log's events."""

    row: Row
    passed: bool
    termination: str = ""
    events: Sequence[Any] = ()


class Comparison:
    """What a comparison declares (subclass it, fill in the first five); ``config_file`` keeps its config,
    :meth:`accepts` says which recorded config a resume may continue."""

    config_file = "experiment.json"

    def config(self) -> dict[str, Any]:
        """The configuration, stored as ``config_file``; a resume must bring one that :meth:`accepts`."""
        raise NotImplementedError

    def jobs(self) -> list[Job]:
        """Every run, in the order a serial recording runs them (and ``runs.jsonl`` lists them)."""
        raise NotImplementedError

    def row_job(self, row: Row) -> Job:
        """The job a recorded row answers."""
        raise NotImplementedError

    def cassette(self, folder: Path, job: Job) -> Path:
        """Where the model calls of ``job`` are recorded in (and replayed from) ``folder``."""
        raise NotImplementedError

    def run(self, job: Job, backend: Backend | None, folder: Path) -> Outcome:
        """Run ``job``; ``backend`` answers its model calls (None for a job that uses no model)."""
        raise NotImplementedError

    def log(self, folder: Path, job: Job) -> Path | None:
        """Where the run's events go (None: the run writes its own log, or none)."""
        return None

    def failed(self, job: Job, error: BackendError, http_retries: int) -> Outcome:
        """The outcome of a run whose backend failed (a server that stayed down); by default the error stops
        everything, as a comparison that cannot score such a run must."""
        raise error

    def accepts(self, recorded: dict[str, Any]) -> bool:
        """Whether a recording of configuration ``recorded`` can be continued by this one."""
        return recorded == self.config()


class _RunCalls(WrappedBackend):
    """One run's view of its backend: counts the HTTP retries of the run's calls, those of a call that failed too."""

    kind = "run_calls"

    def __init__(self, inner: Backend) -> None:
        super().__init__(inner)
        self.http_retries = 0

    def _complete(self, request: Request) -> Completion:
        try:
            completion = self.inner._complete(request)
        except BackendError as exc:
            self.http_retries += max(int(getattr(exc, "attempts", 0)) - 1, 0)
            raise
        self.http_retries += completion.retries
        return completion


class Answers:
    """Where the model's answers come from: ``live`` (a backend, or a pool of servers), or the cassettes of
    the recording in ``replay``; with neither, no job may call a model."""

    def __init__(self, *, live: Any = None, replay: Path | None = None) -> None:
        if live is not None and replay is not None:
            raise LabkitError("give either a live backend or a folder to replay, not both",
                              "this is a bug in the caller.")
        self.live, self.replay = live, None if replay is None else Path(replay)
        self.pool = live if isinstance(live, ServerPool) else None
        self._replays: dict[Path, ReplayBackend] = {}
        self._cassette_locks: dict[Path, threading.Lock] = {}
        self._recorders: dict[tuple[Path, int], RecordingBackend] = {}
        self._lock = threading.Lock()
        self._one = threading.Lock()  # a single backend (an in-process model) serves one run at a time

    def describe(self) -> dict[str, Any]:
        if self.replay is not None:
            return {"backend": "replay", "cassettes": str(self.replay / "cassettes")}
        return self.live.describe() if self.live is not None else {"backend": "none"}

    def parallel(self) -> int:
        """How many runs can go at once: the pool's slots, else one."""
        return (self.pool.capacity() or len(self.pool.servers)) if self.pool is not None else 1

    @contextmanager
    def for_job(self, job: Job, cassette: Path) -> Iterator[tuple[Backend | None, str]]:
        """The backend of one run and the server that serves it ("" for none); a pool's server is held
        until the block ends."""
        if not job.uses_model:
            yield None, ""
            return
        if self.replay is not None:
            yield self._replay(cassette), ""
            return
        if self.live is None:
            raise LabkitError(f"{job.name()} calls a model, but no model is given",
                              "give a model or a server, or choose arms that call no model.")
        if self.pool is not None:
            with self.pool.borrow() as (name, server):
                yield self._recorder(server, cassette), name
            return
        with self._one:
            yield self._recorder(self.live, cassette), str(self.live.describe().get("server") or "")

    def _recorder(self, backend: Backend, cassette: Path) -> RecordingBackend:
        """One recorder per (backend, cassette), made on first use: a recorder reads its cassette when made."""
        with self._lock:
            if cassette not in self._cassette_locks:  # an empty cassette too: a run that made no call replays as one
                cassette.parent.mkdir(parents=True, exist_ok=True)
                cassette.touch()
            lock = self._cassette_locks.setdefault(cassette, threading.Lock())
            key = (cassette, id(backend))
            if key not in self._recorders:
                self._recorders[key] = RecordingBackend(backend, cassette, lock=lock)
            return self._recorders[key]

    def _replay(self, cassette: Path) -> ReplayBackend:
        with self._lock:
            if cassette not in self._replays:
                if not cassette.exists():
                    raise LabkitError(f"no cassette {cassette}",
                                      "replay only what was recorded (same arms, tasks and seeds).")
                self._replays[cassette] = ReplayBackend(cassette)
            return self._replays[cassette]


def read_rows(path: Path) -> list[Row]:
    """The rows of a ``runs.jsonl`` (a torn last line is skipped, and said so)."""
    rows: list[Row] = []
    if not path.exists():
        return rows
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            print(f"labkit: skipped an unreadable line of {path}", file=sys.stderr)
            continue
        if isinstance(row, dict):
            rows.append(row)
    return rows


def recorded_rows(comparison: Comparison, out: Path) -> list[Row]:
    """The rows an interrupted recording in ``out`` kept, if it ran a configuration this one continues (else a
    clear error). Rows of jobs this run does not ask for are kept too: they are the recording's."""
    path = out / comparison.config_file
    if not path.exists():
        raise LabkitError(f"nothing to resume in {out}: {path} is missing",
                          "start the recording without --resume (or point --out at the interrupted one).")
    try:
        recorded = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise LabkitError(f"{path} is damaged ({exc})", "restore it, or record into a new folder.") from None
    config = comparison.config()
    if not comparison.accepts(recorded):
        changed = sorted(k for k in set(recorded) | set(config) if recorded.get(k) != config.get(k))
        raise LabkitError(f"{out} recorded another configuration ({', '.join(changed)} differ)",
                          f"resume with the options the recording was started with (see its {comparison.config_file}), "
                          "or write a new recording to another --out.")
    return read_rows(out / "runs.jsonl")


def remaining(comparison: Comparison, kept: Sequence[Row]) -> list[Job]:
    """The jobs the ``kept`` rows do not answer, in job order."""
    done = {_key(comparison, row) for row in kept}
    return [job for job in comparison.jobs() if job.key() not in done]


def _key(comparison: Comparison, row: Row) -> tuple[str, str, str, int]:
    return comparison.row_job(row).key()


def _write_rows(path: Path, rows: Sequence[Row]) -> None:
    write_atomic(path, "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows))


class Progress:
    """One line per finished run: done count, verdict, and the rest's time (wall time per finished run times
    runs left)."""

    def __init__(self, say: Callable[[str], None], total: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.say, self.total, self.clock = say, total, clock
        self.started, self.done = clock(), 0

    def finished(self, job: Job, outcome: Outcome) -> None:
        self.done += 1
        spent = self.clock() - self.started
        left = self.total - self.done
        guess = f", about {_minutes(spent / self.done * left)} left" if left else ""
        verdict = "pass" if outcome.passed else "fail"
        self.say(f"[{self.done}/{self.total}] {job.name()}: {verdict}"
                 f"{f' ({outcome.termination})' if outcome.termination else ''}{guess}")


def _minutes(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.0f} min"


def run_jobs(comparison: Comparison, answers: Answers, out: Path, *, resume: bool = False,
             progress: Callable[[str], None] | None = None, clock: Callable[[], float] = time.monotonic) -> list[Row]:
    """Run every job of ``comparison`` not yet recorded in ``out``; return all rows in job order. A cassette
    miss stops everything; any other backend failure fails that run only."""
    out.mkdir(parents=True, exist_ok=True)
    kept = recorded_rows(comparison, out) if resume else []
    todo = remaining(comparison, kept)
    if not resume:
        for name in ("logs", *(("cassettes",) if answers.live is not None else ())):
            if (out / name).exists():
                shutil.rmtree(out / name)
    write_atomic(out / comparison.config_file, json.dumps(comparison.config(), indent=2) + "\n")
    runs_path = out / "runs.jsonl"
    _write_rows(runs_path, kept)  # rewritten whole: a line torn by an interruption must not precede the next
    order = {job.key(): n for n, job in enumerate(comparison.jobs())}
    done: list[Row] = []
    lock = threading.Lock()
    shown = Progress(progress, len(todo), clock) if progress is not None else None

    cassettes = answers.replay if answers.replay is not None else out  # a replay reads the recording's

    def one(job: Job) -> tuple[Job, Outcome]:
        with answers.for_job(job, comparison.cassette(cassettes, job)) as (backend, _server):
            calls = _RunCalls(backend) if backend is not None else None
            try:
                outcome = comparison.run(job, calls, out)
            except (CassetteMiss, CassetteError):
                raise
            except ServerDown as exc:  # no result of the model's: stop; a resume runs this job again
                raise LabkitError(f"run {job.name()} stopped: {exc.message}",
                                  f"{exc.hint} Then resume the recording (--resume): its finished rows are "
                                  "kept.") from None
            except BackendError as exc:  # the model's backend failed: this run failed, the others go on
                outcome = comparison.failed(job, exc, calls.http_retries if calls is not None else 0)
        log = comparison.log(out, job)
        if log is not None and outcome.events:
            write_jsonl(log, outcome.events)
        return job, outcome

    def keep(job: Job, outcome: Outcome) -> None:
        with lock:
            done.append(outcome.row)
            with runs_path.open("a", encoding="utf-8") as handle:
                handle.write(json.dumps(outcome.row, ensure_ascii=False) + "\n")
            if shown is not None:
                shown.finished(job, outcome)

    try:
        if answers.parallel() == 1:
            for job in todo:
                keep(*one(job))
        else:
            _spread(todo, one, keep, answers.parallel())
    finally:
        rows = sorted([*kept, *done], key=lambda row: order.get(_key(comparison, row), len(order)))
        _write_rows(runs_path, rows)
    return rows


def _spread(todo: Sequence[Job], one: Callable[[Job], tuple[Job, Outcome]],
            keep: Callable[[Job, Outcome], None], workers: int) -> None:
    """Run ``todo`` on ``workers`` threads; on an error, the runs in flight finish and are kept, then it is raised."""
    with ThreadPoolExecutor(max_workers=workers) as pool:
        pending: set[Future[tuple[Job, Outcome]]] = {pool.submit(one, job) for job in todo}
        error: BaseException | None = None
        while pending:
            finished, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in finished:
                if future.cancelled():
                    continue
                if future.exception() is not None:
                    if error is None:
                        error = future.exception()
                        for other in pending:
                            other.cancel()
                    continue
                keep(*future.result())
        if error is not None:
            raise error


def per_task(rows: Sequence[Mapping[str, Any]], arm: str, split: str | None = None) -> dict[str, tuple[int, int]]:
    """{task: (runs passed, runs)} of ``arm`` (in ``split``, if given): what :mod:`labkit.compare.stats` reads."""
    counts: dict[str, tuple[int, int]] = {}
    for row in rows:
        if row["arm"] == arm and (split is None or row.get("split") == split):
            passed, n = counts.get(row["task"], (0, 0))
            counts[row["task"]] = (passed + bool(row["passed"]), n + 1)
    return counts


# --- provenance ----------------------------------------------------------------------------------------

SEGMENT_FIELDS = ("labkit_commit", "machine", "started_utc", "backend")


def provenance(backend: dict[str, Any], mode: str, out: Path | None = None, **facts: Any) -> dict[str, Any]:
    """Where a recording's numbers come from: ``facts`` (the comparison's own), the backend, the commit
    (``out``, the recording's own folder, does not make it dirty) and the machine."""
    return {"mode": mode, "backend": backend, **facts, "labkit_commit": git_commit(own_output=out),
            "machine": machine(), "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def with_segment(prov: dict[str, Any], out: Path, *, resume: bool,
                 same: Sequence[tuple[str, str]] = ()) -> dict[str, Any]:
    """``prov`` with one ``segments`` entry per stretch of recording (code, machine, backend); a resumed one
    must keep the model file and each ``same`` value."""
    segment = {**{k: prov[k] for k in SEGMENT_FIELDS}, "wall_s": None}
    earlier: list[dict[str, Any]] = []
    recorded = out / "provenance.json"
    if resume and recorded.exists():
        prior = json.loads(recorded.read_text(encoding="utf-8"))
        for field, what in (("model_sha256", "model file"), ("model", "server model")):
            before, now = prior.get("backend", {}).get(field), prov["backend"].get(field)
            if before != now:
                raise LabkitError(f"{out} was recorded with another {what} ({before} there, {now} now)",
                                  "resume with the model the recording was started with (its provenance.json).")
        for key, what in same:
            if prior.get(key) != prov.get(key):
                raise LabkitError(f"the {what} changed since {out} was recorded",
                                  f"resume only with the {what} the recording was started with, or record anew.")
        first = {**{k: prior.get(k) for k in SEGMENT_FIELDS}, "wall_s": prior.get("wall_s")}
        earlier = prior.get("segments") or [first]
    return {**prov, "segments": [*earlier, segment]}


def clean_commit(out: Path, *, repo: Path = REPO) -> str:
    """The commit a recording into ``data/`` is made from, refused while tracked files differ (elsewhere a
    dirty tree is only flagged ``+dirty``)."""
    commit = git_commit(own_output=out, repo=repo)
    inside = Path(out).resolve().is_relative_to((repo / "data").resolve())
    if inside and commit.endswith("+dirty"):
        raise LabkitError(f"{out} is a committed recording, but the working tree has uncommitted changes",
                          "commit (or stash) them first, so that the recording names the code that made it.")
    return commit


__all__ = ["Answers", "Comparison", "Job", "Outcome", "Progress", "clean_commit", "per_task", "provenance",
           "read_rows", "recorded_rows", "remaining", "run_jobs", "with_segment"]
