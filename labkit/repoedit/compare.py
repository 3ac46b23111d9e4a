"""The code comparison: arms × tasks, each run in a fresh copy, judged by the one verifier.

What is the comparison's own lives here — its configuration, tasks, arms, verifier and rows
(:class:`CodeComparison`); resume, cassettes, progress and spreading runs over servers are the one
runner's (:mod:`labkit.compare.runs`). What lands in the output folder, written run by run (an interrupted
recording loses nothing):

- ``compare.json`` — the configuration; a folder recorded with another one is refused, so a resumed
  recording can only continue the same experiment;
- ``runs.jsonl`` — one :class:`RunRow` per (arm, task), appended as it finishes, in job order once the
  runner ends; a rerun skips the rows already there (resume);
- ``cassettes/<arm>.jsonl`` — every model call of that arm, which ``--replay`` serves (a call missing
  from it stops the replay: it is then not the recording);
- ``logs/<arm>/<task>.jsonl`` — the machine arms' hash-chained event logs (``labkit replay`` reads them);
- ``transcripts/<arm>/<task>.txt`` — the prompt-only prompt and answer, the free loop's whole transcript;
- ``provenance.jsonl`` — one line per session that wrote to the folder (commit, model, versions, machine).

Jobs run task by task (every arm on a task, then the next task), so a partial recording has complete
pairs of arms on the tasks it reached, which is what the paired tests need. A run whose backend fails
(a server that stays down) stops the recording: the verifier cannot score a run the model never finished.
"""

from __future__ import annotations

import hashlib
import json
import platform
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import yaml

from labkit.compare.runs import Answers, Comparison, Job, Outcome, remaining, run_jobs
from labkit.core.errors import LabkitError
from labkit.core.provenance import Stretch, read_provenance
from labkit.llm.backend import Backend
from labkit.repoedit.arm_io import ArmInputs
from labkit.repoedit.arms import ARMS, DEFAULT_ARMS, Arm, arm
from labkit.repoedit.arms import arm as arm_named
from labkit.repoedit.budget import BudgetedBackend
from labkit.repoedit.history import features_then, recorded_path, today
from labkit.repoedit.machine import Limits
from labkit.repoedit.sources import resolve_task_file
from labkit.repoedit.tasks import RepoTask, load_tasks, project_dir
from labkit.repoedit.verify import Baseline, measure_baseline, verify

REPO = Path(__file__).resolve().parents[2]
SPLITS = ("test", "dev", "all")
REPLAY_IGNORED = ("wall_s", "model_s")
"""The times, which a replay does not reproduce: wall time is this run's, and a prompt asked twice (a greedy
model answers it the same) is served with the seconds of its latest recording."""


@dataclass
class CompareConfig:
    """What a comparison runs; stored as ``compare.json``. ``tasks_file`` is relative to the repository."""

    model: str
    arms: list[str] = field(default_factory=lambda: list(DEFAULT_ARMS))
    split: str = "test"
    call_budget: int = 6
    max_tokens: int = 400
    limits: dict[str, Any] = field(default_factory=lambda: asdict(Limits()))
    tasks_file: str = "data/repos/tasks.yaml"
    threads: int | None = None
    as_recorded: dict[str, frozenset[str]] = field(default_factory=dict)  # arm -> the features it ran with
    task_ids: list[str] = field(default_factory=list)  # the split's tasks when recorded (a report needs no build)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        del data["as_recorded"]  # read from the arm names (history), never stored
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CompareConfig:
        """A stored configuration; arm names it was recorded under are read as today's (:mod:`.history`), each
        with the features it ran with where those are not today's."""
        known = {f.name for f in fields(cls)} - {"as_recorded"}
        config = cls(**{k: v for k, v in data.items() if k in known})
        config.as_recorded = {today(a): f for a in config.arms if (f := features_then(a)) is not None}
        config.arms = [today(a) for a in config.arms]
        return config

    def arm(self, name: str) -> Arm:
        """The arm ``name`` as this recording runs it: today's, or with the features it was recorded with."""
        spec = arm(name)
        return replace(spec, features=self.as_recorded[name]) if name in self.as_recorded else spec

    def check(self) -> None:
        if not self.arms:
            raise LabkitError("no arm given", f"use some of: {', '.join(ARMS)}.")
        for name in self.arms:
            arm(name)
        if self.split not in SPLITS:
            raise LabkitError(f"unknown split {self.split!r}", f"use one of: {', '.join(SPLITS)}.")
        if self.call_budget < 1 or self.max_tokens < 16:
            raise LabkitError(f"call budget {self.call_budget} / max tokens {self.max_tokens} are too small",
                              "give every run at least one call (--call-budget 1) and 16 tokens.")

    def tasks_path(self) -> Path:
        """The task file: a path (relative to the repository) or a benchmark source such as ``humaneval:fix``,
        built from its package into the cache on first use."""
        path = resolve_task_file(self.tasks_file)
        return path if path.is_absolute() else REPO / path

    def tasks(self) -> dict[str, RepoTask]:
        tasks = load_tasks(self.tasks_path())
        return {t: task for t, task in tasks.items() if self.split in ("all", task.split)}

    def jobs(self) -> list[tuple[RepoTask, str]]:
        """(task, arm) in the order they run: task by task, every arm on each."""
        return [(task, arm) for task in self.tasks().values() for arm in self.arms]

    def planned(self) -> int:
        """How many runs the comparison plans, from the task ids it recorded where it holds them (a benchmark's
        tasks are then not built only to be counted)."""
        return len(self.task_ids) * len(self.arms) if self.task_ids else len(self.jobs())

    def the_limits(self) -> Limits:
        return Limits(**self.limits)


