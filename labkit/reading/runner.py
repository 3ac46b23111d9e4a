"""Arms × splits × tasks × seeds, declared for the one runner (:mod:`labkit.compare.runs`): :class:`ReadingConfig`,
the jobs, where their files go and one run (:class:`ReadingComparison`). A failing backend ends its run as
``backend error: ...``; a cassette miss in replay stops it."""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from labkit.compare.runs import Answers, Comparison, Job, Outcome, recorded_rows, remaining, run_jobs
from labkit.core.errors import LabkitError
from labkit.llm.backend import Backend
from labkit.llm.errors import BackendError
from labkit.reading.arms import ARMS, ArmInputs, ReadingRun, run_arm
from labkit.reading.choosers import Decoding
from labkit.reading.taskfile import ReadingTask, TaskSet, load_task_set
from labkit.runtime.tools import DraftStore

REPO = Path(__file__).resolve().parents[2]
READING_TASKS = "data/tasks/v2"  # relative to the repository, so a recorded experiment.json names no machine path
SPLITS = ("dev", "test")
N_CTX = 4096  # the context a model is loaded with: the prompt-only prompt holds four worked episodes and grows


@dataclass
class ReadingConfig:
    """What a reading comparison runs; stored as ``experiment.json`` beside its results."""

    arms: list[str] = field(default_factory=lambda: list(ARMS))
    splits: list[str] = field(default_factory=lambda: list(SPLITS))
    seeds: list[int] = field(default_factory=lambda: [0])
    decoding: Decoding = field(default_factory=Decoding)
    task_ids: list[str] | None = None  # None: every task of each split
    per_family: int | None = None  # at most this many tasks per family and split (a smoke run)
    tasks_dir: str = READING_TASKS  # relative paths are read from the repository root

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ReadingConfig:
        return cls(arms=list(data["arms"]), splits=list(data["splits"]), seeds=list(data["seeds"]),
                   decoding=Decoding(**data["decoding"]), task_ids=data.get("task_ids"),
                   per_family=data.get("per_family"), tasks_dir=str(data.get("tasks_dir", READING_TASKS)))

    def tasks_folder(self) -> Path:
        folder = Path(self.tasks_dir)
        return folder if folder.is_absolute() else REPO / folder

    def check(self) -> None:
        unknown = [a for a in self.arms if a not in ARMS]
        if unknown:
            raise LabkitError(f"unknown arm(s) {unknown}", f"use some of: {', '.join(ARMS)}.")
        bad = [s for s in self.splits if s not in SPLITS]
        if bad or not self.splits:
            raise LabkitError(f"unknown split(s) {bad or '(none)'}", "use dev, test or dev,test.")
        if not self.seeds or min(self.seeds) < 0:
            raise LabkitError(f"seeds must be one or more numbers >= 0, got {self.seeds}", "use --seeds N.")
        if self.per_family is not None and self.per_family < 1:
            raise LabkitError(f"--per-family must be at least 1, got {self.per_family}", "use 1 or more.")

    def task_sets(self) -> dict[str, TaskSet]:
        return {split: load_task_set(self.tasks_folder() / f"{split}.json") for split in SPLITS}

    def jobs(self, sets: dict[str, TaskSet]) -> list[tuple[str, str, ReadingTask, int]]:
        """(arm, split, task, seed) in run order: split, seed, arm, task (prompt-only calls share a prefix)."""
        picked: list[tuple[str, ReadingTask]] = []
        for split in self.splits:
            seen: dict[str, int] = {}
            for task in sets[split].tasks:
                if self.task_ids is not None and task.id not in self.task_ids:
                    continue
                seen[task.family] = seen.get(task.family, 0) + 1
                if self.per_family is None or seen[task.family] <= self.per_family:
                    picked.append((split, task))
        if self.task_ids is not None:
            found = {t.id for _, t in picked}
            missing = [t for t in self.task_ids if t not in found]
            if missing:
                raise LabkitError(f"no task(s) {missing} in the chosen split(s)", "check --only and --split.")
        splits = list(dict.fromkeys(split for split, _ in picked))
        return [(arm, split, task, seed) for split in splits for seed in self.seeds for arm in self.arms
                for task_split, task in picked if task_split == split]


def log_path(out: Path, arm: str, split: str, task_id: str, seed: int) -> Path:
    return out / "logs" / arm / split / f"{task_id}-s{seed}.jsonl"


def cassette_path(folder: Path, arm: str, split: str, task_id: str) -> Path:
    return folder / "cassettes" / arm / split / f"{task_id}.jsonl"


# The name notebook 06 and the tests use for where the model's answers come from.
Backends = Answers


def _failed_run(arm: str, split: str, task: ReadingTask, seed: int, error: Exception, http_retries: int) -> ReadingRun:
    message = getattr(error, "message", str(error))
    return ReadingRun(arm=arm, task=task.id, family=task.family, seed=seed, passed=False,
                       failed_checks=["backend"], termination=f"backend error: {message[:120]}", llm_calls=0,
                       decisions=0, reasks=0, schema_invalid=0, violations=0, guard_rejections=0, tool_calls=0,
                       prompt_tokens=0, completion_tokens=0, wall_s=0.0, http_retries=http_retries,
                       details=[message[:300]])


