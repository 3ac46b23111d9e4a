"""Arms × splits × tasks × seeds of the comparison v2: run them, keep every run's log, record or replay the model.

What lands in the output folder, written run by run (an interrupted experiment keeps what finished):

- ``runs.jsonl`` — one :class:`~labkit.experiment.v2.arms.RunRecordV2` per line, with its split;
- ``logs/<arm>/<split>/<task>-s<seed>.jsonl`` — the run's hash-chained event log (the machine's
  runtime log with its ``model_asked`` facts, or the free loop's log), readable by ``labkit replay``;
- ``cassettes/<arm>/<split>/<task>.jsonl`` — every model call of the live run, which a replay serves
  (a call missing from them is an error, never a live call);
- ``experiment.json`` — the configuration, so ``--replay`` runs exactly the same jobs.

A recording of every task with a 1.5B model on two cores takes hours, so ``resume=True`` continues an
interrupted one: the configuration must be the one in ``experiment.json``, the runs already in
``runs.jsonl`` are kept and skipped, and a run that was cut off is run again from its start (its
cassette keeps the calls of the cut-off attempt; a replay serves the latest answer to a prompt, which
under greedy decoding is the same answer).

A model backend that fails during a run (a server that stays down, a broken connection) ends that
run as failed with termination ``backend error: ...``; the experiment goes on and the report counts
it. A cassette miss during a replay is not such a failure: it means the replay is not the recording,
and it stops the experiment.

Every HTTP retry a run needed is in its record (``http_retries``): counted from its log's
``model_asked`` events, or, for a run that failed on its backend, from the server client's count.
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from labkit.errors import LabkitError
from labkit.experiment.v2.arms import ARMS, ArmInputs, RunRecordV2, run_arm
from labkit.experiment.v2.choosers import Decoding
from labkit.experiment.v2.taskfile import TaskSet, TaskV2, load_task_set
from labkit.llm.backend import Backend
from labkit.llm.cassette import RecordingBackend, ReplayBackend
from labkit.llm.errors import BackendError, CassetteError, CassetteMiss
from labkit.runtime.tools import DraftStore
from labkit.store import write_jsonl

REPO = Path(__file__).resolve().parents[3]
TASKS_V2 = "data/tasks/v2"  # relative to the repository, so a recorded experiment.json names no machine path
SPLITS = ("dev", "test")
N_CTX = 4096  # the context a model is loaded with: the prompt-only prompt holds four worked episodes and grows


@dataclass
class ConfigV2:
    """What a v2 experiment runs; stored as ``experiment.json`` beside its results."""

    arms: list[str] = field(default_factory=lambda: list(ARMS))
    splits: list[str] = field(default_factory=lambda: list(SPLITS))
    seeds: list[int] = field(default_factory=lambda: [0])
    decoding: Decoding = field(default_factory=Decoding)
    task_ids: list[str] | None = None  # None: every task of each split
    per_family: int | None = None  # at most this many tasks per family and split (a smoke run)
    tasks_dir: str = TASKS_V2  # relative paths are read from the repository root

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ConfigV2:
        return cls(arms=list(data["arms"]), splits=list(data["splits"]), seeds=list(data["seeds"]),
                   decoding=Decoding(**data["decoding"]), task_ids=data.get("task_ids"),
                   per_family=data.get("per_family"), tasks_dir=str(data.get("tasks_dir", TASKS_V2)))

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

    def jobs(self, sets: dict[str, TaskSet]) -> list[tuple[str, str, TaskV2, int]]:
        """(arm, split, task, seed) in the order they run: split, seed, arm, task.

        Arm before task so that consecutive prompt-only calls share their declared prefix (the seed's
        worked episodes) and an in-process model evaluates it once per arm, not once per task.
        """
        picked: list[tuple[str, TaskV2]] = []
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
                raise LabkitError(f"no task(s) {missing} in the chosen split(s)", "check --task-ids and --splits.")
        splits = list(dict.fromkeys(split for split, _ in picked))
        return [(arm, split, task, seed) for split in splits for seed in self.seeds for arm in self.arms
                for task_split, task in picked if task_split == split]


def log_path(out: Path, arm: str, split: str, task_id: str, seed: int) -> Path:
    return out / "logs" / arm / split / f"{task_id}-s{seed}.jsonl"


def cassette_path(folder: Path, arm: str, split: str, task_id: str) -> Path:
    return folder / "cassettes" / arm / split / f"{task_id}.jsonl"


class Backends:
    """The backend of each (arm, split, task): a recording of ``live`` into ``out``, or a replay of ``replay``."""

    def __init__(self, *, live: Backend | None = None, out: Path | None = None, replay: Path | None = None) -> None:
        if (live is None) == (replay is None):
            raise LabkitError("give either a live backend or a folder to replay", "this is a bug in the caller.")
        self.live, self.out, self.replay = live, out, replay
        self._made: dict[tuple[str, str, str], Backend] = {}

    def describe(self) -> dict[str, Any]:
        if self.live is not None:
            return self.live.describe()
        return {"backend": "replay", "cassettes": str(self.replay / "cassettes")}  # type: ignore[operator]

    def http_retries(self) -> int:
        """HTTP requests the live server backend has re-sent so far (0 in process and in a replay).

        A run that fails on its backend has no log to count from; the difference of this number over
        the run counts its retries, those of the request that gave up included.
        """
        stats = getattr(self.live, "stats", None)
        return int(stats.get("retries", 0)) if isinstance(stats, dict) else 0

    def __call__(self, arm: str, split: str, task_id: str) -> Backend | None:
        if not ARMS[arm].uses_model:
            return None
        key = (arm, split, task_id)
        if key not in self._made:
            if self.replay is not None:
                path = cassette_path(self.replay, arm, split, task_id)
                if not path.exists():
                    raise LabkitError(f"no cassette for {arm} on {split}/{task_id}: {path} is missing",
                                      "replay only what was recorded (same arms, splits, tasks and seeds).")
                self._made[key] = ReplayBackend(path)
            else:  # an empty cassette too: a run that never needed the model replays as one
                path = cassette_path(self.out, arm, split, task_id)  # type: ignore[arg-type]
                path.parent.mkdir(parents=True, exist_ok=True)
                path.touch()
                self._made[key] = RecordingBackend(self.live, path)  # type: ignore[arg-type]
        return self._made[key]


def _failed_run(arm: str, split: str, task: TaskV2, seed: int, error: Exception, http_retries: int) -> RunRecordV2:
    message = getattr(error, "message", str(error))
    return RunRecordV2(arm=arm, task=task.id, family=task.family, seed=seed, passed=False,
                       failed_checks=["backend"], termination=f"backend error: {message[:120]}", llm_calls=0,
                       decisions=0, reasks=0, schema_invalid=0, violations=0, guard_rejections=0, tool_calls=0,
                       prompt_tokens=0, completion_tokens=0, wall_s=0.0, http_retries=http_retries,
                       details=[message[:300]])


def finished_runs(config: ConfigV2, out: Path) -> list[tuple[str, RunRecordV2]]:
    """The runs an interrupted recording in ``out`` finished, if it ran ``config`` (else a clear error)."""
    path = out / "experiment.json"
    if not path.exists():
        raise LabkitError(f"nothing to resume in {out}: {path} is missing",
                          "start the recording without --resume (or point --out at the interrupted one).")
    recorded = json.loads(path.read_text(encoding="utf-8"))
    if recorded != config.to_dict():
        changed = sorted(k for k in set(recorded) | set(config.to_dict()) if recorded.get(k) != config.to_dict().get(k))
        raise LabkitError(f"{out} recorded another configuration ({', '.join(changed)} differ)",
                          "resume with the options the recording was started with (see its experiment.json), "
                          "or write a new recording to another --out.")
    return load_runs_v2(out / "runs.jsonl")


def _job_key(split: str, arm: str, task: str, seed: int) -> tuple[str, str, str, int]:
    return split, arm, task, seed


def remaining_jobs(config: ConfigV2, kept: list[tuple[str, RunRecordV2]]) -> list[tuple[str, str, Any, int]]:
    """The jobs of ``config`` (arm, split, task, seed) that the ``kept`` runs do not already answer, in job order."""
    finished = {_job_key(split, r.arm, r.task, r.seed) for split, r in kept}
    return [job for job in config.jobs(config.task_sets())
            if _job_key(job[1], job[0], job[2].id, job[3]) not in finished]


def run_experiment_v2(config: ConfigV2, backends: Backends, out: Path, *, resume: bool = False,
                      progress: Callable[[str], None] | None = None) -> list[tuple[str, RunRecordV2]]:
    """Run every job, appending each finished run to ``out/runs.jsonl`` and its log under ``out/logs``.

    With ``resume``, the runs ``out`` already holds are kept and only the others run (see the module's
    docstring); the result lists all of them, in job order.
    """
    config.check()
    examples = config.task_sets()["dev"].example_tasks()
    out.mkdir(parents=True, exist_ok=True)
    kept = finished_runs(config, out) if resume else []
    todo = remaining_jobs(config, kept)
    if progress is not None:
        with_model = sum(1 for arm, *_ in todo if ARMS[arm].uses_model)
        progress(f"{len(todo)} runs to do{f' ({len(kept)} already recorded)' if kept else ''}, "
                 f"{with_model} of them call the model "
                 f"(prompt-only runs make one call per step, machine runs one per decision plus re-asks)")
    if not resume and (out / "logs").exists():
        shutil.rmtree(out / "logs")
    (out / "experiment.json").write_text(json.dumps(config.to_dict(), indent=2) + "\n", encoding="utf-8")
    runs_path = out / "runs.jsonl"
    # the runs kept, rewritten whole: a line torn by the interruption must not precede the next one
    runs_path.write_text("".join(json.dumps({"split": split, **r.to_dict()}, ensure_ascii=False) + "\n"
                                 for split, r in kept), encoding="utf-8")
    drafts_path = out / "drafts.sqlite"
    for old in out.glob("drafts.sqlite*"):  # a cut-off run's drafts must not reach its rerun
        old.unlink()
    done: list[tuple[str, RunRecordV2]] = []
    for n, (arm, split, task, seed) in enumerate(todo, start=1):
        store = DraftStore(drafts_path, f"{arm}/{split}/{task.id}/{seed}")
        retries_before = backends.http_retries()
        try:
            inputs = ArmInputs(task, seed, backends(arm, split, task.id), examples, config.decoding)
            record, events = run_arm(ARMS[arm], inputs, store)
            write_jsonl(log_path(out, arm, split, task.id, seed), events)
        except (CassetteMiss, CassetteError):
            raise
        except BackendError as exc:  # the model's backend failed: this run failed, the experiment goes on
            record = _failed_run(arm, split, task, seed, exc, backends.http_retries() - retries_before)
        finally:
            store.close()
        with runs_path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps({"split": split, **record.to_dict()}, ensure_ascii=False) + "\n")
        done.append((split, record))
        if progress is not None:
            progress(f"[{n}/{len(todo)}] {arm} {split}/{task.id} s{seed}: "
                     f"{'pass' if record.passed else 'fail'} ({record.termination})")
    by_job = {_job_key(split, r.arm, r.task, r.seed): (split, r) for split, r in [*kept, *done]}
    return [by_job[_job_key(j[1], j[0], j[2].id, j[3])] for j in config.jobs(config.task_sets())]


def load_runs_v2(path: Path) -> list[tuple[str, RunRecordV2]]:
    """The finished runs of a ``runs.jsonl`` (a torn last line is skipped)."""
    runs = []
    if not path.exists():
        return runs
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            data = json.loads(line)
            split = data.pop("split")
            runs.append((split, RunRecordV2(**data)))
        except (ValueError, TypeError, KeyError):
            print(f"labkit: skipped an unreadable line of {path}", file=sys.stderr)
    return runs


def prepare_replay_v2(folder: Path) -> ConfigV2:
    """The configuration a recorded v2 experiment in ``folder`` ran (its model arms need ``cassettes/``)."""
    path = folder / "experiment.json"
    if not path.exists():
        raise LabkitError(f"{folder} is not a recorded v2 experiment ({path} is missing)",
                          "replay a folder written by `labkit experiment`.")
    try:
        config = ConfigV2.from_dict(json.loads(path.read_text(encoding="utf-8")))
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        raise LabkitError(f"{path} is damaged ({type(exc).__name__}: {exc})", "restore it from git.") from None
    if any(ARMS[a].uses_model for a in config.arms if a in ARMS) and not (folder / "cassettes").exists():
        raise LabkitError(f"{folder} has model arms but no cassettes/ folder", "replay a complete recording.")
    return config


__all__ = ["Backends", "ConfigV2", "finished_runs", "load_runs_v2", "log_path", "prepare_replay_v2", "remaining_jobs",
           "run_experiment_v2"]