@dataclass(frozen=True)
class RunRow:
    """One (arm, task) run as the report counts it; every field but the times is reproduced by a replay."""

    arm: str
    task: str
    split: str
    fixed: bool
    outcome: str  # the verifier's pytest outcome on the final tree
    passed: int
    failed: list[str]
    broken_left: list[str]
    tests_changed: list[str]
    outside_written: list[str]
    status: str  # the arm's own last word
    test_runs: int  # pytest runs the arm made itself
    llm_calls: int
    prompt_tokens: int
    completion_tokens: int
    model_s: float  # seconds the model took (a replay serves recorded times, the latest for a repeated prompt)
    edits: int
    refused: int
    digest: str  # the final tree's digest: a replay must leave the very same tree
    wall_s: float
    hidden_passed: bool | None = None  # a benchmark's own tests on the final tree (None: the task has none)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        if data["hidden_passed"] is None:  # the kit's own tasks: rows read as they were before benchmarks
            del data["hidden_passed"]
        return data

    def key(self) -> tuple[str, str]:
        return (self.arm, self.task)



def row_of(data: dict[str, Any]) -> RunRow:
    """A stored row, its arm read as today's name (:mod:`labkit.repoedit.history`)."""
    return RunRow(**{**data, "arm": today(data["arm"])})


def load_rows(path: Path) -> list[RunRow]:
    """The rows of a ``runs.jsonl`` (a torn last line, from a killed run, is skipped with a note)."""
    rows: list[RunRow] = []
    if not path.exists():
        return rows
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        try:
            rows.append(row_of(json.loads(line)))
        except (ValueError, TypeError) as exc:
            print(f"labkit: skipped an unreadable line of {path} ({type(exc).__name__})", file=sys.stderr)
    return rows


def drop_torn_tail(path: Path) -> None:
    """Set aside an unfinished last line (a run killed while writing it) so the next row starts a line of its own."""
    if not path.exists():
        return
    data = path.read_bytes()
    if not data or data.endswith(b"\n"):
        return
    keep = data.rfind(b"\n") + 1
    with path.with_name(path.name + ".torn").open("ab") as aside:
        aside.write(data[keep:] + b"\n")
    with path.open("r+b") as handle:
        handle.truncate(keep)


def _check_folder(out: Path) -> bool:
    """Whether ``out`` holds a comparison to continue; a folder with other things in it is refused."""
    if (out / "compare.json").exists():
        return True
    if out.exists() and any(p.name not in ("workspaces", "provenance.jsonl") for p in out.iterdir()):
        # what a start killed before compare.json leaves: its scratch and its provenance line
        raise LabkitError(f"{out} is not empty and holds no compare.json", "choose a new or empty --out folder.")
    return False


def sha256_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, check=False)