class ReadingComparison(Comparison):
    """The reading comparison as :mod:`labkit.compare.runs` reads it: its jobs, cassettes, logs, one run of an arm."""

    def __init__(self, settings: ReadingConfig) -> None:
        settings.check()
        self.settings = settings
        sets = settings.task_sets()
        self.examples = sets["dev"].example_tasks()
        self._jobs = settings.jobs(sets)
        self._tasks = {(split, task.id): task for _, split, task, _ in self._jobs}
        self._opening = threading.Lock()  # two runs creating the draft store's tables at once would clash

    def config(self) -> dict[str, Any]:
        return self.settings.to_dict()

    def jobs(self) -> list[Job]:
        return [Job(arm, task.id, seed, split, ARMS[arm].uses_model) for arm, split, task, seed in self._jobs]

    def row_job(self, row: dict[str, Any]) -> Job:
        arm = ARMS.get(row["arm"])
        return Job(row["arm"], row["task"], row["seed"], row["split"], arm is not None and arm.uses_model)

    def cassette(self, folder: Path, job: Job) -> Path:
        return cassette_path(folder, job.arm, job.split, job.task)

    def log(self, folder: Path, job: Job) -> Path:
        return log_path(folder, job.arm, job.split, job.task, job.seed)

    def run(self, job: Job, backend: Backend | None, folder: Path) -> Outcome:
        task = self._tasks[(job.split, job.task)]
        with self._opening:
            store = DraftStore(folder / "drafts.sqlite", f"{job.arm}/{job.split}/{job.task}/{job.seed}")
        try:
            inputs = ArmInputs(task, job.seed, backend, self.examples, self.settings.decoding)
            record, events = run_arm(ARMS[job.arm], inputs, store)
        finally:
            store.close()
        return Outcome({"split": job.split, **record.to_dict()}, record.passed, record.termination, events)

    def failed(self, job: Job, error: BackendError, http_retries: int) -> Outcome:
        record = _failed_run(job.arm, job.split, self._tasks[(job.split, job.task)], job.seed, error, http_retries)
        return Outcome({"split": job.split, **record.to_dict()}, False, record.termination)


def _as_runs(rows: list[dict[str, Any]]) -> list[tuple[str, ReadingRun]]:
    return [(row["split"], ReadingRun(**{k: v for k, v in row.items() if k != "split"})) for row in rows]


def finished_runs(config: ReadingConfig, out: Path) -> list[tuple[str, ReadingRun]]:
    """The runs an interrupted recording in ``out`` finished, if it ran ``config`` (else a clear error)."""
    return _as_runs(recorded_rows(ReadingComparison(config), out))


def remaining_jobs(config: ReadingConfig, kept: list[tuple[str, ReadingRun]]) -> list[tuple[str, str, Any, int]]:
    """The jobs of ``config`` (arm, split, task, seed) that the ``kept`` runs do not already answer, in job order."""
    comparison = ReadingComparison(config)
    todo = {job.key() for job in remaining(comparison, [{"split": split, **r.to_dict()} for split, r in kept])}
    return [(arm, split, task, seed) for arm, split, task, seed in config.jobs(config.task_sets())
            if (split, arm, task.id, seed) in todo]


def run_reading(config: ReadingConfig, backends: Answers, out: Path, *, resume: bool = False,
                      progress: Callable[[str], None] | None = None) -> list[tuple[str, ReadingRun]]:
    """Run every job with :func:`labkit.compare.runs.run_jobs` into ``out``; ``resume`` keeps finished runs.
    ``backends`` may be a :class:`~labkit.llm.pool.ServerPool`."""
    comparison = ReadingComparison(config)
    if progress is not None:
        kept = recorded_rows(comparison, out) if resume else []
        todo = remaining(comparison, kept)
        with_model = sum(1 for job in todo if job.uses_model)
        spread = f", {backends.parallel()} at a time" if backends.parallel() > 1 else ""
        progress(f"{len(todo)} runs to do{f' ({len(kept)} already recorded)' if kept else ''}, "
                 f"{with_model} of them call the model{spread} "
                 f"(prompt-only runs make one call per step, machine runs one per decision plus re-asks)")
    for old in out.glob("drafts.sqlite*"):  # a cut-off run's drafts must not reach its rerun
        old.unlink()
    return _as_runs(run_jobs(comparison, backends, out, resume=resume, progress=progress))


def load_reading_runs(path: Path) -> list[tuple[str, ReadingRun]]:
    """The finished runs of a ``runs.jsonl`` (a torn last line is skipped)."""
    runs = []
    if not path.exists():
        return runs
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            data = json.loads(line)
            split = data.pop("split")
            runs.append((split, ReadingRun(**data)))
        except (ValueError, TypeError, KeyError):
            print(f"labkit: skipped an unreadable line of {path}", file=sys.stderr)
    return runs


def prepare_reading_replay(folder: Path) -> ReadingConfig:
    """The configuration a recorded reading comparison in ``folder`` ran (its model arms need ``cassettes/``)."""
    path = folder / "experiment.json"
    if not path.exists():
        raise LabkitError(f"{folder} is not a recorded reading comparison ({path} is missing)",
                          "replay a folder written by `labkit compare reading`.")
    try:
        config = ReadingConfig.from_dict(json.loads(path.read_text(encoding="utf-8")))
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        raise LabkitError(f"{path} is damaged ({type(exc).__name__}: {exc})", "restore it from git.") from None
    if any(ARMS[a].uses_model for a in config.arms if a in ARMS) and not (folder / "cassettes").exists():
        raise LabkitError(f"{folder} has model arms but no cassettes/ folder", "replay a complete recording.")
    return config


__all__ = ["Backends", "ReadingComparison", "ReadingConfig", "finished_runs", "load_reading_runs", "log_path",
           "prepare_reading_replay", "remaining_jobs", "run_reading"]