def _blob_sha(data: bytes) -> str:
    """The git blob id of ``data`` (what ``git hash-object`` prints), to compare a file with a commit's."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


_NOT_PROJECT = ("__pycache__", ".pytest_cache")


def _folder_at(repo: Path, commit: str, folder: str) -> dict[str, str]:
    """Blob ids of the files under ``folder`` (relative to the repository) at ``commit``, by relative path."""
    listed = _git(repo, "ls-tree", "-r", "--full-tree", commit, "--", folder + "/")
    found: dict[str, str] = {}
    for line in listed.stdout.decode("utf-8").splitlines():
        meta, path = line.split("\t", 1)
        found[path[len(folder) + 1:]] = meta.split()[2]
    return found


def _folder_now(root: Path) -> dict[str, str]:
    if not root.is_dir():
        return {}
    return {p.relative_to(root).as_posix(): _blob_sha(p.read_bytes()) for p in sorted(root.rglob("*"))
            if p.is_file() and not any(part in _NOT_PROJECT for part in p.relative_to(root).parts)
            and p.suffix != ".pyc"}


def tasks_unchanged_since(commit: str, split: str, *, repo: Path = REPO,
                          tasks_file: str = "data/repos/tasks.yaml") -> list[str]:
    """How the tasks of ``split`` (``all``: every task) differ between ``commit`` and today's tree; [] if not at all.

    A task is the same when its entry (every field, parsed) and every file of its project folder (and its
    hidden grader, if any) are the same; a task of the split that is new or gone is a difference too. So a
    recording made at ``commit`` stays valid exactly as long as this is empty, whatever else the task file
    gained (tasks of another split, comments)."""
    from labkit.repoedit.tasks import TaskFile

    shown = _git(repo, "show", f"{commit}:{tasks_file}")
    if shown.returncode != 0:
        return [f"{tasks_file} cannot be read at {commit}: {shown.stderr.decode('utf-8', 'replace').strip()}"]
    try:
        then = {t.id: t for t in TaskFile.model_validate(yaml.safe_load(shown.stdout)).tasks}
    except (yaml.YAMLError, ValueError) as exc:
        return [f"{tasks_file} at {commit} does not parse: {type(exc).__name__}"]
    now = load_tasks(repo / tasks_file)
    wanted = (lambda t: True) if split == "all" else (lambda t: t.split == split)
    then = {i: t for i, t in then.items() if wanted(t)}
    now_split = {i: t for i, t in now.items() if wanted(t)}
    problems = [f"task {i!r}: gone from split {split!r} since {commit[:12]}" for i in then if i not in now_split]
    problems += [f"task {i!r}: new in split {split!r} since {commit[:12]}" for i in now_split if i not in then]
    base = Path(tasks_file).parent.as_posix()
    for task_id in (i for i in then if i in now_split):
        old, new = then[task_id].model_dump(), now_split[task_id].model_dump()
        problems += [f"task {task_id!r}: {name} changed since {commit[:12]}" for name in old if old[name] != new[name]]
        folder = f"{base}/{then[task_id].project}"
        before, after = _folder_at(repo, commit, folder), _folder_now(repo / folder)
        problems += [f"task {task_id!r}: {folder}/{path} changed since {commit[:12]}"
                     for path in sorted(before.keys() | after.keys()) if before.get(path) != after.get(path)]
        if then[task_id].hidden:
            hidden = f"{base}/{then[task_id].hidden}"
            at = _git(repo, "rev-parse", f"{commit}:{hidden}").stdout.decode().strip()
            current = repo / hidden
            if not current.is_file() or at != _blob_sha(current.read_bytes()):
                problems.append(f"task {task_id!r}: hidden grader {hidden} changed since {commit[:12]}")
    return problems


def recording_tasks_differences(folder: Path, *, repo: Path = REPO) -> list[str]:
    """Why the task file a recording in ``folder`` names no longer holds the tasks it ran; [] if it does.

    Every stretch of its provenance must name the sha256 of the task file as it was at its own commit, and
    every task of the recorded split must be unchanged since then
    (:func:`tasks_unchanged_since`). A task file outside the repository (a benchmark built into the cache)
    has no history: each task a stretch names must then have today's digest (:meth:`RepoTask.digest`). A
    stretch that names no digests (recorded before they were kept) passes with today's file's sha256, or else
    where each of its tasks' requirement is in the recorded prompts (:func:`unprompted_requirements`)."""
    config = read_config(folder)
    path = config.tasks_path()
    try:
        relative = path.resolve().relative_to(repo.resolve()).as_posix()
    except ValueError:
        relative = None
    stretches = read_provenance(folder)
    if relative is None:
        return _built_tasks_differences(folder, stretches, path)
    problems: list[str] = []
    seen: set[str] = set()
    for stretch in stretches:
        # a recording from a dirty tree (never one under data/) is checked against the commit it started from
        commit, at = stretch.commit.removesuffix("+dirty"), stretch.started_utc
        recorded = stretch.facts.get("tasks_sha256")
        if commit in seen:
            continue
        seen.add(commit)
        shown = _git(repo, "show", f"{commit}:{relative}")
        if shown.returncode != 0:
            problems.append(f"session at {at}: {relative} cannot be read at commit {commit!r}")
            continue
        if recorded != hashlib.sha256(shown.stdout).hexdigest():
            problems.append(f"session at {at}: tasks_sha256 is not that of {relative} at {commit[:12]}")
        problems += tasks_unchanged_since(commit, config.split, repo=repo, tasks_file=relative)
    return problems


def _built_tasks_differences(folder: Path, stretches: list[Stretch], path: Path) -> list[str]:
    today_tasks = load_tasks(path)
    problems: list[str] = []
    named: set[str] = set()
    undigested = False
    for stretch in stretches:
        digests = stretch.facts.get("task_digests")
        if digests is None:
            undigested = undigested or stretch.facts.get("tasks_sha256") != sha256_file(path)
            continue
        named |= set(digests)
        problems += [f"session at {stretch.started_utc}: task {task_id!r} was built otherwise than here"
                     for task_id, digest in digests.items()
                     if task_id not in today_tasks or today_tasks[task_id].digest() != digest]
    if undigested:
        older = {r.task for r in load_rows(folder / "runs.jsonl")} - named
        problems += [f"task {task_id!r}: its requirement here is in none of the recorded prompts"
                     for task_id in unprompted_requirements(folder, {t: today_tasks[t] for t in older
                                                                     if t in today_tasks})]
        problems += [f"task {task_id!r} is not in {path}" for task_id in sorted(older - set(today_tasks))]
    return problems


def unprompted_requirements(folder: Path, tasks: dict[str, RepoTask]) -> list[str]:
    """The ``tasks`` whose requirement is in none of the prompts the recording in ``folder`` holds: tasks its
    model was shown otherwise (from another build of them)."""
    prompts: list[str] = []
    for cassette in sorted((folder / "cassettes").glob("*.jsonl")):
        for line in cassette.read_text(encoding="utf-8").splitlines():
            entry = json.loads(line)
            if entry.get("type") == "call":
                request = entry["request"]
                prompts.append(str(request.get("prompt") or "") +
                               "\n".join(str(m.get("content", "")) for m in request.get("messages") or []))
    return [t for t, task in tasks.items() if not any(task.requirement in prompt for prompt in prompts)]


def provenance(config: CompareConfig, out: Path, describe: dict[str, Any] | None, mode: str,
               tasks: Iterable[RepoTask] = ()) -> dict[str, Any]:
    """Where this stretch's rows come from (:func:`labkit.compare.runs.provenance`) with the model, the task
    file's hash, the digest of each task it runs (:meth:`RepoTask.digest`), the threads and the pytest that
    judged them."""
    import pytest

    from labkit.compare.runs import provenance as common

    info = {k: v for k, v in (describe or {}).items() if k != "recording_to"}
    return common(info, mode, out, model=config.model, tasks_sha256=sha256_file(config.tasks_path()),
                  task_digests={task.id: task.digest() for task in tasks},
                  threads=config.threads, python=platform.python_version(), pytest=pytest.__version__)


def log_path(out: Path, arm: str, task: str) -> Path:
    return out / "logs" / arm / f"{task}.jsonl"


def transcript_path(out: Path, arm: str, task: str) -> Path:
    return out / "transcripts" / arm / f"{task}.txt"


def cassette_path(folder: Path, arm: str) -> Path:
    """The arm's cassette in ``folder``, under the name it was recorded with (today's for a new one)."""
    return recorded_path(folder, "cassettes", arm)


def run_one(task: RepoTask, name: str, config: CompareConfig, baseline: Baseline, backend: Backend | None,
            out: Path, *, clock: Callable[[], float] = time.perf_counter) -> RunRow:
    """Run one arm on one task in a fresh copy, judge the final tree, and write its log or transcript."""
    spec = config.arm(name)
    budgeted = BudgetedBackend(backend, config.call_budget) if spec.uses_model and backend is not None else None
    if spec.uses_model and budgeted is None:
        raise LabkitError(f"arm {name} needs a model backend", "this is a bug in the caller.")
    for stale in (log_path(out, name, task.id), transcript_path(out, name, task.id)):
        stale.unlink(missing_ok=True)  # a run interrupted before its row was written starts again
    inputs = ArmInputs(task, project_dir(task, config.tasks_path().parent), baseline, budgeted,
                       config.the_limits(), log_path(out, name, task.id) if spec.machine else None,
                       config.max_tokens)
    start = clock()
    end = spec.run(inputs)
    try:
        hidden = config.tasks_path().parent / task.hidden if task.hidden else None
        verdict = verify(end.workspace, baseline, hidden=hidden)
    finally:
        end.workspace.keep = False
        end.workspace.close()
    wall = clock() - start
    if budgeted is not None and budgeted.miss is not None:
        raise budgeted.miss
    if end.transcript:
        path = transcript_path(out, name, task.id)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(end.transcript + "\n", encoding="utf-8")
    meter = budgeted.meter if budgeted is not None else None
    return RunRow(arm=name, task=task.id, split=task.split, fixed=verdict.fixed, outcome=verdict.outcome,
                  passed=verdict.passed, failed=list(verdict.failed), broken_left=list(verdict.broken_left),
                  tests_changed=list(verdict.tests_changed), outside_written=list(verdict.outside_written),
                  status=end.status, test_runs=end.test_runs, llm_calls=len(meter.calls) if meter else 0,
                  prompt_tokens=meter.prompt_tokens if meter else 0,
                  completion_tokens=meter.completion_tokens if meter else 0,
                  model_s=round(meter.seconds, 3) if meter else 0.0, edits=end.edits, refused=end.refused,
                  digest=verdict.digest, wall_s=round(wall, 3), hidden_passed=verdict.hidden_passed)


class CodeComparison(Comparison):
    """The code comparison as :mod:`labkit.compare.runs` reads it: (arm, task) jobs, one cassette per arm, one run."""

    config_file = "compare.json"

    def __init__(self, settings: CompareConfig, only: Iterable[tuple[str, str]] | None = None,
                 clock: Callable[[], float] = time.perf_counter) -> None:
        settings.check()
        self.settings, self.clock = settings, clock
        wanted = None if only is None else set(only)
        jobs = settings.jobs()
        settings.task_ids = list(dict.fromkeys(task.id for task, _ in jobs))
        self._jobs = [(task, arm) for task, arm in jobs if wanted is None or (arm, task.id) in wanted]
        self._tasks = {task.id: task for task, _ in self._jobs}
        self._baselines: dict[str, Baseline] = {}
        self._measuring = threading.Lock()

    def config(self) -> dict[str, Any]:
        return self.settings.to_dict()

    def tasks_of(self, jobs: Iterable[Job]) -> list[RepoTask]:
        """The tasks ``jobs`` run, each once, in their order."""
        return [self._tasks[t] for t in dict.fromkeys(job.task for job in jobs)]

    def accepts(self, recorded: dict[str, Any]) -> bool:
        """The same configuration, or one with more arms (the stored arms all kept): an ablation recorded after
        the headline arms lands in the same table, paired on the same tasks."""
        config = self.config()
        recorded = {**recorded, "arms": [today(a) for a in recorded.get("arms", [])]}
        if "task_ids" not in recorded:  # recorded before the ids were stored
            config = {k: v for k, v in config.items() if k != "task_ids"}
        return recorded == config or ({**recorded, "arms": config["arms"]} == config
                                      and set(recorded.get("arms", [])) <= set(config["arms"]))

    def jobs(self) -> list[Job]:
        return [Job(arm, task.id, 0, task.split, arm_named(arm).uses_model) for task, arm in self._jobs]

    def row_job(self, row: dict[str, Any]) -> Job:
        name = today(row["arm"])
        return Job(name, row["task"], 0, row["split"], arm_named(name).uses_model)

    def cassette(self, folder: Path, job: Job) -> Path:
        return cassette_path(folder, job.arm)

    def baseline(self, task: RepoTask) -> Baseline:
        """The task's project as it is before any arm touches it, measured once (its tests run in a sandbox)."""
        with self._measuring:
            if task.id not in self._baselines:
                self._baselines[task.id] = measure_baseline(project_dir(task, self.settings.tasks_path().parent))
            return self._baselines[task.id]

    def run(self, job: Job, backend: Backend | None, folder: Path) -> Outcome:
        task = self._tasks[job.task]
        row = run_one(task, job.arm, self.settings, self.baseline(task), backend, folder, clock=self.clock)
        return Outcome(row.to_dict(), row.fixed, f"{'FIXED' if row.fixed else 'not fixed'}, broken "
                       f"{len(row.broken_left)}, tests run {row.test_runs}, calls {row.llm_calls}, "
                       f"{row.wall_s:.1f} s, {row.status}")


def run_compare(config: CompareConfig, answers: Answers, out: Path, *,
                only: Iterable[tuple[str, str]] | None = None, describe: dict[str, Any] | None = None,
                mode: str = "live", progress: Callable[[str], None] | None = None,
                clock: Callable[[], float] = time.perf_counter) -> list[RunRow]:
    """Run every job not yet in ``out/runs.jsonl`` (or only the (arm, task) keys in ``only``) with
    :func:`labkit.compare.runs.run_jobs`; return all rows. ``answers`` is a live model (or a pool of servers,
    over which the runs are spread) recorded to ``out/cassettes``, or the cassettes of a recording."""
    comparison = CodeComparison(config, only, clock)
    resume = _check_folder(out)
    runs = out / "runs.jsonl"
    drop_torn_tail(runs)
    kept = [row.to_dict() for row in load_rows(runs)] if resume else []
    todo = remaining(comparison, kept)
    out.mkdir(parents=True, exist_ok=True)
    with (out / "provenance.jsonl").open("a", encoding="utf-8") as handle:
        running = comparison.tasks_of(todo)
        handle.write(json.dumps({**provenance(config, out, describe, mode, running), "jobs_left": len(todo)},
                                sort_keys=True) + "\n")
    if progress is not None:
        jobs = len(comparison.jobs())
        progress(f"{jobs} run(s), {jobs - len(todo)} already in {runs}, {len(todo)} to do")
    return [row_of(row) for row in run_jobs(comparison, answers, out, resume=resume, progress=progress)]


def read_config(folder: Path) -> CompareConfig:
    """The configuration a recorded comparison in ``folder`` ran."""
    path = folder / "compare.json"
    if not path.exists():
        raise LabkitError(f"{folder} is not a recorded code comparison ({path} is missing)",
                          "pass a folder written by `labkit compare code`.")
    try:
        return CompareConfig.from_dict(json.loads(path.read_text(encoding="utf-8")))
    except (json.JSONDecodeError, TypeError) as exc:
        raise LabkitError(f"{path} is damaged ({type(exc).__name__}: {exc})", "restore it from git.") from None


def replay_differences(recorded: list[RunRow], replayed: list[RunRow]) -> list[str]:
    """Every field (but the times) where a replayed row differs from its recording, one line each."""
    from labkit.compare.command import row_differences

    return row_differences([r.to_dict() for r in recorded], [r.to_dict() for r in replayed],
                           key=lambda r: (r["arm"], r["task"]), ignored=REPLAY_IGNORED)


def replay_compare(folder: Path, out: Path, *, arms: Iterable[str] | None = None,
                   tasks: Iterable[str] | None = None, progress: Callable[[str], None] | None = None) -> list[str]:
    """Re-run every recorded row of ``folder`` (of ``arms`` and ``tasks`` only, if given) from its cassettes
    into ``out``; return the differences."""
    config = read_config(folder)
    arms, tasks = (set(arms) if arms is not None else None), (set(tasks) if tasks is not None else None)
    recorded = [r for r in load_rows(folder / "runs.jsonl")
                if (arms is None or r.arm in arms) and (tasks is None or r.task in tasks)]
    if not recorded:
        raise LabkitError(f"{folder / 'runs.jsonl'} holds no runs", "replay a folder with recorded runs.")
    replayed = run_compare(config, Answers(replay=folder), out, only=[r.key() for r in recorded],
                           describe={"backend": "replay", "cassettes": str(folder / "cassettes")}, mode="replay",
                           progress=progress)
    return replay_differences(recorded, replayed)


__all__ = ["CodeComparison", "CompareConfig", "RunRow", "load_rows", "read_config", "recording_tasks_differences",
           "replay_compare", "replay_differences", "run_compare", "run_one", "tasks_unchanged_since"]
